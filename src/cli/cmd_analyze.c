/* cmd_analyze.c — `ecocompute analyze`: per-configuration statistics of energy per token, Δ vs a
 * baseline precision (95% CI, Welch's t-test), ranking by energy, batch-size scaling fits,
 * crossover model sizes, and the share of the memory-bandwidth roofline reached.
 *
 * Configurations: records grouped by ec_group_configs. A source's summary row stands for its
 * configuration only when no runs of the same configuration are loaded (runs carry the spread
 * that the statistics need). Comparisons stay within one experiment where they can: a baseline
 * from the same folder of the same source is preferred over one from elsewhere, and never one of
 * another energy definition or another kernel family (the kernels can change a precision's
 * energy more than the precision does: docs/results.md). */
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze_accuracy.h"
#include "analyze_args.h"
#include "dataset_args.h"
#include "ecocompute/analysis.h"
#include "ecocompute/store.h"

#define CMD "analyze"

static void usage(void)
{
    char precs[128];
    printf(
        "usage: ecocompute analyze FILE|FOLDER... | --db PATH [filters] [options]\n\n"
        "Statistics over datasets: the results database (--db), ecocompute exports, or the\n"
        "seeds' published CSV/JSON files. Energies are J per\n"
        "1000 generated tokens in each row's definition (gross, net = idle-subtracted, or\n"
        "unknown), never mixed in one comparison. Tables:\n"
        "  configs    per configuration: n, mean, sd, CV, 95%% CI (Student t), tok/s, W, and\n"
        "             %% of the datasheet memory-bandwidth roofline (bytes of the model per step)\n"
        "             and, with --db, of the GPU's calibrated read bandwidth (ecocompute\n"
        "             calibrate) when the database has a calibration of that GPU\n"
        "  deltas     Δ energy vs the baseline precision: J/1k and %% with 95%% CI, Welch's "
        "t-test\n"
        "             (unequal variances, Welch-Satterthwaite df) two-sided p\n"
        "  ranking    configurations of one GPU, model and batch, lowest energy first\n"
        "  scaling    energy/1k tok ≈ a·B^-b over batch sizes B (log-log least squares, R²)\n"
        "  crossover  per GPU, kernels and precision: Δ%% vs baseline linear in ln(parameters);\n"
        "             the size where it crosses zero with a 95%% CI, or 'no crossover in range'\n"
        "A baseline is of the same kernels (fused, reference, or a source's stack; a source\n"
        "that names no stack matches any), GPU, model, batch, lengths and energy definition.\n"
        "With --accuracy, the accuracy x energy view instead: J/1k tokens beside perplexity,\n"
        "KL and top-1 vs float32 (`ecocompute analyze --accuracy --help`).\n\n"
        "filters:\n"
        "  --model M       model name contains M (case-insensitive)\n"
        "  --precision P   precision is P (%s)\n"
        "  --kernels K     kernel family is K (fused, reference, or a source's stack such as\n"
        "                  bitsandbytes)\n"
        "  --gpu G         GPU name contains G (case-insensitive)\n"
        "  --max-meter-gap P  leave out runs whose energy counter and integrated power\n"
        "                  disagree by more than P %% (windows too short for the counter's\n"
        "                  ~100 ms steps, docs/measurement.md); runs without that check stay\n"
        "  --latest        of a configuration measured by several ecocompute commits, only the\n"
        "                  runs of the newest (by start time); runs without a commit stay\n"
        "options:\n"
        "  --db PATH       the results database (default path: %s)\n"
        "  --baseline P    baseline precision for deltas and crossovers (default fp16)\n"
        "  --table T       only table T (configs, deltas, ranking, scaling, crossover);\n"
        "                  needed with --format csv\n"
        "  --format F      table (default), json (one object keyed by table) or csv\n\n"
        "examples:\n"
        "  ecocompute analyze tests/data/seed-data/ecocompute-ai/data/a800_results\n"
        "  ecocompute analyze data/ --gpu 5090 --table crossover\n"
        "  ecocompute analyze batch_raw.csv --table scaling --format csv\n"
        "  ecocompute analyze --db results.db --model llama --baseline fp16\n"
        "  ecocompute analyze --db results.db --kernels fused --table crossover\n"
        "  ecocompute analyze --db results.db --max-meter-gap 5 --table crossover\n"
        "  ecocompute analyze docs/results --latest --gpu H200\n",
        ec_qformat_names(EC_QFORMAT_CUDA, ", ", precs, sizeof precs), ec_store_default_path());
}

/* ---- configurations ---------------------------------------------------------------- */

typedef struct {
    const ec_run_record *key;
    ec_summary e, tok, w; /* energy J/1k, tok/s, W */
    ec_summary req;       /* J per request (one sequence, prefill + decode), same definition */
    ec_summary cpu;       /* CPU package + DRAM (RAPL) J/1k tok, gross; n = 0 when not measured */
    const char *def;      /* "gross", "net", "unknown" or "mixed" */
    ec_energy_definition defv;
    double roofline_pct;     /* of the datasheet bandwidth bound */
    double roofline_cal_pct; /* of the calibrated read bandwidth bound (--db) */
} config;

/* tok/s of a configuration as % of what bandwidth bw (bytes/s) allows; NaN if unknown. */
static double roofline_pct(const config *c, double bw)
{
    ec_precision p;
    ec_roofline rf;
    if (!isfinite(bw) || c->key->batch < 1 || !(c->tok.mean > 0) ||
        ec_precision_from_text(c->key->precision, &p) ||
        ec_roofline_decode(ec_catalog_match(c->key->model), c->key->params_b, p, c->key->batch,
                           c->key->prompt_len, bw, &rf))
        return NAN;
    /* A model split over tp GPUs reads its shards at once, at tp times one GPU's bandwidth (the
     * head and norms every rank holds whole are counted once, as `run --energy` does). */
    return 100.0 * c->tok.mean / (rf.max_tok_s * ec_record_gpus(c->key));
}

static int build_configs(const ec_run_record *r, size_t n, config **out, size_t *nout)
{
    *out = NULL;
    *nout = 0;
    ec_config_group *g;
    size_t ng;
    if (ec_group_configs(r, n, &g, &ng)) return -1;
    config *c = calloc(ng ? ng : 1, sizeof *c);
    double *e = malloc((n ? n : 1) * sizeof *e), *t = malloc((n ? n : 1) * sizeof *t),
           *w = malloc((n ? n : 1) * sizeof *w), *q = malloc((n ? n : 1) * sizeof *q),
           *u = malloc((n ? n : 1) * sizeof *u);
    if (!c || !e || !t || !w || !q || !u) {
        free(c), free(e), free(t), free(w), free(q), free(u);
        ec_groups_free(g, ng);
        return ec_set_error("out of memory");
    }
    size_t k = 0;
    for (size_t i = 0; i < ng; i++) {
        const ec_run_record *key = g[i].key;
        if (ec_record_is_summary(key)) {
            int superseded = 0;
            for (size_t j = 0; j < ng && !superseded; j++)
                superseded = !ec_record_is_summary(g[j].key) &&
                             ec_records_match(g[j].key, key, EC_KEY_SUMMARY_OF);
            if (superseded) continue;
        }
        int defs[3] = {0, 0, 0};
        for (size_t j = 0; j < g[i].n; j++) {
            const ec_run_record *x = &r[g[i].rows[j]];
            ec_energy_definition d;
            e[j] = ec_record_energy_per_1k(x, &d);
            if (isfinite(e[j])) defs[d] = 1;
            t[j] = x->tok_s;
            w[j] = x->avg_power_w;
            q[j] = d == EC_ENERGY_NET ? x->j_per_request_net : x->j_per_request_gross;
            /* the CPU's energy of the run (prefill + decode) per 1000 generated tokens */
            u[j] = x->batch > 0 && x->gen_len > 0
                       ? (x->prefill.cpu_energy_j + x->decode.cpu_energy_j) * 1000.0 /
                             ((double)x->batch * x->gen_len)
                       : NAN;
        }
        config *cc = &c[k];
        cc->key = key;
        ec_summarize(e, g[i].n, &cc->e);
        ec_summarize(u, g[i].n, &cc->cpu);
        /* perplexity-only rows: nothing to analyse here; a CPU run with RAPL but no GPU has its
         * CPU energy (gross) */
        if (!cc->e.n && !cc->cpu.n) continue;
        if (!cc->e.n) defs[EC_ENERGY_GROSS] = 1;
        ec_summarize(t, g[i].n, &cc->tok);
        ec_summarize(w, g[i].n, &cc->w);
        ec_summarize(q, g[i].n, &cc->req);
        int kinds = defs[0] + defs[1] + defs[2];
        cc->defv = defs[0] ? EC_ENERGY_GROSS : defs[1] ? EC_ENERGY_NET : EC_ENERGY_UNKNOWN;
        cc->def = kinds > 1 ? "mixed" : ec_energy_definition_name(cc->defv);
        cc->roofline_pct = roofline_pct(cc, ec_gpu_peak_bandwidth(key->gpu_name));
        cc->roofline_cal_pct = NAN;
        k++;
    }
    free(e), free(t), free(w), free(q), free(u);
    ec_groups_free(g, ng);
    *out = c;
    *nout = k;
    return 0;
}

/* ---- tables --------------------------------------------------------------------------- */

#define NKEY 8 /* columns of key_columns */

/* Whether any configuration of c[0..n) splits its model over several GPUs: then the tables
 * keep their TP column however narrow (rows otherwise alike differ only there). */
static int any_split(const config *c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (ec_record_gpus(c[i].key) > 1) return 1;
    return 0;
}

static void key_columns(ec_table *t, int *cols, int split)
{
    cols[0] = ec_table_column(t, "source", "Source");
    cols[1] = ec_table_column(t, "gpu", "GPU");
    cols[2] = ec_table_column(t, "model", "Model");
    cols[3] = ec_table_column(t, "precision", "Precision");
    cols[4] = ec_table_column(t, "kernels", "Kernels");
    cols[5] = ec_table_column(t, "batch", "Batch");
    cols[6] = ec_table_column(t, "gen_tokens", "Gen (tok)");
    cols[7] = ec_table_column(t, "tp", "TP");
    ec_table_priority(t, cols[7], split ? 0 : 11);
    /* Narrow tables leave out the TP column first where no model is split, then the source file
     * (json/csv keep every column), then kernels, length. */
    ec_table_priority(t, cols[0], 10);
    ec_table_priority(t, cols[4], 6);
    ec_table_priority(t, cols[6], 5);
}

static void key_cells(ec_table *t, const int *cols, const ec_run_record *k)
{
    ec_table_text(t, cols[0], "%s", k->source);
    ec_table_text(t, cols[1], "%s", k->gpu_name);
    ec_table_text(t, cols[2], "%s", k->model);
    ec_table_text(t, cols[3], "%s", k->precision);
    ec_table_text(t, cols[4], "%s", k->kernels);
    if (k->batch > 0) ec_table_number(t, cols[5], "%.0f", k->batch);
    if (k->gen_len > 0) ec_table_number(t, cols[6], "%.0f", k->gen_len);
    ec_table_number(t, cols[7], "%.0f", (double)ec_record_gpus(k));
}

static ec_table *table_configs(const config *c, size_t n)
{
    ec_table *t = ec_table_new();
    int k[NKEY];
    key_columns(t, k, any_split(c, n));
    int c_kind = ec_table_column(t, "kind", "Kind");
    int c_n = ec_table_column(t, "n", "n");
    int c_def = ec_table_column(t, "energy_definition", "Energy def");
    /* With CPU energy measured (RAPL) the GPU's, the CPU's and their sum are each labelled. */
    int cpu = 0;
    for (size_t i = 0; i < n; i++) cpu |= c[i].cpu.n > 0;
    int c_mean = ec_table_column(t, "energy_j_per_1k_mean", cpu ? "GPU J/1k tok" : "J/1k tok");
    int c_cpu = cpu ? ec_table_column(t, "cpu_j_per_1k_mean", "CPU J/1k tok") : -1;
    int c_sum = cpu ? ec_table_column(t, "gpu_cpu_j_per_1k_mean", "GPU+CPU J/1k") : -1;
    int c_sd = ec_table_column(t, "energy_j_per_1k_sd", "sd (J/1k)");
    int c_cv = ec_table_column(t, "energy_cv_pct", "CV (%)");
    int c_lo = ec_table_column(t, "energy_ci95_lo", "95% CI lo (J/1k)");
    int c_hi = ec_table_column(t, "energy_ci95_hi", "95% CI hi (J/1k)");
    int c_req = ec_table_column(t, "j_per_request_mean", "J/request");
    int c_tok = ec_table_column(t, "tok_per_s_mean", "tok/s");
    int c_w = ec_table_column(t, "power_w_mean", "Power (W)");
    int c_rf = ec_table_column(t, "roofline_datasheet_pct", "Roofline (% datasheet BW)");
    int c_rc = ec_table_column(t, "roofline_calibrated_pct", "Roofline (% calibrated BW)");
    ec_table_priority(t, c_lo, 9);
    ec_table_priority(t, c_hi, 9);
    ec_table_priority(t, c_rc, 8);
    ec_table_priority(t, c_sd, 7);
    ec_table_priority(t, c_req, 4);
    ec_table_priority(t, c_kind, 3);
    ec_table_priority(t, c_w, 2);
    ec_table_priority(t, c_rf, 1);
    for (size_t i = 0; i < n; i++) {
        ec_table_row(t);
        key_cells(t, k, c[i].key);
        ec_table_text(t, c_kind, "%s", ec_record_is_summary(c[i].key) ? "summary" : "runs");
        ec_table_number(t, c_n, "%.0f", (double)(c[i].e.n ? c[i].e.n : c[i].cpu.n));
        ec_table_text(t, c_def, "%s", c[i].def);
        ec_table_number(t, c_mean, "%.1f", c[i].e.mean);
        if (cpu && c[i].cpu.n) {
            ec_table_number(t, c_cpu, "%.1f", c[i].cpu.mean);
            /* a sum of two gross figures; a net GPU figure has no CPU counterpart to add */
            if (c[i].defv == EC_ENERGY_GROSS && c[i].e.n)
                ec_table_number(t, c_sum, "%.1f", c[i].e.mean + c[i].cpu.mean);
        }
        ec_table_number(t, c_sd, "%.1f", c[i].e.sd);
        ec_table_number(t, c_cv, "%.2f", c[i].e.cv_pct);
        ec_table_number(t, c_lo, "%.1f", c[i].e.ci_lo);
        ec_table_number(t, c_hi, "%.1f", c[i].e.ci_hi);
        if (c[i].req.n) ec_table_number(t, c_req, "%.2f", c[i].req.mean);
        ec_table_number(t, c_tok, "%.2f", c[i].tok.mean);
        ec_table_number(t, c_w, "%.1f", c[i].w.mean);
        ec_table_number(t, c_rf, "%.1f", c[i].roofline_pct);
        ec_table_number(t, c_rc, "%.1f", c[i].roofline_cal_pct);
    }
    return t;
}

/* The baseline configuration for c: baseline precision, same kernel family, GPU, model, batch,
 * lengths and energy definition; the same kernels named (not an unnamed stack) first, then the
 * same folder of the same source, then runs before summaries. */
static const config *baseline_of(const config *c, const config *all, size_t n, const char *base)
{
    const config *best = NULL;
    int best_score = -1;
    for (size_t i = 0; i < n; i++) {
        const ec_run_record *a = c->key, *b = all[i].key;
        if (strcmp(b->precision, base) || !ec_records_match(a, b, EC_KEY_BASELINE) ||
            strcmp(c->def, all[i].def) || !strcmp(c->def, "mixed"))
            continue;
        int score = 4 * !strcmp(a->kernels, b->kernels) +
                    2 * ec_same_source_folder(a->source, b->source) +
                    !ec_record_is_summary(b);
        if (score > best_score) {
            best = &all[i];
            best_score = score;
        }
    }
    return best;
}

typedef struct {
    const config *c, *b;
    ec_welch w;
} delta;

static ec_table *table_deltas(const delta *d, size_t n, const char *base)
{
    ec_table *t = ec_table_new();
    int k[NKEY], split = 0;
    for (size_t i = 0; i < n; i++)
        split |= ec_record_gpus(d[i].c->key) > 1;
    key_columns(t, k, split);
    int c_def = ec_table_column(t, "energy_definition", "Energy def");
    int c_vs = ec_table_column(t, "baseline_source", "Baseline source");
    int c_nb = ec_table_column(t, "n", "n (vs base)");
    int c_d = ec_table_column(t, "delta_j_per_1k", "Δ J/1k");
    int c_p = ec_table_column(t, "delta_pct", "Δ (%)");
    int c_lo = ec_table_column(t, "delta_pct_ci95_lo", "95% CI lo (%)");
    int c_hi = ec_table_column(t, "delta_pct_ci95_hi", "95% CI hi (%)");
    int c_df = ec_table_column(t, "welch_df", "Welch df");
    int c_pv = ec_table_column(t, "welch_p", "p (Welch)");
    ec_table_priority(t, c_vs, 10);
    ec_table_priority(t, c_df, 9);
    ec_table_priority(t, c_d, 8);
    ec_table_priority(t, c_def, 4);
    ec_table_priority(t, c_nb, 3);
    for (size_t i = 0; i < n; i++) {
        ec_table_row(t);
        key_cells(t, k, d[i].c->key);
        ec_table_text(t, c_def, "%s", d[i].c->def);
        /* Say so when one side's source named no stack (ec_kernels_comparable). */
        const char *bk = d[i].b->key->kernels;
        if (!strcmp(bk, d[i].c->key->kernels))
            ec_table_text(t, c_vs, "%s (%s)", d[i].b->key->source, base);
        else
            ec_table_text(t, c_vs, "%s (%s, kernels %s)", d[i].b->key->source, base,
                          bk[0] ? bk : "unnamed");
        ec_table_text(t, c_nb, "%zu vs %zu", d[i].c->e.n, d[i].b->e.n);
        ec_table_number(t, c_d, "%+.1f", d[i].w.diff);
        ec_table_number(t, c_p, "%+.1f", d[i].w.pct);
        ec_table_number(t, c_lo, "%+.1f", d[i].w.pct_lo);
        ec_table_number(t, c_hi, "%+.1f", d[i].w.pct_hi);
        ec_table_number(t, c_df, "%.1f", d[i].w.df);
        ec_table_number(t, c_pv, "%.3g", d[i].w.p);
    }
    return t;
}

static int by_rank(const void *x, const void *y)
{
    const config *a = *(const config *const *)x, *b = *(const config *const *)y;
    int s;
    if ((s = strcmp(a->key->gpu_name, b->key->gpu_name))) return s;
    if ((s = strcmp(a->key->model, b->key->model))) return s;
    if (a->key->batch != b->key->batch) return a->key->batch < b->key->batch ? -1 : 1;
    if ((s = strcmp(a->def, b->def))) return s;
    return (a->e.mean > b->e.mean) - (a->e.mean < b->e.mean);
}

static ec_table *table_ranking(const config *c, size_t n)
{
    ec_table *t = ec_table_new();
    int c_rank = ec_table_column(t, "rank", "Rank");
    int k[NKEY];
    key_columns(t, k, any_split(c, n));
    int c_def = ec_table_column(t, "energy_definition", "Energy def");
    int c_e = ec_table_column(t, "energy_j_per_1k_mean", "J/1k tok");
    int c_x = ec_table_column(t, "vs_best_pct", "vs best (%)");
    const config **s = malloc((n ? n : 1) * sizeof *s);
    if (!s) return t;
    size_t m = 0; /* configurations with GPU energy: CPU-only ones have nothing to rank by */
    for (size_t i = 0; i < n; i++)
        if (c[i].e.n) s[m++] = &c[i];
    n = m;
    qsort(s, n, sizeof *s, by_rank);
    int rank = 0;
    double best = NAN;
    for (size_t i = 0; i < n; i++) {
        const config *p = i ? s[i - 1] : NULL;
        /* a new comparison: GPU, model, batch and definition */
        if (!p || strcmp(p->key->gpu_name, s[i]->key->gpu_name) ||
            strcmp(p->key->model, s[i]->key->model) || p->key->batch != s[i]->key->batch ||
            strcmp(p->def, s[i]->def)) {
            rank = 0;
            best = s[i]->e.mean;
        }
        ec_table_row(t);
        ec_table_number(t, c_rank, "%.0f", ++rank);
        key_cells(t, k, s[i]->key);
        ec_table_text(t, c_def, "%s", s[i]->def);
        ec_table_number(t, c_e, "%.1f", s[i]->e.mean);
        ec_table_number(t, c_x, "%+.1f", 100.0 * (s[i]->e.mean / best - 1.0));
    }
    free(s);
    return t;
}

/* Batch scaling: per source folder, GPU, model, precision, kernels, lengths and definition, every
 * value of every configuration (runs, or summary means) against its batch size. */
static ec_table *table_scaling(const config *c, size_t n, const ec_run_record *r, size_t nr)
{
    ec_table *t = ec_table_new();
    int c_src = ec_table_column(t, "source", "Source");
    int c_gpu = ec_table_column(t, "gpu", "GPU");
    int c_model = ec_table_column(t, "model", "Model");
    int c_prec = ec_table_column(t, "precision", "Precision");
    int c_kern = ec_table_column(t, "kernels", "Kernels");
    int c_tp = ec_table_column(t, "tp", "TP");
    int c_def = ec_table_column(t, "energy_definition", "Energy def");
    int c_b = ec_table_column(t, "batches", "Batches");
    int c_n = ec_table_column(t, "n", "n");
    int c_a = ec_table_column(t, "a_j_per_1k", "a (J/1k at B=1)");
    int c_bb = ec_table_column(t, "b", "b (exponent)");
    int c_blo = ec_table_column(t, "b_ci95_lo", "b 95% lo");
    int c_bhi = ec_table_column(t, "b_ci95_hi", "b 95% hi");
    int c_r2 = ec_table_column(t, "r2", "R²");
    ec_table_priority(t, c_tp, any_split(c, n) ? 0 : 11);
    ec_table_priority(t, c_src, 10);
    ec_table_priority(t, c_blo, 7);
    ec_table_priority(t, c_bhi, 7);
    ec_table_priority(t, c_kern, 6);
    ec_table_priority(t, c_def, 4);
    ec_table_priority(t, c_n, 3);
    char *done = calloc(n ? n : 1, 1);
    double *x = malloc((nr ? nr : 1) * sizeof *x), *y = malloc((nr ? nr : 1) * sizeof *y);
    if (!done || !x || !y) goto out;
    for (size_t i = 0; i < n; i++) {
        if (done[i] || c[i].key->batch < 1) continue;
        const ec_run_record *a = c[i].key;
        ec_run_key ka = ec_run_key_of(a);
        size_t m = 0;
        int bmin = a->batch, bmax = a->batch, distinct = 0;
        for (size_t j = i; j < n; j++) {
            const ec_run_record *b = c[j].key;
            ec_run_key kb = ec_run_key_of(b);
            if (b->batch < 1 || !ec_run_key_equal(&ka, &kb, EC_KEY_BATCH_SERIES) ||
                strcmp(c[i].def, c[j].def))
                continue;
            done[j] = 1;
            distinct++;
            bmin = b->batch < bmin ? b->batch : bmin;
            bmax = b->batch > bmax ? b->batch : bmax;
            for (size_t q = 0; q < nr; q++)
                if (ec_same_config(&r[q], b)) {
                    ec_energy_definition d;
                    x[m] = b->batch;
                    y[m++] = ec_record_energy_per_1k(&r[q], &d);
                }
        }
        ec_power_fit f;
        if (distinct < 3 || ec_fit_power_law(x, y, m, &f)) continue; /* a law needs 3 sizes */
        ec_table_row(t);
        ec_table_text(t, c_src, "%s", a->source);
        ec_table_text(t, c_gpu, "%s", a->gpu_name);
        ec_table_text(t, c_model, "%s", a->model);
        ec_table_text(t, c_prec, "%s", a->precision);
        ec_table_text(t, c_kern, "%s", a->kernels);
        ec_table_number(t, c_tp, "%.0f", (double)ec_record_gpus(a));
        ec_table_text(t, c_def, "%s", c[i].def);
        ec_table_text(t, c_b, "%d sizes, %d-%d", distinct, bmin, bmax);
        ec_table_number(t, c_n, "%.0f", (double)f.n);
        ec_table_number(t, c_a, "%.1f", f.a);
        ec_table_number(t, c_bb, "%.3f", f.b);
        ec_table_number(t, c_blo, "%.3f", f.b_lo);
        ec_table_number(t, c_bhi, "%.3f", f.b_hi);
        ec_table_number(t, c_r2, "%.4f", f.r2);
    }
out:
    free(done), free(x), free(y);
    return t;
}

/* Crossover: per GPU, kernels, precision, batch and definition, Δ% vs baseline against model
 * size. One kernel family per fit: a fused 7B point next to a reference 1B point would fit the
 * difference between the families, not the effect of size. */
static ec_table *table_crossover(const delta *d, size_t n)
{
    ec_table *t = ec_table_new();
    int c_gpu = ec_table_column(t, "gpu", "GPU");
    int c_kern = ec_table_column(t, "kernels", "Kernels");
    int c_prec = ec_table_column(t, "precision", "Precision");
    int c_bs = ec_table_column(t, "batch", "Batch");
    int c_def = ec_table_column(t, "energy_definition", "Energy def");
    int c_n = ec_table_column(t, "sizes", "Sizes");
    int c_rng = ec_table_column(t, "range_b", "Range (B params)");
    int c_sl = ec_table_column(t, "slope_pct_per_ln_b", "Slope (%/ln B)");
    int c_x = ec_table_column(t, "crossover_b", "Crossover (B params)");
    int c_lo = ec_table_column(t, "crossover_ci95_lo_b", "95% lo (B)");
    int c_hi = ec_table_column(t, "crossover_ci95_hi_b", "95% hi (B)");
    int c_r2 = ec_table_column(t, "r2", "R²");
    int c_v = ec_table_column(t, "verdict", "Verdict");
    ec_table_priority(t, c_kern, 6);
    ec_table_priority(t, c_sl, 5);
    ec_table_priority(t, c_rng, 4);
    ec_table_priority(t, c_def, 3);
    ec_table_priority(t, c_n, 2);
    ec_table_wrap(t, c_v);
    char *done = calloc(n ? n : 1, 1);
    double *x = malloc((n ? n : 1) * sizeof *x), *y = malloc((n ? n : 1) * sizeof *y);
    if (!done || !x || !y) goto out;
    for (size_t i = 0; i < n; i++) {
        if (done[i]) continue;
        const ec_run_record *a = d[i].c->key;
        size_t m = 0, sizes = 0;
        for (size_t j = i; j < n; j++) {
            const ec_run_record *b = d[j].c->key;
            if (strcmp(a->gpu_name, b->gpu_name) || strcmp(a->kernels, b->kernels) ||
                strcmp(a->precision, b->precision) || a->batch != b->batch ||
                strcmp(d[i].c->def, d[j].c->def))
                continue;
            done[j] = 1;
            if (!(b->params_b > 0) || !isfinite(d[j].w.pct)) continue;
            int seen = 0;
            for (size_t q = 0; q < m; q++) seen |= x[q] == b->params_b;
            sizes += !seen;
            x[m] = b->params_b;
            y[m++] = d[j].w.pct;
        }
        ec_crossover cr;
        if (sizes < 2 || ec_fit_crossover(x, y, m, &cr)) continue;
        ec_table_row(t);
        ec_table_text(t, c_gpu, "%s", a->gpu_name);
        ec_table_text(t, c_kern, "%s", a->kernels);
        ec_table_text(t, c_prec, "%s", a->precision);
        if (a->batch > 0) ec_table_number(t, c_bs, "%.0f", a->batch);
        ec_table_text(t, c_def, "%s", d[i].c->def);
        ec_table_number(t, c_n, "%.0f", (double)sizes);
        ec_table_text(t, c_rng, "%.2f-%.2f", cr.min_b, cr.max_b);
        ec_table_number(t, c_sl, "%+.2f", cr.line.slope);
        if (cr.found) {
            ec_table_number(t, c_x, "%.2f", cr.params_b);
            ec_table_number(t, c_lo, "%.2f", cr.lo_b);
            ec_table_number(t, c_hi, "%.2f", cr.hi_b);
        }
        ec_table_number(t, c_r2, "%.3f", cr.line.r2);
        ec_table_text(t, c_v, "%s", cr.found ? "crossover in range"
                                    : cr.line.intercept + cr.line.slope * log(cr.min_b) > 0
                                        ? "no crossover in range (costs more)"
                                               : "no crossover in range (saves)");
    }
out:
    free(done), free(x), free(y);
    return t;
}

/* With the database: % of the roofline at the GPU's measured read bandwidth, for configurations
 * whose GPU (by UUID) has a calibration. Without one the column stays empty. */
static void calibrated_rooflines(const char *cmd, const char *db, config *c, size_t n)
{
    ec_store *s;
    if (ec_store_open(&s, db, 1)) {
        cli_fail(cmd, "%s (no calibrated rooflines)", ec_last_error());
        return;
    }
    for (size_t i = 0; i < n; i++) {
        ec_calibration cal;
        if (!c[i].key->gpu_uuid[0] || ec_store_latest_calibration(s, c[i].key->gpu_uuid, &cal))
            continue;
        c[i].roofline_cal_pct = roofline_pct(&c[i], cal.read.rate);
    }
    ec_store_close(s);
}

/* ---- command -------------------------------------------------------------------------- */

/* Why table k (table_names order) has no row, in one line: what was read and what the table
 * needs, so an empty table never stands without a reason. */
static void why_empty(int k, size_t nall, size_t n, const config *c, size_t nc, size_t nshow,
                      size_t nd, const char *base, char *buf, size_t len)
{
    if (nshow == 0) {
        if (nall == 0)
            snprintf(buf, len, "no records were read");
        else if (n == 0)
            snprintf(buf, len, "none of the %zu records matches the filters", nall);
        else if (nc == 0)
            snprintf(buf, len,
                     "none of the %zu records has an energy figure (no GPU was metered and the "
                     "CPU's RAPL energy was unreadable); `ecocompute export --summary` shows their "
                     "tok/s", n);
        else
            snprintf(buf, len, "no configuration matches --precision/--kernels");
        return;
    }
    size_t ngpu = 0;
    for (size_t i = 0; i < nc; i++) ngpu += c[i].e.n > 0;
    if (ngpu == 0) {
        snprintf(buf, len,
                 "the %zu configurations have CPU energy only (no GPU was metered): this table "
                 "compares GPU energy; their CPU J/1k tok is in the first table", nc);
        return;
    }
    size_t nbase = 0, maxb = 0, maxsizes = 0;
    for (size_t i = 0; i < nc; i++) {
        nbase += !strcmp(c[i].key->precision, base);
        /* the most batch sizes (scaling) and model sizes (crossover) of one comparison */
        size_t batches = 0, sizes = 0;
        for (size_t j = 0; j < nc; j++) {
            const ec_run_record *a = c[i].key, *b = c[j].key;
            int same = !strcmp(a->gpu_name, b->gpu_name) && !strcmp(a->precision, b->precision);
            int first_b = 1, first_s = 1;
            for (size_t q = 0; q < j; q++) {
                const ec_run_record *x = c[q].key;
                if (strcmp(a->gpu_name, x->gpu_name) || strcmp(a->precision, x->precision))
                    continue;
                first_b &= !(x->batch == b->batch && !strcmp(x->model, b->model));
                first_s &= !(x->params_b == b->params_b && x->batch == b->batch);
            }
            batches += same && !strcmp(a->model, b->model) && first_b;
            sizes += same && a->batch == b->batch && b->params_b > 0 && first_s;
        }
        if (batches > maxb) maxb = batches;
        if (sizes > maxsizes) maxsizes = sizes;
    }
    if (k == 1 || k == 4) {
        if (nbase == 0)
            snprintf(buf, len,
                     "no %s configuration to compare with: %s needs the baseline precision "
                     "measured on the same GPU, model, batch and lengths (--baseline P picks "
                     "another)",
                     base, k == 1 ? "each delta" : "the crossover fit");
        else if (nbase == nc)
            snprintf(buf, len, "only %s configurations: %s needs a second precision", base,
                     k == 1 ? "a delta" : "the crossover fit");
        else if (k == 1 || nd == 0)
            snprintf(buf, len,
                     "no configuration has a %s baseline of the same GPU, model, kernels, batch, "
                     "lengths and energy definition", base);
        else
            snprintf(buf, len,
                     "no precision has deltas at 2 or more model sizes of one GPU and batch (most: "
                     "%zu): the crossover fits Δ%% against ln(parameters)", maxsizes);
    } else if (k == 3) {
        snprintf(buf, len,
                 "no configuration was measured at 3 or more batch sizes (most: %zu): the law "
                 "a·B^-b needs three batch sizes of one GPU, model, precision and lengths",
                 maxb);
    } else {
        snprintf(buf, len, "no configuration to show");
    }
}

static const char *const table_names[] = {"configs", "deltas", "ranking", "scaling", "crossover"};
#define NTABLES 5

typedef struct {
    analyze_selection sel;
    double max_gap; /* largest |meter disagreement| in % a run may have; NaN: any */
} filters;

/* Records the analysis needs: those the filters select, and, with --precision or --kernels, the
 * baseline rows their deltas compare against (an unlabelled-stack fp16 row,
 * ec_kernels_comparable). */
static int keep_record(const ec_run_record *r, const filters *f)
{
    int is_base = !strcmp(r->precision, f->sel.base);
    /* NaN on either side compares false: no limit, or a run without the cross-check */
    if (fabs(r->disagreement_pct) > f->max_gap) return 0;
    return (!f->sel.model || cli_icontains(r->model, f->sel.model)) &&
           (!f->sel.gpu || cli_icontains(r->gpu_name, f->sel.gpu)) &&
           (!f->sel.prec || !strcmp(r->precision, f->sel.prec) || is_base) &&
           (!f->sel.kernels || !strcmp(r->kernels, f->sel.kernels) || (is_base && !r->kernels[0]));
}

/* Configurations the tables show: exactly what --precision and --kernels ask for. */
static int shown_config(const ec_run_record *k, const filters *f)
{
    return (!f->sel.prec || !strcmp(k->precision, f->sel.prec)) &&
           (!f->sel.kernels || !strcmp(k->kernels, f->sel.kernels));
}

int cmd_analyze(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--accuracy")) return cli_analyze_accuracy(argc, argv);
    ec_format fmt = EC_FORMAT_TABLE;
    filters f = {.sel.base = "fp16", .max_gap = NAN};
    int only = -1;
    cli_dataset_args ds;
    if (cli_dataset_args_init(CMD, &ds, argc)) return EXIT_FAIL;
    int rc = EXIT_USAGE;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage();
            cli_dataset_args_free(&ds);
            return EXIT_OK;
        }
        int took = analyze_selection_arg(&f.sel, argc, argv, &i);
        if (took < 0) goto out;
        if (took) continue;
        int takes = !strcmp(a, "--format") || !strcmp(a, "--table") ||
                    !strcmp(a, "--max-meter-gap");
        if (takes && i + 1 >= argc) {
            cli_usage_error(CMD, "%s needs a value", a);
            goto out;
        }
        if (!strcmp(a, "--format")) {
            if (cli_parse_format(CMD, argv[++i], &fmt)) goto out;
        } else if (!strcmp(a, "--max-meter-gap")) {
            if (cli_parse_double(CMD, a, argv[++i], 0, 1e6, &f.max_gap)) goto out;
        } else if (!strcmp(a, "--table")) {
            const char *v = argv[++i];
            for (int k = 0; k < NTABLES; k++)
                if (!strcmp(v, table_names[k])) only = k;
            if (only < 0) {
                cli_usage_error(CMD, "--table must be configs, deltas, ranking, scaling or "
                                     "crossover, got '%s'", v);
                goto out;
            }
        } else if (cli_dataset_arg(CMD, &ds, argc, argv, &i)) {
            goto out;
        }
    }
    if (cli_dataset_args_check(CMD, &ds, "analyse")) goto out;
    if (fmt == EC_FORMAT_CSV && only < 0) {
        cli_usage_error(CMD, "--format csv prints one table: add --table NAME");
        goto out;
    }
    ec_run_record *all;
    size_t nall;
    char from[4096];
    rc = EXIT_FAIL;
    if (cli_dataset_args_load(CMD, &ds, &all, &nall, from, sizeof from)) goto out;
    if (f.sel.latest && cli_records_latest(CMD, all, &nall)) {
        free(all);
        goto out;
    }
    /* The filters select records; --precision and --kernels keep the baseline so deltas still
     * have one. */
    size_t n = 0;
    for (size_t i = 0; i < nall; i++)
        if (keep_record(&all[i], &f)) all[n++] = all[i];
    config *c = NULL;
    size_t nc = 0;
    if (build_configs(all, n, &c, &nc)) {
        cli_fail(CMD, "%s", ec_last_error());
        free(all);
        goto out;
    }
    if (ds.db) calibrated_rooflines(CMD, ds.db, c, nc);
    delta *d = malloc((nc ? nc : 1) * sizeof *d);
    size_t nd = 0;
    for (size_t i = 0; d && i < nc; i++) {
        /* deltas, and the crossovers fitted to them, compare GPU energy */
        if (!strcmp(c[i].key->precision, f.sel.base) || !shown_config(c[i].key, &f) || !c[i].e.n)
            continue;
        const config *b = baseline_of(&c[i], c, nc, f.sel.base);
        if (!b) continue;
        d[nd].c = &c[i];
        d[nd].b = b;
        /* The test needs n ≥ 2 on both sides; Δ% alone is still reported without it. */
        ec_welch_test(&c[i].e, &b->e, &d[nd].w);
        nd++;
    }
    /* --precision, --kernels: the baseline's own rows served the deltas; the tables show what
     * was asked. */
    size_t nshow = 0;
    for (size_t i = 0; i < nc; i++)
        if (shown_config(c[i].key, &f)) nshow++;
    config *shown = malloc((nshow ? nshow : 1) * sizeof *shown);
    if (!d || !shown) {
        rc = cli_fail(CMD, "out of memory");
    } else {
        nshow = 0;
        for (size_t i = 0; i < nc; i++)
            if (shown_config(c[i].key, &f)) shown[nshow++] = c[i];
        ec_table *t[NTABLES] = {
            table_configs(shown, nshow), table_deltas(d, nd, f.sel.base), table_ranking(shown, nshow),
            table_scaling(shown, nshow, all, n), table_crossover(d, nd)};
        static const char *const titles[] = {
            "Configurations (energy per 1000 generated tokens)",
            "Δ energy vs baseline (95% CI; Welch's t-test)", "Ranking by energy",
            "Batch-size scaling: energy/1k tok ≈ a·B^-b", "Crossover model size (Δ% vs baseline = 0)"};
        if (fmt == EC_FORMAT_JSON && only < 0) fputs("{", stdout);
        for (int k = 0, first = 1; k < NTABLES; k++) {
            if (only >= 0 && k != only) continue;
            if (fmt == EC_FORMAT_JSON && only < 0) {
                printf("%s\"%s\":", first ? "" : ",", table_names[k]);
            } else if (fmt == EC_FORMAT_TABLE) {
                printf("%s== %s ==\n", first ? "" : "\n", titles[k]);
                if (!ec_table_rows(t[k])) {
                    char why[512];
                    why_empty(k, nall, n, c, nc, nshow, nd, f.sel.base, why, sizeof why);
                    cli_wrapped(stdout, "(none: ", "%s)", why);
                    first = 0;
                    continue;
                }
            }
            ec_table_print(t[k], fmt, stdout);
            first = 0;
        }
        if (fmt == EC_FORMAT_JSON && only < 0) fputs("}\n", stdout);
        for (int k = 0; k < NTABLES; k++) ec_table_free(t[k]);
        fprintf(stderr, "%zu records from %s: %zu configurations, %zu deltas vs %s\n", n, from,
                nshow, nd, f.sel.base);
        rc = EXIT_OK;
    }
    free(shown);
    free(d);
    free(c);
    free(all);
out:
    cli_dataset_args_free(&ds);
    return rc;
}
