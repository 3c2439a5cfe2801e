/* engine_args.c — shared flag parsing and model/backend opening for `run` and `eval`; the
 * device-list check `bench` shares. */
#include "engine_args.h"

#include "cli.h"

#include "ecocompute/bench.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void cli_engine_args_default(cli_engine_args *a)
{
    memset(a, 0, sizeof *a);
    a->device = "cpu";
    a->batch = 1;
    a->seed = 1;
    ec_model_options_default(&a->model_opts);
    a->model_opts.seed = a->seed;
    a->int8_threshold = EC_INT8_THRESHOLD;
    a->format = EC_FORMAT_TABLE;
}

const char *cli_flag_value(const char *cmd, int argc, char **argv, int *i)
{
    if (*i + 1 >= argc) {
        cli_usage_error(cmd, "%s needs a value", argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

int cli_parse_outliers(const char *cmd, const char *text, int *outliers, float *mag_out)
{
    char count[32];
    const char *colon = strchr(text, ':');
    size_t n = colon ? (size_t)(colon - text) : strlen(text);
    if (n >= sizeof count)
        return cli_usage_error(cmd, "--outliers expects K[:MAG], got '%s'", text), -1;
    memcpy(count, text, n);
    count[n] = '\0';
    long k;
    double mag;
    if (cli_parse_long(cmd, "--outliers", count, 0, 1 << 20, &k) != 0) return -1;
    if (colon && cli_parse_double(cmd, "--outliers magnitude", colon + 1, 1e-6, 1e6, &mag) != 0)
        return -1;
    *outliers = (int)k;
    if (colon) *mag_out = (float)mag;
    return 0;
}

int cli_engine_arg(const char *cmd, int argc, char **argv, int *i, cli_engine_args *a)
{
    const char *flag = argv[*i];
    long v;
    double d;
    if (!strcmp(flag, "--quantize-head")) {
        a->quantize_head = 1;
        return 1;
    }
    static const char *const valued[] = {
        "--model",    "--device", "--tokenizer",      "--batch",      "--seed", "--threads",
        "--outliers", "--format", "--int8-threshold", "--prompt-len", "--kernels", "--tp", NULL};
    int known = 0;
    for (int k = 0; valued[k]; k++)
        known |= !strcmp(flag, valued[k]);
    if (!known) return 0;
    const char *val = cli_flag_value(cmd, argc, argv, i);
    if (!val) return -1;
    if (!strcmp(flag, "--model"))
        a->model = val;
    else if (!strcmp(flag, "--device"))
        a->device = val;
    else if (!strcmp(flag, "--tokenizer"))
        a->tokenizer = val;
    else if (!strcmp(flag, "--kernels")) {
        if (ec_kernels_parse(val, &a->kernels) != 0)
            return cli_usage_error(cmd, "--kernels: %s", ec_last_error()), -1;
    }
    else if (!strcmp(flag, "--outliers"))
        return cli_parse_outliers(cmd, val, &a->model_opts.outliers, &a->model_opts.outlier_mag)
                   ? -1
                   : 1;
    else if (!strcmp(flag, "--format")) {
        a->format_given = 1;
        return cli_parse_format(cmd, val, &a->format) ? -1 : 1;
    } else if (!strcmp(flag, "--int8-threshold")) {
        if (cli_parse_double(cmd, flag, val, 0.0, 1e6, &d) != 0) return -1;
        a->int8_threshold = (float)d;
    } else if (!strcmp(flag, "--batch")) {
        if (cli_parse_long(cmd, flag, val, 1, 4096, &v) != 0) return -1;
        a->batch = (int)v;
    } else if (!strcmp(flag, "--prompt-len")) {
        if (cli_parse_long(cmd, flag, val, 1, 1 << 20, &v) != 0) return -1;
        a->prompt_len = (int)v;
    } else if (!strcmp(flag, "--tp")) {
        if (cli_parse_long(cmd, flag, val, 1, EC_BENCH_MAX_TP, &v) != 0) return -1;
        a->tp = (int)v;
    } else if (!strcmp(flag, "--threads")) {
        if (cli_parse_long(cmd, flag, val, 0, 1024, &v) != 0) return -1;
        a->threads = (int)v;
    } else { /* --seed */
        if (cli_parse_long(cmd, flag, val, 0, 0x7fffffffL, &v) != 0) return -1;
        a->seed = (uint64_t)v;
        a->model_opts.seed = a->seed;
    }
    return 1;
}

int cli_device_ranks(const char *cmd, const char *device, int tp)
{
    int idx[EC_BENCH_MAX_TP];
    int n = ec_device_list(device, tp, idx, EC_BENCH_MAX_TP);
    if (n < 0) cli_usage_error(cmd, "%s: %s", tp ? "--device/--tp" : "--device", ec_last_error());
    return n;
}

int cli_probe_backend(const char *cmd, const char *device, int tp)
{
    /* Every rank of a list is of the backend its first device names. */
    int idx[EC_BENCH_MAX_TP];
    if (ec_device_list(device, tp, idx, EC_BENCH_MAX_TP) < 0)
        return cli_fail(cmd, "%s", ec_last_error());
    char first[16];
    if (idx[0] < 0)
        snprintf(first, sizeof first, "cpu");
    else
        snprintf(first, sizeof first, "cuda:%d", idx[0]);
    ec_backend *probe;
    if (ec_backend_create(&probe, first) != 0) return cli_fail(cmd, "%s", ec_last_error());
    ec_backend_destroy(probe);
    return 0;
}

int cli_engine_args_check(const char *cmd, const cli_engine_args *a)
{
    if (!a->model) return cli_usage_error(cmd, "--model is required");
    if (cli_device_ranks(cmd, a->device, a->tp) < 0) return EXIT_USAGE;
    return cli_probe_backend(cmd, a->device, a->tp);
}

int cli_open_model(const char *cmd, const cli_engine_args *a, ec_model **m, ec_tokenizer **tok)
{
    *tok = NULL;
    if (ec_model_open(m, a->model, &a->model_opts) != 0)
        return cli_fail(cmd, "%s", ec_last_error());
    const char *source = a->tokenizer;
    struct stat st;
    if (!source && a->text_needed) {
        if (stat(a->model, &st) != 0 || !S_ISDIR(st.st_mode)) {
            ec_model_close(*m);
            return cli_fail(cmd, "text needs a tokenizer: give --tokenizer FILE|DIR (the model %s "
                                 "is not a directory with its own tokenizer)", a->model);
        }
        source = a->model;
    }
    if (source && ec_tokenizer_open(tok, source, ec_model_config_of(*m)->vocab_size) != 0) {
        ec_model_close(*m);
        return cli_fail(cmd, "%s", ec_last_error());
    }
    return 0;
}

int cli_open_backend(const char *cmd, const cli_engine_args *a, const ec_model *m, ec_precision p,
                     int max_batch, int max_seq, ec_backend **out)
{
    ec_load_options o;
    ec_load_options_default(&o);
    o.precision = p;
    o.int8_threshold = a->int8_threshold;
    o.kernels = a->kernels;
    o.quantize_head = a->quantize_head;
    o.max_batch = max_batch;
    o.max_seq = max_seq;
    o.threads = a->threads;
    o.tp = a->tp;
    int rc = ec_backend_open(out, a->device, m, &o);
    if (rc == -1) return cli_fail(cmd, "%s", ec_last_error());
    if (rc != 0)
        return cli_fail(cmd, "loading %s at %s: %s", a->model, ec_precision_name(p),
                        ec_last_error());
    return 0;
}
