/* cmd_gpus.c — `ecocompute gpus`: the GPUs NVML sees, what they can measure, and their current
 * power, temperature and clocks. */
#include "cli.h"

#include "ecocompute/meter.h"

#include <math.h>
#include <string.h>

/* One property of a GPU: its machine key (JSON/CSV) and its label with unit (table). */
typedef struct {
    const char *key, *label;
} field;

static const field fields[] = {
    {"index", "NVML index"},
    {"name", "name"},
    {"uuid", "UUID"},
    {"pci_bus_id", "PCI bus id"},
    {"architecture", "architecture"},
    {"driver_version", "driver"},
    {"energy_counter", "energy counter"},
    {"power_instant", "instant power (field 186)"},
    {"power_average", "1 s average power (field 185)"},
    {"power_limit_w", "power limit, enforced (W)"},
    {"power_default_w", "power limit, default (W)"},
    {"power_min_w", "power limit, min (W)"},
    {"power_max_w", "power limit, max (W)"},
    {"max_sm_mhz", "max SM clock (MHz)"},
    {"max_mem_mhz", "max memory clock (MHz)"},
    {"persistence_mode", "persistence mode"},
    {"power_instant_w", "power now, instant (W)"},
    {"power_avg_w", "power now, 1 s average (W)"},
    {"temp_c", "temperature (°C)"},
    {"sm_mhz", "SM clock (MHz)"},
    {"mem_mhz", "memory clock (MHz)"},
    {"clock_event_reasons", "clock event reasons"},
};
enum { NFIELDS = sizeof fields / sizeof *fields };

static void yes_no(ec_table *t, int col, int v)
{
    ec_table_text(t, col, "%s", v ? "yes" : "no");
}

/* Writes property k of one GPU into column col of the current row. */
static void cell(ec_table *t, int col, int k, const ec_meter *m, const ec_gpu_info *g,
                 const ec_gpu_sample *s)
{
    unsigned v = s->valid;
    switch (k) {
    case 0:
        ec_table_number(t, col, "%.0f", g->index);
        break;
    case 1:
        ec_table_text(t, col, "%s", g->name);
        break;
    case 2:
        ec_table_text(t, col, "%s", g->uuid);
        break;
    case 3:
        ec_table_text(t, col, "%s", g->pci_bus_id);
        break;
    case 4:
        ec_table_text(t, col, "%s", ec_gpu_arch_name(g->arch));
        break;
    case 5:
        ec_table_text(t, col, "%s", ec_meter_driver_version(m));
        break;
    case 6:
        yes_no(t, col, g->has_energy_counter);
        break;
    case 7:
        yes_no(t, col, g->has_power_instant);
        break;
    case 8:
        yes_no(t, col, g->has_power_average);
        break;
    case 9:
        ec_table_number(t, col, "%.1f", g->power_limit_w);
        break;
    case 10:
        ec_table_number(t, col, "%.1f", g->power_default_w);
        break;
    case 11:
        ec_table_number(t, col, "%.1f", g->power_min_w);
        break;
    case 12:
        ec_table_number(t, col, "%.1f", g->power_max_w);
        break;
    case 13:
        ec_table_number(t, col, "%.0f", g->max_sm_mhz);
        break;
    case 14:
        ec_table_number(t, col, "%.0f", g->max_mem_mhz);
        break;
    case 15:
        if (g->persistence_mode >= 0) yes_no(t, col, g->persistence_mode);
        break;
    case 16:
        ec_table_number(t, col, "%.1f", v & EC_SAMPLE_POWER_INSTANT ? s->power_instant_w : NAN);
        break;
    case 17:
        ec_table_number(t, col, "%.1f", v & EC_SAMPLE_POWER_AVERAGE ? s->power_avg_w : NAN);
        break;
    case 18:
        ec_table_number(t, col, "%.0f", v & EC_SAMPLE_TEMP ? s->temp_c : NAN);
        break;
    case 19:
        ec_table_number(t, col, "%.0f", v & EC_SAMPLE_SM_CLOCK ? s->sm_mhz : NAN);
        break;
    case 20:
        ec_table_number(t, col, "%.0f", v & EC_SAMPLE_MEM_CLOCK ? s->mem_mhz : NAN);
        break;
    case 21:
        if (v & EC_SAMPLE_CLOCK_REASONS) ec_table_text(t, col, "0x%llx", s->clock_event_reasons);
        break;
    }
}

static void usage(void)
{
    printf("usage: ecocompute gpus [--format table|json|csv] [--json]\n\n"
           "Lists the NVIDIA GPUs NVML sees: identity (index, name, UUID, PCI bus id,\n"
           "architecture, driver), what each can measure (energy counter, instant and 1 s\n"
           "average power), power limits and maximum clocks, and current power, temperature\n"
           "and clocks. The table shows one column per GPU; JSON and CSV one record per GPU.\n\n"
           "  --format F   table (default), json or csv\n"
           "  --json       same as --format json\n\n"
           "Exits 1 with a message on stderr when there is no NVIDIA driver or no GPU (there is\n"
           "no data to print). ECOCOMPUTE_NVML_LIBRARY overrides the NVML library path.\n\n"
           "examples:\n  ecocompute gpus\n  ecocompute gpus --json\n");
}

int cmd_gpus(int argc, char **argv)
{
    ec_format fmt = EC_FORMAT_TABLE;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage();
            return EXIT_OK;
        } else if (!strcmp(argv[i], "--json")) {
            fmt = EC_FORMAT_JSON;
        } else if (!strcmp(argv[i], "--format")) {
            if (i + 1 >= argc) return cli_usage_error("gpus", "--format needs a value");
            if (cli_parse_format("gpus", argv[++i], &fmt) != 0) return EXIT_USAGE;
        } else {
            return cli_usage_error("gpus", "unknown option '%s'", argv[i]);
        }
    }
    ec_meter_options o;
    ec_meter_options_default(&o);
    ec_meter *m = ec_meter_open(&o);
    if (!m) return cli_fail("gpus", "%s", ec_last_error());
    int n = ec_meter_gpu_count(m);
    if (n == 0) {
        cli_fail("gpus", "%s", ec_meter_gpu_unavailable(m));
        ec_meter_close(m);
        return EXIT_FAIL;
    }
    ec_gpu_sample now[EC_METER_MAX_GPUS];
    for (int i = 0; i < n; i++)
        ec_meter_read(m, i, &now[i]);
    ec_table *t = ec_table_new();
    if (fmt == EC_FORMAT_TABLE) {
        /* Transposed: two dozen properties read better down a page than across it. */
        ec_table_column(t, "property", "property");
        for (int i = 0; i < n; i++) {
            char key[32];
            snprintf(key, sizeof key, "gpu%u", ec_meter_gpu(m, i)->index);
            ec_table_column(t, key, key);
        }
        for (int k = 0; k < NFIELDS; k++) {
            ec_table_row(t);
            ec_table_text(t, 0, "%s", fields[k].label);
            for (int i = 0; i < n; i++)
                cell(t, i + 1, k, m, ec_meter_gpu(m, i), &now[i]);
        }
    } else {
        for (int k = 0; k < NFIELDS; k++)
            ec_table_column(t, fields[k].key, fields[k].label);
        for (int i = 0; i < n; i++) {
            ec_table_row(t);
            for (int k = 0; k < NFIELDS; k++)
                cell(t, k, k, m, ec_meter_gpu(m, i), &now[i]);
        }
    }
    ec_table_print(t, fmt, stdout);
    ec_table_free(t);
    ec_meter_close(m);
    return EXIT_OK;
}
