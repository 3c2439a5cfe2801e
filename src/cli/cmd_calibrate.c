/* cmd_calibrate.c — `ecocompute calibrate`: measures the selected GPU's ceilings (idle power with
 * a context, HBM read and copy bandwidth, fp16 GEMM throughput, energy per byte) and saves them
 * where bench and analyze find them (calib.h). */
#include "cli.h"

#include "ecocompute/calib.h"
#include "ecocompute/engine.h"
#include "ecocompute/store.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

static volatile int stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static void usage(void)
{
    printf(
        "usage: ecocompute calibrate [--device cuda[:N]] [--idle SECONDS] [--seconds SECONDS]\n"
        "                            [--buffer-gib GIB] [--gemm-n N] [--output FILE]\n"
        "                            [--db PATH | --no-db] [--format table|json|csv]\n\n"
        "Measures the GPU's physical ceilings with ecocompute's meter, each load in its own\n"
        "measurement window: idle power with a CUDA context alive; HBM read bandwidth (a\n"
        "read-only sweep with 16-byte loads over a buffer far larger than L2); device-to-device\n"
        "copy bandwidth (bytes read + written); fp16 tensor-core GEMM throughput (cuBLAS, fp32\n"
        "accumulate); and for each its average power, gross energy and net energy per byte (per\n"
        "FLOP for the GEMM) above idle. These are the denominators of every \"%% of roofline\".\n"
        "Takes about IDLE + 3 x SECONDS + a few seconds (under a minute by default).\n\n"
        "  --device D        cuda or cuda:N (default cuda:0)\n"
        "  --idle S          idle baseline, seconds (default 5)\n"
        "  --seconds S       duration of each load, seconds (default 8)\n"
        "  --buffer-gib G    size of each sweep buffer, GiB (default 4; two are allocated)\n"
        "  --gemm-n N        the GEMM is N x N x N (default 8192)\n"
        "  --output FILE     where to save the JSON (default: the calibration store,\n"
        "                    $XDG_DATA_HOME/ecocompute/calibration-<GPU UUID>.json, or\n"
        "                    ~/.local/share/... when XDG_DATA_HOME is unset)\n"
        "  --db PATH         also store it in this results database (default %s)\n"
        "  --no-db           do not store it in a results database\n"
        "  --format F        table (default), json or csv, on stdout\n\n"
        "examples:\n"
        "  ecocompute calibrate\n"
        "  ecocompute calibrate --device cuda:1 --format json\n"
        "  ecocompute calibrate --seconds 3 --idle 2 --output h100.json --no-db\n",
        ec_store_default_path());
}

static int parse_args(int argc, char **argv, ec_calib_options *o, const char **output,
                      const char **db, ec_format *fmt)
{
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            usage();
            return -1;
        }
        if (!strcmp(f, "--no-db")) {
            *db = NULL;
            continue;
        }
        int given = cli_db_arg("calibrate", argc, argv, &i, db);
        if (given < 0) return EXIT_USAGE;
        if (given) continue;
        static const char *with_value[] = {"--device", "--idle",   "--seconds", "--buffer-gib",
                                           "--gemm-n", "--output", "--format"};
        int known = 0;
        for (size_t k = 0; k < sizeof with_value / sizeof *with_value; k++)
            known |= !strcmp(f, with_value[k]);
        if (!known) return cli_usage_error("calibrate", "unknown option '%s'", f);
        if (i + 1 >= argc) return cli_usage_error("calibrate", "%s needs a value", f);
        const char *v = argv[++i];
        long n;
        if (!strcmp(f, "--device")) {
            if (ec_device_parse(v, &o->cuda_device) != 0 || o->cuda_device < 0)
                return cli_usage_error("calibrate", "--device must be cuda or cuda:N, not '%s'", v);
        } else if (!strcmp(f, "--idle")) {
            if (cli_parse_double("calibrate", f, v, 0.5, 600, &o->idle_s)) return EXIT_USAGE;
        } else if (!strcmp(f, "--seconds")) {
            if (cli_parse_double("calibrate", f, v, 0.5, 600, &o->load_s)) return EXIT_USAGE;
        } else if (!strcmp(f, "--buffer-gib")) {
            if (cli_parse_double("calibrate", f, v, 0.25, 64, &o->buffer_gib)) return EXIT_USAGE;
        } else if (!strcmp(f, "--gemm-n")) {
            if (cli_parse_long("calibrate", f, v, 256, 32768, &n)) return EXIT_USAGE;
            o->gemm_n = (int)n;
        } else if (!strcmp(f, "--output")) {
            *output = v;
        } else if (cli_parse_format("calibrate", v, fmt)) {
            return EXIT_USAGE;
        }
    }
    return 0;
}

static void add_load_rows(ec_table *t, const char *name, const ec_calib_load_result *r,
                          double rate_scale, const char *rate_unit, const char *pj_unit)
{
    ec_table_row(t);
    ec_table_text(t, 0, "%s", name);
    ec_table_number(t, 1, "%.1f", r->rate / rate_scale);
    ec_table_text(t, 2, "%s", rate_unit);
    ec_table_number(t, 3, "%.1f", r->avg_power_w);
    ec_table_number(t, 4, "%.1f", r->peak_power_w);
    ec_table_number(t, 5, "%.1f", r->energy_j);
    ec_table_number(t, 6, "%.2f", r->pj_per_unit_net);
    ec_table_text(t, 7, "%s", pj_unit);
    ec_table_number(t, 8, "%.2f", r->time_s);
    ec_table_number(t, 9, "%+.2f", r->disagreement_pct);
}

static void print_result(const ec_calibration *c, ec_format fmt)
{
    if (fmt == EC_FORMAT_JSON) {
        char *text = ec_calibration_to_json(c);
        printf("%s\n", text);
        free(text);
        return;
    }
    ec_table *t = ec_table_new();
    ec_table_column(t, "load", "Load");
    ec_table_column(t, "rate", "Rate");
    ec_table_column(t, "rate_unit", "Unit");
    ec_table_column(t, "avg_power_w", "Avg W");
    ec_table_column(t, "peak_power_w", "Peak W");
    ec_table_column(t, "energy_j_gross", "Energy J (gross)");
    ec_table_column(t, "energy_net_pj", "Net pJ/unit");
    ec_table_column(t, "energy_net_unit", "per");
    ec_table_column(t, "time_s", "Time s");
    ec_table_column(t, "counter_vs_integrated_pct", "Counter-vs-integrated %");
    ec_table_row(t);
    ec_table_text(t, 0, "idle (CUDA context)");
    ec_table_number(t, 3, "%.1f", c->idle_power_w);
    add_load_rows(t, "HBM read sweep", &c->read, 1e9, "GB/s", "byte");
    add_load_rows(t, "device-to-device copy", &c->copy, 1e9, "GB/s (read+write)", "byte");
    add_load_rows(t, "fp16 GEMM", &c->gemm, 1e12, "TFLOP/s", "FLOP");
    if (fmt == EC_FORMAT_TABLE)
        printf("%s (%s), driver %s, power limit %.0f W, %s\n", c->gpu_name, c->gpu_uuid,
               c->driver, c->power_limit_w, c->timestamp_utc);
    ec_table_print(t, fmt, stdout);
    ec_table_free(t);
}

int cmd_calibrate(int argc, char **argv)
{
    ec_calib_options o;
    ec_calib_options_default(&o);
    const char *output = NULL, *db = ec_store_default_path();
    ec_format fmt = EC_FORMAT_TABLE;
    int rc = parse_args(argc, argv, &o, &output, &db, &fmt);
    if (rc) return rc < 0 ? EXIT_OK : rc;
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    ec_calibration c;
    if (ec_calibrate(&o, &stop_requested, stderr, &c) != 0)
        return cli_fail("calibrate", "%s", ec_last_error());
    char path[1024];
    if (output)
        snprintf(path, sizeof path, "%s", output);
    else if (ec_calibration_path(c.gpu_uuid, path, sizeof path) != 0)
        return cli_fail("calibrate", "%s", ec_last_error());
    if (ec_calibration_save(&c, path) != 0) return cli_fail("calibrate", "%s", ec_last_error());
    fprintf(stderr, "calibrate: saved to %s\n", path);
    if (db) {
        ec_store *st = NULL;
        if (ec_store_open(&st, db, 0) != 0 || ec_store_insert_calibration(st, &c) != 0) {
            rc = cli_fail("calibrate", "%s (the JSON is saved)", ec_last_error());
            if (st) ec_store_close(st);
            print_result(&c, fmt);
            return rc;
        }
        ec_store_close(st);
        fprintf(stderr, "calibrate: stored in %s\n", db);
    }
    print_result(&c, fmt);
    return EXIT_OK;
}
