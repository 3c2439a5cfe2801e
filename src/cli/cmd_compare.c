/* cmd_compare.c — `ecocompute compare BASE NEW`: the energy-regression gate. For every
 * configuration measured in both datasets: Δ energy per 1000 tokens and Δ decode tok/s, Welch's
 * t-test and a confidence interval of each, and a verdict; exits 1 when any configuration uses
 * significantly more energy than --max-regression allows, so CI can fail a change on it. */
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dataset_args.h"
#include "ecocompute/analysis.h"

#define CMD "compare"

static void usage(void)
{
    printf(
        "usage: ecocompute compare BASE NEW [--max-regression PCT] [--alpha A] [--energy "
        "gross|net]\n"
        "                          [--format table|md|json|csv]\n\n"
        "BASE and NEW are results databases, export files (CSV/JSON) or folders of exports.\n"
        "Configurations (GPU, model, precision, kernels, batch, prompt and generation length)\n"
        "measured in both are compared run against run: mean energy per 1000 generated tokens\n"
        "(J, gross by default; net = idle-subtracted) and decode tok/s, each with the change in\n"
        "%%, a (1 - alpha) confidence interval and Welch's t-test p-value. Verdicts (energy):\n"
        "  worse                  p < alpha and the energy rose by more than --max-regression\n"
        "  better                 p < alpha and the energy fell by more than --max-regression\n"
        "  within threshold       p < alpha, but the change is within +-max-regression\n"
        "  no significant change  p >= alpha\n"
        "  too few runs           fewer than 2 runs on a side (no variance, no test)\n"
        "(the table says WORSE, better, within, no change, too few). Configurations are\n"
        "labelled MODEL PRECISION KERNELS bBATCH PROMPT+GEN; J/1k = J per 1000 generated tokens.\n"
        "Exit status: 1 when any configuration is 'worse' (or nothing could be compared),\n"
        "0 otherwise, 2 on a usage error. Configurations in only one dataset are counted on\n"
        "stderr, not compared.\n\n"
        "  --max-regression PCT  tolerated energy increase, %% (default 5)\n"
        "  --alpha A             significance level of the tests and 1 - CI level (default 0.05)\n"
        "  --energy gross|net    which energy to compare (default gross: what the board drew)\n"
        "  --format F            table (default), md (a comment-ready summary), json or csv\n\n"
        "examples:\n"
        "  ecocompute compare base.db change.db\n"
        "  ecocompute compare base.csv change.csv --max-regression 3 --format md >comment.md\n"
        "  ecocompute compare results/main/ results/pr-123/ --format json\n");
}

typedef enum { V_TOO_FEW = 0, V_UNCHANGED, V_WITHIN, V_BETTER, V_WORSE } verdict;
static const char *const verdict_names[] = {"too few runs", "no significant change",
                                            "within threshold", "better", "worse"};
/* The terminal table's shorter words for the same verdicts (it must fit 120 columns). */
static const char *const verdict_short[] = {"too few", "no change", "within", "better", "WORSE"};

/* One side's change: NEW vs BASE, with its test. */
typedef struct {
    ec_summary base, now;
    int tested;               /* Welch test possible (n >= 2 each, nonzero spread) */
    double delta, pct;        /* mean(new) - mean(base); 100 * delta / mean(base) */
    double pct_lo, pct_hi, p; /* (1 - alpha) CI of pct; two-sided p */
} change;

typedef struct {
    const ec_run_record *key;
    change energy, tok;
    verdict v;
} row;

typedef struct {
    double max_regression_pct, alpha;
    int net;
    int markdown;
    ec_format fmt;
} options;

/* Energy per 1000 tokens of a run in the requested definition; NaN when it has none. */
static double energy_of(const ec_run_record *r, int net)
{
    double own = net ? r->j_per_1k_net : r->j_per_1k_gross;
    if (isfinite(own)) return own;
    ec_energy_definition d;
    double v = ec_record_energy_per_1k(r, &d);
    return d == (net ? EC_ENERGY_NET : EC_ENERGY_GROSS) ? v : NAN;
}

/* Values of one configuration's runs (summary rows stand for no runs). */
static size_t collect(const ec_run_record *r, size_t n, const ec_run_record *key, int net,
                      int energy, double *out)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!ec_record_is_summary(&r[i]) && ec_records_match(&r[i], key, EC_KEY_ACROSS_DATASETS))
            out[m++] = energy ? energy_of(&r[i], net) : r[i].tok_s;
    return m;
}

/* Welch's test of new against base, with the CI at level 1 - alpha: the difference's CI from
 * the Welch-Satterthwaite t quantile, the ratio's by the delta method (both means uncertain). */
static void compare_values(const double *base, size_t nb, const double *now, size_t nn,
                           double alpha, change *c)
{
    memset(c, 0, sizeof *c);
    ec_summarize(base, nb, &c->base);
    ec_summarize(now, nn, &c->now);
    c->delta = c->now.mean - c->base.mean;
    c->pct = c->base.mean != 0 ? 100.0 * c->delta / c->base.mean : NAN;
    c->pct_lo = c->pct_hi = c->p = NAN;
    ec_welch w;
    if (ec_welch_test(&c->now, &c->base, &w) != 0) return;
    c->tested = 1;
    c->p = w.p;
    double t = ec_t_quantile(1.0 - alpha / 2.0, w.df);
    double ratio = c->now.mean / c->base.mean;
    double rel = sqrt(pow(c->now.se / c->now.mean, 2) + pow(c->base.se / c->base.mean, 2));
    c->pct_lo = 100.0 * (ratio * (1.0 - t * rel) - 1.0);
    c->pct_hi = 100.0 * (ratio * (1.0 + t * rel) - 1.0);
}

static verdict judge(const change *e, const options *o)
{
    if (!e->tested) return V_TOO_FEW;
    if (!(e->p < o->alpha)) return V_UNCHANGED;
    if (e->pct > o->max_regression_pct) return V_WORSE;
    if (e->pct < -o->max_regression_pct) return V_BETTER;
    return V_WITHIN;
}

/* The configurations of BASE that NEW also has, compared. *only_base / *only_new count the rest. */
static int build_rows(const ec_run_record *b, size_t nb, const ec_run_record *w, size_t nw,
                      const options *o, row **out, size_t *nout, size_t *only_base,
                      size_t *only_new)
{
    ec_config_group *gb, *gw;
    size_t ngb, ngw;
    if (ec_group_configs(b, nb, &gb, &ngb) != 0) return -1;
    if (ec_group_configs(w, nw, &gw, &ngw) != 0) {
        ec_groups_free(gb, ngb);
        return -1;
    }
    size_t most = nb > nw ? nb : nw;
    row *rows = calloc(ngb ? ngb : 1, sizeof *rows);
    double *xb = malloc((most ? most : 1) * sizeof *xb),
           *xw = malloc((most ? most : 1) * sizeof *xw);
    const ec_run_record **seen = calloc(ngb ? ngb : 1, sizeof *seen);
    int rc = rows && xb && xw && seen ? 0 : ec_set_error("out of memory");
    size_t n = 0, nseen = 0;
    *only_base = *only_new = 0;
    /* ec_group_configs also splits by source and summary-ness; configurations are merged here. */
    for (size_t g = 0; rc == 0 && g < ngb; g++) {
        const ec_run_record *k = gb[g].key;
        int dup = 0;
        for (size_t s = 0; s < nseen && !dup; s++)
            dup = ec_records_match(seen[s], k, EC_KEY_ACROSS_DATASETS);
        if (dup) continue;
        seen[nseen++] = k;
        size_t mw = collect(w, nw, k, o->net, 1, xw);
        if (mw == 0) {
            (*only_base)++;
            continue;
        }
        size_t mb = collect(b, nb, k, o->net, 1, xb);
        row *r = &rows[n++];
        r->key = k;
        compare_values(xb, mb, xw, mw, o->alpha, &r->energy);
        collect(b, nb, k, o->net, 0, xb);
        collect(w, nw, k, o->net, 0, xw);
        compare_values(xb, mb, xw, mw, o->alpha, &r->tok);
        r->v = judge(&r->energy, o);
    }
    for (size_t g = 0; rc == 0 && g < ngw; g++) {
        int found = 0;
        for (size_t s = 0; s < nseen && !found; s++)
            found = ec_records_match(seen[s], gw[g].key, EC_KEY_ACROSS_DATASETS);
        if (!found) {
            /* Count each of NEW's own configurations once. */
            int first = 1;
            for (size_t h = 0; h < g && first; h++)
                first = !ec_records_match(gw[h].key, gw[g].key, EC_KEY_ACROSS_DATASETS);
            *only_new += (size_t)first;
        }
    }
    free(xb);
    free(xw);
    free(seen);
    ec_groups_free(gb, ngb);
    ec_groups_free(gw, ngw);
    if (rc != 0 || n == 0) {
        free(rows);
        rows = NULL;
    }
    *out = rows;
    *nout = n;
    return rc;
}

static void config_label(const ec_run_record *k, char *buf, size_t len)
{
    snprintf(buf, len, "%s %s %s b%d %d+%d", k->model, k->precision, k->kernels, k->batch,
             k->prompt_len, k->gen_len);
}

/* The columns of one change (energy or tok/s) in the full table. */
typedef struct {
    int base, now, delta, pct, lo, hi, p;
} change_columns;

/* Adds base_Q, new_Q, delta_Q, delta_Q_pct, delta_Q_ci_lo_pct, delta_Q_ci_hi_pct and Q_p for the
 * quantity Q (label: its unit). */
static void add_change_columns(ec_table *t, const char *q, const char *label, change_columns *c)
{
    static const char *const keys[] = {
        "base_%s", "new_%s", "delta_%s", "delta_%s_pct", "delta_%s_ci_lo_pct", "delta_%s_ci_hi_pct",
        "%s_p"};
    static const char *const labels[] = {"Base %s",     "New %s",      "Δ %s", "Δ %s %%",
                                         "CI lo %s %%", "CI hi %s %%", "p %s"};
    int *cols[] = {&c->base, &c->now, &c->delta, &c->pct, &c->lo, &c->hi, &c->p};
    for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) {
        char key[64], lab[64];
        snprintf(key, sizeof key, keys[i], q);
        snprintf(lab, sizeof lab, labels[i], label);
        *cols[i] = ec_table_column(t, key, lab);
    }
}

static void change_cells(ec_table *t, const change_columns *c, const change *x)
{
    ec_table_number(t, c->base, "%.2f", x->base.mean);
    ec_table_number(t, c->now, "%.2f", x->now.mean);
    ec_table_number(t, c->delta, "%.2f", x->delta);
    ec_table_number(t, c->pct, "%.2f", x->pct);
    ec_table_number(t, c->lo, "%.2f", x->pct_lo);
    ec_table_number(t, c->hi, "%.2f", x->pct_hi);
    ec_table_number(t, c->p, "%.3g", x->p);
}

/* The full table (JSON/CSV): every figure in its own column. */
static ec_table *full_table(const row *rows, size_t n, const options *o)
{
    ec_table *t = ec_table_new();
    int c_gpu = ec_table_column(t, "gpu", "GPU");
    int c_model = ec_table_column(t, "model", "Model");
    int c_prec = ec_table_column(t, "precision", "Precision");
    int c_kern = ec_table_column(t, "kernels", "Kernels");
    int c_batch = ec_table_column(t, "batch", "Batch");
    int c_prompt = ec_table_column(t, "prompt_len", "Prompt");
    int c_gen = ec_table_column(t, "gen_len", "Gen");
    int c_nb = ec_table_column(t, "base_runs", "Base runs");
    int c_nn = ec_table_column(t, "new_runs", "New runs");
    int c_def = ec_table_column(t, "energy_definition", "Energy");
    change_columns ce, ct;
    add_change_columns(t, "j_per_1k", "J/1k tok", &ce);
    add_change_columns(t, "tok_s", "tok/s", &ct);
    int c_v = ec_table_column(t, "verdict", "Verdict");
    for (size_t i = 0; i < n; i++) {
        const row *r = &rows[i];
        const ec_run_record *k = r->key;
        ec_table_row(t);
        ec_table_text(t, c_gpu, "%s", k->gpu_name);
        ec_table_text(t, c_model, "%s", k->model);
        ec_table_text(t, c_prec, "%s", k->precision);
        ec_table_text(t, c_kern, "%s", k->kernels);
        ec_table_number(t, c_batch, "%.0f", k->batch);
        ec_table_number(t, c_prompt, "%.0f", k->prompt_len);
        ec_table_number(t, c_gen, "%.0f", k->gen_len);
        ec_table_number(t, c_nb, "%.0f", (double)r->energy.base.n);
        ec_table_number(t, c_nn, "%.0f", (double)r->energy.now.n);
        ec_table_text(t, c_def, "%s", o->net ? "net" : "gross");
        change_cells(t, &ce, &r->energy);
        change_cells(t, &ct, &r->tok);
        ec_table_text(t, c_v, "%s", verdict_names[r->v]);
    }
    return t;
}

/* "+3.1 [+1.2, +5.0]": a change in % with its CI. */
static void pct_with_ci(const change *c, char *buf, size_t len)
{
    if (!isfinite(c->pct))
        snprintf(buf, len, "-");
    else if (isfinite(c->pct_lo))
        snprintf(buf, len, "%+.1f [%+.1f, %+.1f]", c->pct, c->pct_lo, c->pct_hi);
    else
        snprintf(buf, len, "%+.1f", c->pct);
}

/* The terminal table: one configuration per line, within 120 columns. */
static ec_table *short_table(const row *rows, size_t n, const options *o)
{
    ec_table *t = ec_table_new();
    char label[64];
    snprintf(label, sizeof label, "Δ J/1k %% [%.0f%% CI]", 100.0 * (1.0 - o->alpha));
    int c_cfg = ec_table_column(t, "configuration", "Configuration");
    int c_b = ec_table_column(t, "base_j_per_1k", o->net ? "Base J/1k net" : "Base J/1k gross");
    int c_n = ec_table_column(t, "new_j_per_1k", o->net ? "New J/1k net" : "New J/1k gross");
    int c_d = ec_table_column(t, "delta_energy", label);
    int c_p = ec_table_column(t, "energy_p", "p");
    int c_tok = ec_table_column(t, "delta_tok_s_pct", "Δ tok/s %");
    int c_v = ec_table_column(t, "verdict", "Verdict");
    for (size_t i = 0; i < n; i++) {
        const row *r = &rows[i];
        char buf[160];
        ec_table_row(t);
        config_label(r->key, buf, sizeof buf);
        ec_table_text(t, c_cfg, "%s", buf);
        ec_table_number(t, c_b, "%.1f", r->energy.base.mean);
        ec_table_number(t, c_n, "%.1f", r->energy.now.mean);
        pct_with_ci(&r->energy, buf, sizeof buf);
        ec_table_text(t, c_d, "%s", buf);
        ec_table_number(t, c_p, "%.2g", r->energy.p);
        ec_table_number(t, c_tok, "%+.1f", r->tok.pct);
        ec_table_text(t, c_v, "%s", verdict_short[r->v]);
    }
    return t;
}

static void print_markdown(const row *rows, size_t n, const options *o, size_t worse, size_t better,
                           FILE *out)
{
    const char *def = o->net ? "net (idle-subtracted)" : "gross";
    if (worse)
        fprintf(out, "### ❌ Energy regression: %zu of %zu configurations\n\n", worse, n);
    else
        fprintf(out, "### ✅ No energy regression (%zu configurations compared)\n\n", n);
    fprintf(out,
            "Energy per 1000 generated tokens (J, %s), NEW vs BASE; Welch's t-test, %.0f%% CI; "
            "a regression is p < %g and more than +%g %%. %zu better.\n\n",
            def, 100.0 * (1.0 - o->alpha), o->alpha, o->max_regression_pct, better);
    fprintf(out, "| Configuration | GPU | Runs | Base J/1k | New J/1k | Δ energy %% [CI] | p | "
                 "Δ tok/s %% | Verdict |\n|---|---|---|---:|---:|---:|---:|---:|---|\n");
    for (size_t i = 0; i < n; i++) {
        const row *r = &rows[i];
        char cfg[160], d[64];
        config_label(r->key, cfg, sizeof cfg);
        pct_with_ci(&r->energy, d, sizeof d);
        fprintf(out, "| %s | %s | %zu/%zu | %.1f | %.1f | %s | %.2g | %+.1f | %s |\n", cfg,
                r->key->gpu_name[0] ? r->key->gpu_name : "-", r->energy.base.n, r->energy.now.n,
                r->energy.base.mean, r->energy.now.mean, d, r->energy.p, r->tok.pct,
                r->v == V_WORSE ? "**worse**" : verdict_names[r->v]);
    }
}

/* Loads one side (a database, export file or folder) through the shared dataset reader. */
static int load_side(const char *path, ec_run_record **r, size_t *n)
{
    cli_dataset_args d;
    if (cli_dataset_args_init(CMD, &d, 1) != 0) return -1;
    d.paths[d.npaths++] = (char *)path;
    char from[256];
    int rc = cli_dataset_args_load(CMD, &d, r, n, from, sizeof from);
    cli_dataset_args_free(&d);
    return rc;
}

static int parse(int argc, char **argv, options *o, const char **base, const char **now)
{
    memset(o, 0, sizeof *o);
    o->max_regression_pct = 5.0;
    o->alpha = 0.05;
    *base = *now = NULL;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            usage();
            return -1;
        }
        if (f[0] == '-' && f[1]) {
            if (strcmp(f, "--max-regression") && strcmp(f, "--alpha") && strcmp(f, "--energy") &&
                strcmp(f, "--format"))
                return cli_usage_error(CMD, "unknown option '%s'", f);
            if (i + 1 >= argc) return cli_usage_error(CMD, "%s needs a value", f);
            const char *v = argv[++i];
            if (!strcmp(f, "--max-regression")) {
                if (cli_parse_double(CMD, f, v, 0, 1e6, &o->max_regression_pct)) return EXIT_USAGE;
            } else if (!strcmp(f, "--alpha")) {
                if (cli_parse_double(CMD, f, v, 1e-9, 0.5, &o->alpha)) return EXIT_USAGE;
            } else if (!strcmp(f, "--energy")) {
                if (strcmp(v, "gross") && strcmp(v, "net"))
                    return cli_usage_error(CMD, "--energy must be gross or net, not '%s'", v);
                o->net = !strcmp(v, "net");
            } else if (!strcmp(v, "md") || !strcmp(v, "markdown"))
                o->markdown = 1;
            else if (cli_parse_format(CMD, v, &o->fmt) != 0)
                return EXIT_USAGE;
            continue;
        }
        if (!*base)
            *base = f;
        else if (!*now)
            *now = f;
        else
            return cli_usage_error(CMD, "one BASE and one NEW, not a third ('%s')", f);
    }
    if (!*now) return cli_usage_error(CMD, "needs BASE and NEW (databases, exports or folders)");
    return 0;
}

int cmd_compare(int argc, char **argv)
{
    options o;
    const char *base_path, *new_path;
    int rc = parse(argc, argv, &o, &base_path, &new_path);
    if (rc) return rc < 0 ? EXIT_OK : rc;
    ec_run_record *b = NULL, *w = NULL;
    size_t nb = 0, nw = 0;
    if (load_side(base_path, &b, &nb) != 0 || load_side(new_path, &w, &nw) != 0) {
        free(b);
        free(w);
        return EXIT_FAIL;
    }
    row *rows = NULL;
    size_t n = 0, only_base = 0, only_new = 0;
    if (build_rows(b, nb, w, nw, &o, &rows, &n, &only_base, &only_new) != 0)
        rc = cli_fail(CMD, "%s", ec_last_error());
    else if (n == 0)
        rc = cli_fail(CMD, "no configuration is measured in both %s (%zu runs) and %s (%zu runs)",
                      base_path, nb, new_path, nw);
    if (rc == EXIT_OK) {
        size_t worse = 0, better = 0, few = 0;
        for (size_t i = 0; i < n; i++) {
            worse += rows[i].v == V_WORSE;
            better += rows[i].v == V_BETTER;
            few += rows[i].v == V_TOO_FEW;
        }
        if (o.markdown)
            print_markdown(rows, n, &o, worse, better, stdout);
        else {
            ec_table *t =
                o.fmt == EC_FORMAT_TABLE ? short_table(rows, n, &o) : full_table(rows, n, &o);
            ec_table_print(t, o.fmt, stdout);
            ec_table_free(t);
        }
        fprintf(stderr,
                "ecocompute compare: %zu configurations compared (%zu only in BASE, %zu only in "
                "NEW); %zu worse beyond +%g %% at p < %g, %zu better, %zu with too few runs\n",
                n, only_base, only_new, worse, o.max_regression_pct, o.alpha, better, few);
        if (worse) rc = EXIT_FAIL;
    }
    free(rows);
    free(b);
    free(w);
    return rc;
}
