/* summary_table.c — renders per-configuration summaries (mean ± sd, CV, gate, Δ vs fp16). */
#include "summary_table.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

typedef struct {
    const char *key, *label, *fmt;
    const char *brief; /* the label of the mean ± sd column people read */
    size_t off;        /* ec_stat in ec_bench_summary */
} stat_col;

static const stat_col stat_cols[] = {
    {"tok_s", "Decode (tok/s)", "%.2f", "Decode tok/s", offsetof(ec_bench_summary, tok_s)},
    {"j_per_1k_gross", "J/1k tok gross", "%.2f", "J/1k gross",
     offsetof(ec_bench_summary, j_per_1k_gross)},
    {"j_per_1k_net", "J/1k tok net", "%.2f", "J/1k net", offsetof(ec_bench_summary, j_per_1k_net)},
    {"avg_power_w", "Avg power gross (W)", "%.1f", "Power W",
     offsetof(ec_bench_summary, avg_power_w)},
    {"total_time_s", "Run time (s)", "%.3f", "Run s", offsetof(ec_bench_summary, total_time_s)},
    {"source_j_per_1k", "Source J/1k tok", "%.2f", "Source J/1k",
     offsetof(ec_bench_summary, source_j_per_1k)},
};
enum { NSTAT = sizeof stat_cols / sizeof *stat_cols };

static const ec_stat *stat_of(const ec_bench_summary *s, int k)
{
    return (const ec_stat *)(const void *)((const char *)s + stat_cols[k].off);
}

void cli_print_summary(const ec_bench_summary *s, size_t n, ec_format fmt, FILE *out)
{
    int people = fmt == EC_FORMAT_TABLE;
    ec_table *t = ec_table_new();
    /* "model" first: a summary file must not look like a run export (those start "source"). */
    int c_model = ec_table_column(t, "model", "Model");
    int c_src = people ? -1 : ec_table_column(t, "source", "Source");
    int c_prec = ec_table_column(t, "precision", "Precision");
    int c_kern = ec_table_column(t, "kernels", "Kernels");
    int c_dev = ec_table_column(t, "device", "Device");
    int c_tp = ec_table_column(t, "tp", "TP");
    int c_gpu = people ? -1 : ec_table_column(t, "gpu_name", "GPU");
    int c_batch = ec_table_column(t, "batch", people ? "Batch" : "Batch (seq)");
    int c_prompt = ec_table_column(t, "prompt_len", "Prompt (tok)");
    int c_gen = ec_table_column(t, "gen_len", "Gen (tok)");
    int c_n = ec_table_column(t, "runs", "Runs");
    int c_gate = ec_table_column(t, "gate", "Gate");
    int c_def = people ? -1 : ec_table_column(t, "energy_definition", "Source energy");
    int c_stat[NSTAT][3];
    /* People get the figures that matter for the verdict; files get every statistic. */
    int shown = people ? 4 : NSTAT;
    for (int k = 0; k < shown; k++) {
        char key[64], label[96];
        if (people) {
            snprintf(label, sizeof label, "%s ± sd", stat_cols[k].brief);
            c_stat[k][0] = ec_table_column(t, stat_cols[k].key, label);
            c_stat[k][1] = -1;
            /* power and net energy: context for the verdict, first to go in narrow tables */
            if (k == 3 || k == 2) ec_table_priority(t, c_stat[k][0], k == 3 ? 4 : 2);
        } else {
            snprintf(key, sizeof key, "%s_mean", stat_cols[k].key);
            c_stat[k][0] = ec_table_column(t, key, stat_cols[k].label);
            snprintf(key, sizeof key, "%s_sd", stat_cols[k].key);
            c_stat[k][1] = ec_table_column(t, key, "sd");
        }
        /* The quality gates' two CVs, for people; every CV in files. */
        c_stat[k][2] = -1;
        if (!people || k == 0 || k == 3) {
            snprintf(key, sizeof key, "%s_cv_pct", stat_cols[k].key);
            snprintf(label, sizeof label, "CV %s (%%)",
                     k == 0 ? "tok/s" : k == 3 ? "power" : stat_cols[k].key);
            c_stat[k][2] = ec_table_column(t, key, label);
        }
    }
    int c_dg = ec_table_column(t, "delta_j_per_1k_gross_pct", "Δ gross vs fp16 %");
    int c_dn = ec_table_column(t, "delta_j_per_1k_net_pct", "Δ net vs fp16 %");
    int c_dt = ec_table_column(t, "delta_tok_s_pct", "Δ tok/s vs fp16 %");
    /* What a narrow table keeps: the configuration, the gate, tok/s and gross energy with their
     * deltas. Left out first: the CVs (the gate sums them up), the fixed lengths, power. */
    if (people) {
        ec_table_priority(t, c_stat[3][2], 9);
        ec_table_priority(t, c_stat[0][2], 8);
        ec_table_priority(t, c_prompt, 7);
        ec_table_priority(t, c_kern, 6);
        ec_table_priority(t, c_gen, 5);
        ec_table_priority(t, c_dn, 3);
        ec_table_priority(t, c_n, 2);
        ec_table_priority(t, c_dev, 1);
        ec_table_priority(t, c_tp, 1);
    }
    for (size_t i = 0; i < n; i++) {
        const ec_bench_summary *x = &s[i];
        ec_table_row(t);
        if (c_src >= 0) ec_table_text(t, c_src, "%s", x->source);
        ec_table_text(t, c_model, "%s", x->model);
        ec_table_text(t, c_prec, "%s", x->precision);
        ec_table_text(t, c_kern, "%s", x->kernels);
        ec_table_text(t, c_dev, "%s", x->device);
        ec_table_number(t, c_tp, "%.0f", x->tp);
        if (c_gpu >= 0) ec_table_text(t, c_gpu, "%s", x->gpu_name);
        ec_table_number(t, c_batch, "%.0f", x->batch);
        ec_table_number(t, c_prompt, "%.0f", x->prompt_len);
        ec_table_number(t, c_gen, "%.0f", x->gen_len);
        ec_table_number(t, c_n, "%.0f", x->tok_s.n > x->total_time_s.n ? x->tok_s.n
                                                                       : x->total_time_s.n);
        ec_table_text(t, c_gate, "%s", ec_gate_status_name(x->gate));
        if (c_def >= 0)
            ec_table_text(t, c_def, "%s", ec_energy_definition_name(x->energy_definition));
        for (int k = 0; k < shown; k++) {
            const ec_stat *st = stat_of(x, k);
            if (people && isfinite(st->mean)) {
                char cell[64];
                snprintf(cell, sizeof cell, stat_cols[k].fmt, st->mean);
                if (isfinite(st->sd)) {
                    size_t l = strlen(cell);
                    snprintf(cell + l, sizeof cell - l, " ± ");
                    l = strlen(cell);
                    snprintf(cell + l, sizeof cell - l, stat_cols[k].fmt, st->sd);
                }
                ec_table_text(t, c_stat[k][0], "%s", cell);
            } else if (!people) {
                ec_table_number(t, c_stat[k][0], "%.6g", st->mean);
                ec_table_number(t, c_stat[k][1], "%.6g", st->sd);
            }
            if (c_stat[k][2] >= 0)
                ec_table_number(t, c_stat[k][2], people ? "%.2f" : "%.6g", st->cv_pct);
        }
        ec_table_number(t, c_dg, "%+.1f", x->delta_gross_pct);
        ec_table_number(t, c_dn, "%+.1f", x->delta_net_pct);
        ec_table_number(t, c_dt, "%+.1f", x->delta_tok_pct);
    }
    ec_table_print(t, fmt, out);
    ec_table_free(t);
}
