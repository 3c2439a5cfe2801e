/* summary.c — per-configuration statistics of stored runs (mean, sd, CV) and the change
 * against fp16: what `bench` prints at the end and `export --summary` writes. */
#include "ecocompute/bench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void ec_stat_of(const double *x, int n, ec_stat *out)
{
    double sum = 0;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (!isnan(x[i])) {
            sum += x[i];
            k++;
        }
    out->n = k;
    out->mean = k ? sum / k : NAN;
    out->sd = out->cv_pct = NAN;
    if (k < 2) return;
    double ss = 0;
    for (int i = 0; i < n; i++)
        if (!isnan(x[i])) ss += (x[i] - out->mean) * (x[i] - out->mean);
    out->sd = sqrt(ss / (k - 1));
    if (out->mean != 0) out->cv_pct = 100.0 * out->sd / fabs(out->mean);
}

static double delta_pct(double x, double ref)
{
    return isfinite(x) && isfinite(ref) && ref != 0 ? 100.0 * (x - ref) / ref : NAN;
}

int ec_bench_summarize(const ec_run_record *r, size_t n, ec_bench_summary **out, size_t *nout)
{
    *out = NULL;
    *nout = 0;
    if (n == 0) return 0;
    ec_bench_summary *g = calloc(n, sizeof *g);
    size_t *group = malloc(n * sizeof *group), *lead = malloc(n * sizeof *lead);
    double *x = malloc(n * sizeof *x);
    ec_run_key *key = malloc(n * sizeof *key); /* [n]; a group's is its first record's (lead) */
    if (!g || !group || !lead || !x || !key) {
        free(g);
        free(group);
        free(lead);
        free(x);
        free(key);
        return ec_set_error("out of memory");
    }
    for (size_t i = 0; i < n; i++)
        key[i] = ec_run_key_of(&r[i]);
    size_t ng = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        while (k < ng && !ec_run_key_equal(&key[lead[k]], &key[i], EC_KEY_BENCH))
            k++;
        group[i] = k;
        if (k < ng) {
            /* A configuration is as good as its worst run's gate (imports may mix them). */
            if (r[i].gate == EC_GATE_FAIL || g[k].gate == EC_GATE_PASS) g[k].gate = r[i].gate;
            continue;
        }
        ng++;
        lead[k] = i;
        ec_bench_summary *s = &g[k];
        memcpy(s->source, r[i].source, sizeof s->source);
        memcpy(s->model, r[i].model, sizeof s->model);
        memcpy(s->precision, r[i].precision, sizeof s->precision);
        memcpy(s->kernels, r[i].kernels, sizeof s->kernels);
        memcpy(s->device, r[i].device, sizeof s->device);
        memcpy(s->gpu_name, r[i].gpu_name, sizeof s->gpu_name);
        memcpy(s->gpu_uuid, r[i].gpu_uuid, sizeof s->gpu_uuid);
        s->batch = r[i].batch;
        s->tp = r[i].tp;
        s->prompt_len = r[i].prompt_len;
        s->gen_len = r[i].gen_len;
        s->gate = r[i].gate;
        s->energy_definition = r[i].energy_definition;
    }
    struct {
        size_t off;
        size_t dst;
    } stats[] = {
        {offsetof(ec_run_record, tok_s), offsetof(ec_bench_summary, tok_s)},
        {offsetof(ec_run_record, j_per_1k_gross), offsetof(ec_bench_summary, j_per_1k_gross)},
        {offsetof(ec_run_record, j_per_1k_net), offsetof(ec_bench_summary, j_per_1k_net)},
        {offsetof(ec_run_record, energy_j_per_1k), offsetof(ec_bench_summary, source_j_per_1k)},
        {offsetof(ec_run_record, avg_power_w), offsetof(ec_bench_summary, avg_power_w)},
        {offsetof(ec_run_record, total_time_s), offsetof(ec_bench_summary, total_time_s)},
    };
    for (size_t k = 0; k < ng; k++)
        for (size_t f = 0; f < sizeof stats / sizeof *stats; f++) {
            int m = 0;
            for (size_t i = 0; i < n; i++)
                if (group[i] == k) x[m++] = *(const double *)(const void *)((const char *)&r[i] +
                                                                            stats[f].off);
            ec_stat_of(x, m, (ec_stat *)(void *)((char *)&g[k] + stats[f].dst));
        }
    for (size_t k = 0; k < ng; k++) {
        g[k].delta_gross_pct = g[k].delta_net_pct = g[k].delta_tok_pct = NAN;
        for (size_t i = 0; i < n; i++) {
            const ec_bench_summary *ref = &g[group[i]];
            if (strcmp(ref->precision, "fp16") != 0 ||
                !ec_run_key_equal(&key[lead[k]], &key[i], EC_KEY_BENCH_BASELINE))
                continue;
            g[k].delta_gross_pct = delta_pct(g[k].j_per_1k_gross.mean, ref->j_per_1k_gross.mean);
            g[k].delta_net_pct = delta_pct(g[k].j_per_1k_net.mean, ref->j_per_1k_net.mean);
            g[k].delta_tok_pct = delta_pct(g[k].tok_s.mean, ref->tok_s.mean);
            break;
        }
    }
    free(group);
    free(lead);
    free(x);
    free(key);
    *out = g;
    *nout = ng;
    return 0;
}
