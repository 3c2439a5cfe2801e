/* cmd_gpus.c — `ecocompute gpus`: the GPUs NVML sees, what they can measure, their compute
 * capability and memory bandwidth, what this build's CUDA backend runs on them (from the compute
 * capability and the architectures compiled in: no CUDA call), and their current power,
 * temperature and clocks. */
#include "cli.h"

#include "ecocompute/engine.h"
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
    {"compute_capability", "compute capability"},
    {"mem_bus_bits", "memory bus width (bits)"},
    {"mem_bandwidth_gbs", "memory bandwidth, theoretical (GB/s)"},
    {"cuda_code", "CUDA code of this build"},
    {"precisions", "precisions (this build)"},
    {"kernel_families", "kernel families (this build)"},
    {"kernel_features", "kernel paths (this build)"},
    {"limits", "limits (this build)"},
    {"persistence_mode", "persistence mode"},
    {"power_instant_w", "power now, instant (W)"},
    {"power_avg_w", "power now, 1 s average (W)"},
    {"temp_c", "temperature (°C)"},
    {"sm_mhz", "SM clock (MHz)"},
    {"mem_mhz", "memory clock (MHz)"},
    {"clock_event_reasons", "clock event reasons"},
};
enum { NFIELDS = sizeof fields / sizeof *fields };

/* What this build's CUDA backend runs on one GPU, as text cells. */
typedef struct {
    char code[64], precisions[96], families[32], features[96], limits[192];
} build_support;

static void append(char *buf, size_t len, const char *sep, const char *text)
{
    size_t n = strlen(buf);
    snprintf(buf + n, len - n, "%s%s", n ? sep : "", text);
}

static void support_of(const ec_gpu_info *g, build_support *b)
{
    memset(b, 0, sizeof *b);
    const char *archs = ec_cuda_build_architectures();
    ec_gpu_code c;
    if (!*archs) {
        snprintf(b->code, sizeof b->code, "none (no CUDA backend)");
        return;
    }
    if (g->cc_major < 0) {
        snprintf(b->code, sizeof b->code, "unknown (no compute capability)");
        return;
    }
    if (ec_gpu_code_for(archs, g->cc_major, g->cc_minor, &c) != 0) {
        snprintf(b->code, sizeof b->code, "none");
        snprintf(b->limits, sizeof b->limits, "no code for compute capability %d.%d (built for %s)",
                 g->cc_major, g->cc_minor, archs);
        return;
    }
    snprintf(b->code, sizeof b->code, "%s_%d%s%s", c.jit ? "compute" : "sm", c.code_arch,
             c.arch_specific ? "a" : "", c.jit ? " (PTX, compiled by the driver)" : "");
    for (int p = EC_PREC_FP16; p < EC_PREC_COUNT; p++)
        if (!ec_gpu_precision_missing((ec_precision)p, c.features))
            append(b->precisions, sizeof b->precisions, " ", ec_precision_name((ec_precision)p));
    snprintf(b->families, sizeof b->families, "%s %s", ec_kernels_name(EC_KERNELS_FUSED),
             ec_kernels_name(EC_KERNELS_REFERENCE));
    for (int i = 0; i < EC_GPU_FEATURE_COUNT; i++)
        if (c.features & 1u << i)
            append(b->features, sizeof b->features, " ", ec_gpu_feature_name(1u << i));
    if (!b->features[0]) snprintf(b->features, sizeof b->features, "mma.sync (sm_75)");
    const char *bf16 = ec_gpu_precision_missing(EC_PREC_BF16, c.features);
    if (bf16) {
        char line[128];
        snprintf(line, sizeof line, "no bf16: needs %s", bf16);
        append(b->limits, sizeof b->limits, "; ", line);
    }
    if (!(c.features & EC_GPU_FP8_CVT))
        append(b->limits, sizeof b->limits, "; ", "fp8 by software e4m3 conversion");
    if (!(c.features & EC_GPU_CLUSTERS))
        append(b->limits, sizeof b->limits, "; ", "no clusters or PDL (sm_90+)");
    if (g->cc_major == 9 && g->cc_minor == 0 && !(c.features & EC_GPU_WGMMA))
        append(b->limits, sizeof b->limits, "; ", "no wgmma (needs sm_90a code)");
}

static void yes_no(ec_table *t, int col, int v)
{
    ec_table_text(t, col, "%s", v ? "yes" : "no");
}

/* Writes property k of one GPU into column col of the current row. */
static void cell(ec_table *t, int col, int k, const ec_meter *m, const ec_gpu_info *g,
                 const ec_gpu_sample *s, const build_support *b)
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
        if (g->cc_major >= 0) ec_table_text(t, col, "%d.%d", g->cc_major, g->cc_minor);
        break;
    case 16:
        ec_table_number(t, col, "%.0f", g->mem_bus_bits);
        break;
    case 17:
        ec_table_number(t, col, "%.0f", g->mem_bandwidth_gbs);
        break;
    case 18:
        ec_table_text(t, col, "%s", b->code);
        break;
    case 19:
        ec_table_text(t, col, "%s", b->precisions);
        break;
    case 20:
        ec_table_text(t, col, "%s", b->families);
        break;
    case 21:
        ec_table_text(t, col, "%s", b->features);
        break;
    case 22:
        ec_table_text(t, col, "%s", b->limits);
        break;
    case 23:
        if (g->persistence_mode >= 0) yes_no(t, col, g->persistence_mode);
        break;
    case 24:
        ec_table_number(t, col, "%.1f", v & EC_SAMPLE_POWER_INSTANT ? s->power_instant_w : NAN);
        break;
    case 25:
        ec_table_number(t, col, "%.1f", v & EC_SAMPLE_POWER_AVERAGE ? s->power_avg_w : NAN);
        break;
    case 26:
        ec_table_number(t, col, "%.0f", v & EC_SAMPLE_TEMP ? s->temp_c : NAN);
        break;
    case 27:
        ec_table_number(t, col, "%.0f", v & EC_SAMPLE_SM_CLOCK ? s->sm_mhz : NAN);
        break;
    case 28:
        ec_table_number(t, col, "%.0f", v & EC_SAMPLE_MEM_CLOCK ? s->mem_mhz : NAN);
        break;
    case 29:
        if (v & EC_SAMPLE_CLOCK_REASONS) ec_table_text(t, col, "0x%llx", s->clock_event_reasons);
        break;
    }
}

static void usage(void)
{
    printf("usage: ecocompute gpus [--format table|json|csv] [--json]\n\n"
           "Lists the NVIDIA GPUs NVML sees: identity (index, name, UUID, PCI bus id,\n"
           "architecture, driver), what each can measure (energy counter, instant and 1 s\n"
           "average power), power limits and maximum clocks, compute capability and\n"
           "theoretical memory bandwidth (2 x max memory clock x bus width), what this build's\n"
           "CUDA backend runs there (its code for the GPU, precisions, kernel families and\n"
           "paths, and what is missing), and current power, temperature and clocks. The table\n"
           "shows one column per GPU; JSON and CSV one record per GPU.\n\n"
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
    build_support support[EC_METER_MAX_GPUS];
    for (int i = 0; i < n; i++) {
        ec_meter_read(m, i, &now[i]);
        support_of(ec_meter_gpu(m, i), &support[i]);
    }
    ec_table *t = ec_table_new();
    if (fmt == EC_FORMAT_TABLE) {
        /* Transposed: two dozen properties read better down a page than across it. */
        ec_table_column(t, "property", "property");
        for (int i = 0; i < n; i++) {
            char key[32];
            snprintf(key, sizeof key, "gpu%u", ec_meter_gpu(m, i)->index);
            /* Long values (the build's kernel features) wrap, so that the property names,
             * which say what a row is, are never the cells a narrow table shortens. */
            ec_table_wrap(t, ec_table_column(t, key, key));
        }
        for (int k = 0; k < NFIELDS; k++) {
            ec_table_row(t);
            ec_table_text(t, 0, "%s", fields[k].label);
            for (int i = 0; i < n; i++)
                cell(t, i + 1, k, m, ec_meter_gpu(m, i), &now[i], &support[i]);
        }
    } else {
        for (int k = 0; k < NFIELDS; k++)
            ec_table_column(t, fields[k].key, fields[k].label);
        for (int i = 0; i < n; i++) {
            ec_table_row(t);
            for (int k = 0; k < NFIELDS; k++)
                cell(t, k, k, m, ec_meter_gpu(m, i), &now[i], &support[i]);
        }
    }
    ec_table_print(t, fmt, stdout);
    ec_table_free(t);
    ec_meter_close(m);
    return EXIT_OK;
}
