/* advise_args.c — the options and name lookups the `advise` subcommands share (advise_args.h). */
#include "advise_args.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ecocompute/model.h"
#include "ecocompute/quant.h"
#include "ecocompute/store.h"

int advise_common_arg(advise_ctx *c, int argc, char **argv, int *i)
{
    const char *f = argv[*i];
    int db = cli_db_arg(c->cmd, argc, argv, i, &c->db);
    if (db) return db;
    if (strcmp(f, "--data-dir") && strcmp(f, "--format")) return 0;
    if (*i + 1 >= argc) {
        cli_usage_error(c->cmd, "%s needs a value", f);
        return -1;
    }
    const char *v = argv[++*i];
    if (!strcmp(f, "--data-dir"))
        c->data_dir = v;
    else if (cli_parse_format(c->cmd, v, &c->format))
        return -1;
    return 1;
}

int advise_load(advise_ctx *c)
{
    char dir[4096];
    if (ec_advise_data_dir(c->data_dir, dir, sizeof dir) || ec_advise_data_load(dir, &c->data)) {
        cli_fail(c->cmd, "%s", ec_last_error());
        return -1;
    }
    if (c->db) {
        ec_store *s = NULL;
        ec_run_record *r = NULL;
        size_t n = 0;
        if (ec_store_open(&s, c->db, 1) || ec_store_load_runs(s, NULL, &r, &n) ||
            ec_advise_data_append(&c->data, r, n)) {
            cli_fail(c->cmd, "%s", ec_last_error());
            ec_store_close(s);
            free(r);
            ec_advise_data_free(&c->data);
            return -1;
        }
        size_t ncal = ec_advise_use_calibrations(&c->data, s, r, n, c->db);
        if (ncal)
            fprintf(stderr,
                    "ecocompute %s: note: idle power of %zu GPU(s) from your calibrations\n",
                    c->cmd, ncal);
        ec_store_close(s);
        free(r);
    }
    if (ec_advisor_init(&c->advisor, &c->data)) {
        cli_fail(c->cmd, "%s", ec_last_error());
        ec_advise_data_free(&c->data);
        return -1;
    }
    c->loaded = 1;
    return 0;
}

void advise_ctx_free(advise_ctx *c)
{
    if (!c->loaded) return;
    ec_advisor_free(&c->advisor);
    ec_advise_data_free(&c->data);
    c->loaded = 0;
}

int advise_gpu(advise_ctx *c, const char *name, const ec_gpu_spec **out)
{
    *out = ec_advise_find_gpu(&c->data, name);
    if (*out) return 0;
    /* Closest by the table key or any alias ("H10" is one edit from the alias "H100"). */
    const char *names[256];
    size_t n = 0;
    char alias[256][64];
    for (size_t i = 0; i < c->data.ngpus && n < 256; i++) {
        names[n++] = c->data.gpus[i].name;
        const char *a = c->data.gpus[i].aliases;
        while (*a && n < 256) {
            const char *bar = strchr(a, '|');
            size_t l = bar ? (size_t)(bar - a) : strlen(a);
            snprintf(alias[n], sizeof alias[n], "%.*s", (int)(l < 63 ? l : 63), a);
            names[n] = alias[n];
            n++;
            a += l + (bar ? 1 : 0);
        }
    }
    char near[256];
    ec_closest_names(name, names, n, near, sizeof near);
    cli_usage_error(c->cmd, "unknown GPU '%s' (closest known: %s; the table is %s/gpus.csv)", name,
                    near, c->data.dir);
    return -1;
}

int advise_region(advise_ctx *c, const char *name, const ec_region **out)
{
    *out = ec_advise_find_region(&c->data, name);
    if (*out) return 0;
    const char *names[128];
    size_t n = 0;
    for (size_t i = 0; i < c->data.nregions && n < 128; i++)
        names[n++] = c->data.regions[i].key;
    char near[256];
    ec_closest_names(name, names, n, near, sizeof near);
    cli_usage_error(c->cmd, "unknown region '%s' (closest known: %s; the table is %s/regions.csv)",
                    name, near, c->data.dir);
    return -1;
}

int advise_model(advise_ctx *c, const char *name, double *params_b)
{
    const ec_model_config *m = ec_catalog_find(name);
    if (!m) m = ec_catalog_match(name);
    if (m) {
        *params_b = (double)ec_model_param_count(m) / 1e9;
        return 0;
    }
    char want[96], have[96];
    ec_model_family_key(name, want, sizeof want);
    for (size_t i = 0; i < c->advisor.npts; i++) {
        ec_model_family_key(c->advisor.pts[i].model, have, sizeof have);
        if (!strcmp(want, have) && c->advisor.pts[i].params_b > 0) {
            *params_b = c->advisor.pts[i].params_b;
            return 0;
        }
    }
    const char *names[64];
    size_t n = 0;
    for (size_t i = 0; i < ec_catalog_count() && n < 64; i++)
        names[n++] = ec_catalog_get(i)->name;
    char near[256];
    ec_closest_names(name, names, n, near, sizeof near);
    cli_usage_error(c->cmd, "unknown model '%s' (closest known: %s; see 'ecocompute models')", name,
                    near);
    return -1;
}

int advise_precision(advise_ctx *c, const char *name)
{
    ec_precision p;
    if (!ec_precision_parse(name, &p)) return 0;
    const char *names[EC_PREC_COUNT];
    for (int i = 0; i < EC_PREC_COUNT; i++)
        names[i] = ec_precision_name((ec_precision)i);
    char near[256];
    ec_closest_names(name, names, EC_PREC_COUNT, near, sizeof near);
    cli_usage_error(c->cmd, "unknown precision '%s' (closest known: %s)", name, near);
    return -1;
}

int advise_stack(advise_ctx *c, const char *name)
{
    static const char *const stacks[] = {"fused", "reference", "hf-bnb"};
    for (size_t i = 0; i < 3; i++)
        if (!strcmp(name, stacks[i])) return 0;
    char near[128];
    ec_closest_names(name, stacks, 3, near, sizeof near);
    cli_usage_error(c->cmd, "unknown stack '%s' (known: fused, reference, hf-bnb; closest: %s)",
                    name, near);
    return -1;
}

void advise_config_defaults(advise_config_args *a)
{
    memset(a, 0, sizeof *a);
    a->stack = "hf-bnb";
    a->batch = -1;
    a->prompt = 128;
    a->gen = 256;
}

int advise_config_arg(advise_ctx *c, advise_config_args *a, int argc, char **argv, int *i)
{
    static const char *const opts[] = {"--model", "--gpu",    "--precision", "--stack",
                                       "--batch", "--prompt", "--gen"};
    const char *f = argv[*i];
    size_t k = 0;
    while (k < 7 && strcmp(f, opts[k]))
        k++;
    if (k == 7) return 0;
    if (*i + 1 >= argc) {
        cli_usage_error(c->cmd, "%s needs a value", f);
        return -1;
    }
    const char *v = argv[++*i];
    switch (k) {
    case 0:
        a->model = v;
        break;
    case 1:
        a->gpu = v;
        break;
    case 2:
        a->precision = v;
        break;
    case 3:
        a->stack = v;
        break;
    case 4:
        return cli_parse_long(c->cmd, f, v, 1, 65536, &a->batch) ? -1 : 1;
    case 5:
        return cli_parse_long(c->cmd, f, v, 0, 1 << 20, &a->prompt) ? -1 : 1;
    default:
        return cli_parse_long(c->cmd, f, v, 1, 1 << 20, &a->gen) ? -1 : 1;
    }
    return 1;
}

int advise_config_query(advise_ctx *c, const advise_config_args *a, const char *need, ec_query *q)
{
    memset(q, 0, sizeof *q);
    if (strchr(need, 'm') && !a->model) return cli_usage_error(c->cmd, "--model is required"), -1;
    if (strchr(need, 'g') && !a->gpu) return cli_usage_error(c->cmd, "--gpu is required"), -1;
    if (strchr(need, 'p') && !a->precision)
        return cli_usage_error(c->cmd, "--precision is required"), -1;
    if (strchr(need, 'b') && a->batch < 1)
        return cli_usage_error(c->cmd, "--batch is required"), -1;
    if (a->model && advise_model(c, a->model, &q->params_b)) return -1;
    if (a->gpu && advise_gpu(c, a->gpu, &q->gpu)) return -1;
    if (a->precision && advise_precision(c, a->precision)) return -1;
    if (advise_stack(c, a->stack)) return -1;
    q->model = a->model;
    q->precision = a->precision;
    q->batch = (int)a->batch;
    q->stack = a->stack;
    q->prompt_len = (int)a->prompt;
    q->gen_len = (int)a->gen;
    return 0;
}

void advise_config_label(const ec_query *q, char *out, size_t cap)
{
    snprintf(out, cap, "%s %s b%d %s on %s", q->model, q->precision, q->batch, q->stack,
             q->gpu ? q->gpu->name : "?");
}

int advise_next_arg(advise_ctx *c, advise_config_args *cfg, int argc, char **argv, int *i,
                    void (*usage)(void), const char **value)
{
    const char *f = argv[*i];
    if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
        usage();
        return ADVISE_ARG_HELP;
    }
    int r = advise_common_arg(c, argc, argv, i);
    if (!r && cfg) r = advise_config_arg(c, cfg, argc, argv, i);
    if (r < 0) return ADVISE_ARG_ERROR;
    if (r) return ADVISE_ARG_TAKEN;
    if (*i + 1 >= argc) {
        cli_usage_error(c->cmd, "unknown option or missing value '%s'", f);
        return ADVISE_ARG_ERROR;
    }
    *value = argv[++*i];
    return ADVISE_ARG_OWN;
}
