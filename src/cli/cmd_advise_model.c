/* cmd_advise_model.c — `ecocompute advise model`: the physical model's fitted parameters per
 * stack and precision, its leave-one-out error per stack and GPU family, and (--points) the
 * reference points it was fitted to with n, CV and validate's verdict. */
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "advise_args.h"
#include "ecocompute/analysis.h"

#define CMD "advise model"

static void usage(void)
{
    printf(
        "usage: ecocompute advise model [--points] [--format table|json|csv]\n"
        "                               [--data-dir DIR] [--db PATH]\n\n"
        "Prints the physical model (docs/advise.md) fitted to the measured points, per stack\n"
        "(fused, reference = ecocompute's kernel families; hf-bnb = the seeds' transformers +\n"
        "bitsandbytes rows) and precision, then its leave-one-out error: every point predicted\n"
        "by the fit of the others, median absolute error per stack and GPU family.\n\n"
        "  --points       list the measured points instead: source, licence, n, CV, energy\n"
        "                 definition and what validate says about their rows\n"
        "  --data-dir DIR shipped data (default: next to the executable, or $ECOCOMPUTE_DATA_DIR)\n"
        "  --db PATH      add the runs of your results database\n"
        "  --format F     table (default), json or csv\n\n"
        "examples:\n"
        "  ecocompute advise model\n"
        "  ecocompute advise model --points --format csv > points.csv\n");
}

static const char *verdict_name(int v)
{
    return v < 0 ? "ok" : ec_severity_name((ec_severity)v);
}

/* json and csv carry every column; the table keeps to 120 columns: the source's file name, no
 * licence, checks or LOO columns (--format csv has them). */
static void print_points(const advise_ctx *c)
{
    int wide = c->format != EC_FORMAT_TABLE;
    ec_table *t = ec_table_new();
    int src = ec_table_column(t, "source", "Source");
    int lic = wide ? ec_table_column(t, "licence", "Licence") : -1;
    int gpu = ec_table_column(t, "gpu", "GPU"), mod = ec_table_column(t, "model", "Model");
    int pr = ec_table_column(t, "precision", "Prec"), st = ec_table_column(t, "stack", "Stack");
    int b = ec_table_column(t, "batch", "B"), n = ec_table_column(t, "n", "n");
    int ts = ec_table_column(t, "tok_s", "tok/s"), tcv = ec_table_column(t, "tok_s_cv_pct", "CV%");
    int e = ec_table_column(t, "j_per_1k", "J/1k"), ecv = ec_table_column(t, "j_cv_pct", "CV%");
    int def = ec_table_column(t, "basis", "Basis"), v = ec_table_column(t, "verdict", "Validate");
    int ch = wide ? ec_table_column(t, "checks", "Checks") : -1;
    int lt = wide ? ec_table_column(t, "loo_err_tok_s_pct", "LOO tok/s %") : -1;
    int le = wide ? ec_table_column(t, "loo_err_j_per_1k_pct", "LOO J/1k %") : -1;
    for (size_t i = 0; i < c->advisor.npts; i++) {
        const ec_ref_point *p = &c->advisor.pts[i];
        ec_table_row(t);
        const char *base = strrchr(p->source, '/');
        if (wide)
            ec_table_text(t, src, "%s", p->source);
        else
            ec_table_text(t, src, "%.16s", base ? base + 1 : p->source);
        if (wide) ec_table_text(t, lic, "%s", p->licence[0] ? p->licence : "ecocompute");
        ec_table_text(t, gpu, "%.10s", p->gpu[0] ? p->gpu : p->gpu_name);
        ec_table_text(t, mod, wide ? "%s" : "%.14s", p->model);
        ec_table_text(t, pr, "%s", p->precision);
        ec_table_text(t, st, "%s", p->stack);
        ec_table_number(t, b, "%.0f", p->batch);
        ec_table_number(t, n, "%.0f", (double)p->n);
        ec_table_number(t, ts, "%.1f", p->tok_s);
        ec_table_number(t, tcv, "%.1f", p->tok_s_cv_pct);
        ec_table_number(t, e, "%.0f", p->j_per_1k);
        ec_table_number(t, ecv, "%.1f", p->j_cv_pct);
        ec_table_text(t, def, "%s", ec_energy_definition_name(p->def));
        ec_table_text(t, v, "%s", verdict_name(p->verdict));
        if (!wide) continue;
        ec_table_text(t, ch, "%s", p->checks);
        for (size_t k = 0; k < c->advisor.nloo; k++)
            if (c->advisor.loo[k].point == i) {
                ec_table_number(t, lt, "%+.1f", c->advisor.loo[k].tok_s_err_pct);
                ec_table_number(t, le, "%+.1f", c->advisor.loo[k].energy_err_pct);
            }
    }
    ec_table_print(t, c->format, stdout);
    ec_table_free(t);
}

static void print_fits(const advise_ctx *c)
{
    static const char *const stacks[] = {"fused", "reference", "hf-bnb"};
    ec_table *t = ec_table_new();
    int st = ec_table_column(t, "stack", "Stack"),
        pr = ec_table_column(t, "precision", "Precision");
    int nt = ec_table_column(t, "points_time", "n time");
    int ne = ec_table_column(t, "points_energy", "n energy");
    int bw = ec_table_column(t, "eta_bw", "BW eff.");
    int tf = ec_table_column(t, "eta_tf", "Tensor eff.");
    int ov = ec_table_column(t, "overhead_us_per_layer", "us/layer");
    int os = ec_table_column(t, "overhead_us_per_layer_per_seq", "us/layer/seq");
    int pb = ec_table_column(t, "pj_per_byte", "pJ/byte");
    int pf = ec_table_column(t, "pj_per_flop", "pJ/FLOP");
    int aw = ec_table_column(t, "active_w", "Active W");
    for (size_t s = 0; s < 3; s++)
        for (int p = 0; p < EC_PREC_COUNT; p++) {
            const char *prec = ec_precision_name((ec_precision)p);
            ec_model_params mp;
            if (!ec_advise_ranks_precision((ec_precision)p) ||
                ec_model_fit(c->advisor.pts, c->advisor.npts, &c->data, stacks[s], prec, (size_t)-1,
                             &mp))
                continue;
            ec_table_row(t);
            ec_table_text(t, st, "%s", stacks[s]);
            ec_table_text(t, pr, "%s", prec);
            ec_table_number(t, nt, "%.0f", (double)mp.n_time);
            ec_table_number(t, ne, "%.0f", (double)mp.n_energy);
            ec_table_number(t, bw, "%.3f", mp.eta_bw);
            ec_table_number(t, tf, "%.3f", mp.eta_tf);
            ec_table_number(t, ov, "%.2f", mp.overhead_s * 1e6);
            ec_table_number(t, os, "%.3f", mp.seq_overhead_s * 1e6);
            ec_table_number(t, pb, "%.1f", mp.pj_per_byte);
            ec_table_number(t, pf, "%.3f", mp.pj_per_flop);
            ec_table_number(t, aw, "%.1f", mp.active_w);
        }
    if (c->format == EC_FORMAT_TABLE)
        printf("Fitted parameters (per stack and precision, across GPUs)\n");
    ec_table_print(t, c->format, stdout);
    ec_table_free(t);
}

static void print_loo(const advise_ctx *c)
{
    static const char *const stacks[] = {"fused", "reference", "hf-bnb"};
    static const char *const families[] = {NULL, "Hopper", "Ampere", "Ada", "Turing", "Blackwell"};
    ec_table *t = ec_table_new();
    int st = ec_table_column(t, "stack", "Stack"),
        fa = ec_table_column(t, "gpu_family", "GPU family");
    int nt = ec_table_column(t, "points_tok_s", "Points");
    int et = ec_table_column(t, "loo_median_abs_err_tok_s_pct", "LOO median |err| tok/s (%)");
    int ne = ec_table_column(t, "points_energy", "Points");
    int ee = ec_table_column(t, "loo_median_abs_err_j_per_1k_pct", "LOO median |err| J/1k (%)");
    for (size_t s = 0; s < 3; s++)
        for (size_t f = 0; f < 6; f++) {
            size_t n1, n2;
            double a = ec_loo_median(c->advisor.loo, c->advisor.nloo, c->advisor.pts, &c->data,
                                     stacks[s], families[f], 0, &n1);
            double b = ec_loo_median(c->advisor.loo, c->advisor.nloo, c->advisor.pts, &c->data,
                                     stacks[s], families[f], 1, &n2);
            if (!n1 && !n2) continue;
            ec_table_row(t);
            ec_table_text(t, st, "%s", stacks[s]);
            ec_table_text(t, fa, "%s", families[f] ? families[f] : "all");
            ec_table_number(t, nt, "%.0f", (double)n1);
            ec_table_number(t, et, "%.1f", a);
            ec_table_number(t, ne, "%.0f", (double)n2);
            ec_table_number(t, ee, "%.1f", b);
        }
    if (c->format == EC_FORMAT_TABLE)
        printf("\nLeave-one-out error (each point predicted by the fit of the others)\n");
    ec_table_print(t, c->format, stdout);
    ec_table_free(t);
}

int cmd_advise_model(int argc, char **argv)
{
    advise_ctx c = {.cmd = CMD};
    int points = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage();
            return EXIT_OK;
        }
        int r = advise_common_arg(&c, argc, argv, &i);
        if (r < 0) return EXIT_USAGE;
        if (r) continue;
        if (!strcmp(argv[i], "--points"))
            points = 1;
        else
            return cli_usage_error(CMD, "unknown option '%s'", argv[i]);
    }
    if (advise_load(&c)) return EXIT_FAIL;
    if (points) {
        print_points(&c);
    } else if (c.format == EC_FORMAT_TABLE) {
        print_fits(&c);
        print_loo(&c);
    } else {
        /* One document per format: the LOO summary is what a script wants from this command. */
        print_loo(&c);
    }
    size_t bad = 0;
    for (size_t i = 0; i < c.advisor.npts; i++)
        bad += c.advisor.pts[i].verdict == (int)EC_SEV_ERROR;
    fprintf(stderr,
            "%zu measured points from %s (%zu records); validate flags %zu records as "
            "errors, %zu points contain them and are not used\n",
            c.advisor.npts, c.data.dir, c.data.nrecords, c.advisor.error_rows, bad);
    advise_ctx_free(&c);
    return EXIT_OK;
}
