/* markdown.c — the report as Markdown: the same views as the HTML page as tables, with ASCII
 * bars in place of charts, for a README or an issue. The first line is the generator marker. */
#include "report/report_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ecocompute/common.h"

#define BAR_WIDTH 24
#define MD_MAX_RUNS 50 /* the runs listed; the HTML report and `export` have every one */

/* Text for a table cell: '|' and newlines would break the row. */
static void md_text(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '|') fputs("\\|", out);
        else if (*s == '\n' || *s == '\r') fputc(' ', out);
        else fputc(*s, out);
    }
}

/* A "why empty" message written for HTML: <code> becomes backticks. */
static void md_why(FILE *out, const char *html)
{
    fputs("> ", out);
    while (*html) {
        if (!strncmp(html, "<code>", 6)) fputc('`', out), html += 6;
        else if (!strncmp(html, "</code>", 7)) fputc('`', out), html += 7;
        else fputc(*html++, out);
    }
    fputs("\n\n", out);
}

static void cell(FILE *out, double v)
{
    char b[40];
    fprintf(out, " %s |", rp_num(b, sizeof b, v));
}

static void cell_int(FILE *out, long v)
{
    if (v >= 0) fprintf(out, " %ld |", v);
    else fputs(" – |", out);
}

static void cell_text(FILE *out, const char *s)
{
    fputc(' ', out);
    md_text(out, s[0] ? s : "–");
    fputs(" |", out);
}

static void cell_ci(FILE *out, double lo, double hi)
{
    char a[40], b[40];
    if (isfinite(lo) && isfinite(hi))
        fprintf(out, " %s – %s |", rp_num(a, sizeof a, lo), rp_num(b, sizeof b, hi));
    else fputs(" – |", out);
}

/* A mean with its 95 % CI in brackets: "12.3 [11.1 – 13.5]", or the mean alone without one. */
static void cell_mean_ci(FILE *out, double mean, double lo, double hi)
{
    char a[40], b[40], c[40];
    fprintf(out, " %s", rp_num(a, sizeof a, mean));
    if (isfinite(mean) && isfinite(lo) && isfinite(hi))
        fprintf(out, " [%s – %s]", rp_num(b, sizeof b, lo), rp_num(c, sizeof c, hi));
    fputs(" |", out);
}

static void header(FILE *out, const char *const *h, size_t n)
{
    fputc('|', out);
    for (size_t i = 0; i < n; i++) fprintf(out, " %s |", h[i]);
    fputs("\n|", out);
    for (size_t i = 0; i < n; i++) fputs("---|", out);
    fputc('\n', out);
}

static void bar(FILE *out, double v, double max)
{
    fputs(" `", out);
    int w = isfinite(v) && max > 0 ? (int)lround(BAR_WIDTH * v / max) : 0;
    for (int i = 0; i < BAR_WIDTH; i++) fputc(i < w ? '#' : '.', out);
    fputs("` |", out);
}

static void overview(FILE *out, const rp_model *m)
{
    fputs("## Overview\n\nPer GPU × model, the configuration with the lowest mean energy per 1000 "
          "generated tokens (in the first energy definition the pair has: gross, net, unknown).\n\n",
          out);
    if (!m->nbest) {
        md_why(out, m->n ? "No configuration carries an energy figure: measure with "
                           "<code>ecocompute bench</code>."
                         : "The input holds no runs. Measure some with <code>ecocompute bench"
                           "</code>.");
    } else {
        static const char *const h[] = {"GPU", "Model", "Greenest", "Energy def", "J/1k tok",
                                        "95% CI (J/1k)", "tok/s", "Δ vs fp16 (%)",
                                        "Δ perplexity"};
        header(out, h, 9);
        for (size_t b = 0; b < m->nbest; b++) {
            const rp_config *c = &m->c[m->best[b]];
            fputc('|', out);
            cell_text(out, c->key->gpu_name);
            cell_text(out, c->key->model);
            cell_text(out, c->label);
            cell_text(out, rp_def_name(c->def, c->mixed));
            cell(out, c->e.mean);
            cell_ci(out, c->e.ci_lo, c->e.ci_hi);
            cell(out, c->tok.mean);
            cell(out, c->has_delta ? c->delta.pct : NAN);
            cell(out, c->d_ppl);
            fputc('\n', out);
        }
        fputc('\n', out);
    }
    fprintf(out, "Coverage: %zu runs, %zu configurations, %zu environments, %zu configurations "
                 "with accuracy.\n\n",
            m->n, m->nc, m->nenv, m->naccuracy);
}

static void precisions(FILE *out, const rp_model *m)
{
    fputs("## Precisions\n\nEnergy per 1000 generated tokens in the row's definition, gross and "
          "net, per request (one sequence), Δ vs fp16 of the same kernels and tok/s: each the mean "
          "over the runs with its 95 % CI in brackets (Student t; Δ: Welch). The bar is the "
          "energy in the row's definition.\n\n",
          out);
    if (!m->nprec) {
        md_why(out, "No configuration carries an energy figure. Measure precisions with "
                    "<code>ecocompute bench --precision fp16,int8,nf4</code>.");
        return;
    }
    static const char *const h[] = {"Precision", "Kernels", "n", "J/1k tok", "J/1k gross",
                                    "J/1k net", "J/request gross", "J/request net",
                                    "Δ vs fp16 (%)", "tok/s", "Gate", "Energy"};
    for (size_t g = 0; g < m->nprec; g++) {
        const rp_group *gr = &m->prec[g];
        fputs("### ", out);
        md_text(out, gr->title);
        fputs("\n\n", out);
        header(out, h, 12);
        double max = 0;
        for (size_t j = 0; j < gr->n; j++)
            if (m->c[gr->cfg[j]].e.mean > max) max = m->c[gr->cfg[j]].e.mean;
        for (size_t j = 0; j < gr->n; j++) {
            const rp_config *c = &m->c[gr->cfg[j]];
            fputc('|', out);
            cell_text(out, c->key->precision);
            cell_text(out, c->key->kernels);
            cell_int(out, (long)c->e.n);
            const ec_summary *col[] = {&c->e, &c->e_gross, &c->e_net, &c->req_gross, &c->req_net};
            for (int q = 0; q < 5; q++) cell_mean_ci(out, col[q]->mean, col[q]->ci_lo, col[q]->ci_hi);
            if (c->has_delta) cell_mean_ci(out, c->delta.pct, c->delta.pct_lo, c->delta.pct_hi);
            else cell_mean_ci(out, NAN, NAN, NAN);
            cell_mean_ci(out, c->tok.mean, c->tok.ci_lo, c->tok.ci_hi);
            cell_text(out, ec_gate_status_name(c->gate));
            bar(out, c->e.mean, max);
            fputc('\n', out);
        }
        fputc('\n', out);
    }
}

static int batch(FILE *out, const rp_model *m)
{
    fputs("## Batch size\n\nJ per request (one sequence) against batch size, and the fitted "
          "law J/request ≈ a·B^−b (least squares on ln B, ln J over every run; three or more "
          "batch sizes).\n\n",
          out);
    if (!m->nbatch) {
        md_why(out, "No GPU, model and precision was measured at two or more batch sizes. "
                    "Sweep them with <code>ecocompute bench --batch 1,8,32,64</code>.");
        return 0;
    }
    size_t cap = rp_groups_max_size(m->batch, m->nbatch);
    size_t *first = malloc(cap * sizeof *first), *which = malloc(cap * sizeof *which);
    char *members = malloc(cap);
    int rc = 0;
    if (!first || !which || !members) rc = ec_set_error("out of memory");
    static const char *const h[] = {"Precision", "Batch", "J/request", "95% CI", "tok/s",
                                    "J/request"};
    for (size_t gi = 0; gi < m->nbatch && !rc; gi++) {
        const rp_group *g = &m->batch[gi];
        size_t ns = rp_series_of(m, g, first, which);
        fputs("### ", out);
        md_text(out, g->title);
        fputs("\n\n", out);
        header(out, h, 6);
        double max = 0;
        for (size_t i = 0; i < g->n; i++) {
            const rp_config *c = &m->c[g->cfg[i]];
            double v = c->req_gross.n ? c->req_gross.mean : c->req_net.mean;
            if (v > max) max = v;
        }
        for (size_t s = 0; s < ns; s++)
            for (size_t i = 0; i < g->n; i++) {
                if (which[i] != s) continue;
                const rp_config *c = &m->c[g->cfg[i]];
                const ec_summary *e = c->req_gross.n ? &c->req_gross : &c->req_net;
                fputc('|', out);
                cell_text(out, c->key->precision);
                cell_int(out, c->key->batch);
                cell(out, e->mean);
                cell_ci(out, e->ci_lo, e->ci_hi);
                cell(out, c->tok.mean);
                bar(out, e->mean, max);
                fputc('\n', out);
            }
        fputc('\n', out);
        for (size_t s = 0; s < ns && !rc; s++) {
            rp_batch_fit f;
            if ((rc = rp_batch_series_fit(m, g, first[s], members, &f))) break;
            const char *p = m->c[g->cfg[first[s]]].key->precision;
            if (f.ok)
                fprintf(out, "- %s: a = %.4g J/request at B = 1, b = %.3f (95 %% CI %.3f – "
                             "%.3f), R² = %.3f, %zu runs\n",
                        p, f.fit.a, f.fit.b, f.fit.b_lo, f.fit.b_hi, f.fit.r2, f.fit.n);
            else fprintf(out, "- %s: fewer than 3 batch sizes, no fit\n", p);
        }
        fputc('\n', out);
    }
    free(first), free(which), free(members);
    return rc;
}

static int crossover(FILE *out, const rp_model *m)
{
    fputs("## Crossover\n\nΔ energy vs fp16 against model size, fitted as Δ% = c + s·ln(params); "
          "the crossover is where it crosses zero (95 % CI, delta method).\n\n",
          out);
    if (!m->ncross) {
        md_why(out, "No precision has a Δ vs fp16 at two or more model sizes on one GPU and "
                    "kernel family. Measure several models with <code>ecocompute bench --model "
                    "tinyllama-1.1b,llama-2-7b --precision fp16,nf4</code>.");
        return 0;
    }
    static const char *const h[] = {"GPU", "Kernels", "Batch", "Precision", "Sizes (B)",
                                    "Slope (%/ln B)", "Crossover (B)", "95% CI (B)", "R²",
                                    "Verdict"};
    header(out, h, 10);
    size_t cap = rp_groups_max_size(m->cross, m->ncross);
    size_t *first = malloc(cap * sizeof *first), *which = malloc(cap * sizeof *which);
    int rc = 0;
    if (!first || !which) rc = ec_set_error("out of memory");
    for (size_t gi = 0; gi < m->ncross && !rc; gi++) {
        const rp_group *g = &m->cross[gi];
        size_t ns = rp_series_of(m, g, first, which);
        for (size_t s = 0; s < ns; s++) {
            const rp_config *c = &m->c[g->cfg[first[s]]];
            ec_crossover f;
            int fit = rp_cross_series_fit(m, g, which, s, &f);
            if (fit < 0) {
                rc = -1;
                break;
            }
            fputc('|', out);
            cell_text(out, c->key->gpu_name);
            cell_text(out, c->key->kernels);
            cell_int(out, c->key->batch);
            cell_text(out, c->key->precision);
            if (fit) {
                fputs(" one size | – | – | – | – | no fit |\n", out);
                continue;
            }
            cell_ci(out, f.min_b, f.max_b);
            cell(out, f.line.slope);
            cell(out, f.found ? f.params_b : NAN);
            cell_ci(out, f.found ? f.lo_b : NAN, f.found ? f.hi_b : NAN);
            cell(out, f.line.r2);
            cell_text(out, f.found ? "crossover in range"
                           : f.line.intercept + f.line.slope * log(f.min_b) > 0
                               ? "no crossover in range (costs more)"
                               : "no crossover in range (saves)");
            fputc('\n', out);
        }
    }
    fputc('\n', out);
    free(first), free(which);
    return rc;
}

static void accuracy(FILE *out, const rp_model *m)
{
    fputs("## Energy × accuracy\n\n", out);
    if (!m->naccuracy) {
        md_why(out, "No accuracy is stored with these runs (perplexity or KL vs float32). "
                    "Measure it with <code>ecocompute eval --ppl FILE --tokenizer TOK</code>.");
        return;
    }
    static const char *const h[] = {"GPU", "Model", "Precision", "Kernels", "Perplexity",
                                    "Δ perplexity", "KL vs f32 (nats)", "J/1k tok", "Energy def"};
    header(out, h, 9);
    for (size_t i = 0; i < m->nc; i++) {
        const rp_config *c = &m->c[i];
        if (!c->ppl.n && !c->kl.n) continue;
        fputc('|', out);
        cell_text(out, c->key->gpu_name);
        cell_text(out, c->key->model);
        cell_text(out, c->key->precision);
        cell_text(out, c->key->kernels);
        cell(out, c->ppl.mean);
        cell(out, c->d_ppl);
        cell(out, c->kl.mean);
        cell(out, c->e.mean);
        cell_text(out, c->e.n ? rp_def_name(c->def, c->mixed) : "");
        fputc('\n', out);
    }
    fputc('\n', out);
}

static void traces(FILE *out, const rp_model *m)
{
    fputs("## Power traces\n\n", out);
    const ec_report_traces *t = m->traces;
    if (!t || !t->n) {
        fputs("> No power trace to draw: ", out);
        md_why(out, t && t->why_none[0] ? t->why_none
                                        : "traces live in the results database; report it "
                                          "with <code>--db PATH</code> after <code>ecocompute "
                                          "bench --trace FILE</code>.");
        return;
    }
    static const char *const h[] = {"Session", "Samples", "Duration (s)", "Mean (W)", "Peak (W)",
                                    "Idle (W)"};
    header(out, h, 6);
    for (size_t i = 0; i < t->n; i++) {
        const ec_session_trace *tr = &t->v[i].trace;
        double sum = 0, peak = 0;
        for (size_t j = 0; j < tr->n; j++) {
            sum += tr->points[j].power_w;
            if (tr->points[j].power_w > peak) peak = tr->points[j].power_w;
        }
        fputc('|', out);
        cell_text(out, t->v[i].session_id);
        cell_int(out, (long)tr->n);
        cell(out, tr->points[tr->n - 1].t_s - tr->points[0].t_s);
        cell(out, sum / (double)tr->n);
        cell(out, peak);
        cell(out, tr->idle_power_w);
        fputc('\n', out);
    }
    fputs("\nThe HTML report draws each trace with the runs' phases shaded.\n\n", out);
}

static void compare(FILE *out, const rp_model *m)
{
    fputs("## Compare\n\nThe greenest configuration of each GPU × model next to its fp16 "
          "baseline (the HTML report lets you pick any 2–4).\n\n",
          out);
    size_t shown = 0;
    static const char *const h[] = {"GPU · model", "Configuration", "J/1k tok", "J/1k gross",
                                    "J/1k net", "J/request gross", "tok/s", "Power (W)",
                                    "Energy"};
    for (size_t b = 0; b < m->nbest; b++) {
        const rp_config *c = &m->c[m->best[b]];
        if (c->baseline < 0) continue;
        if (!shown++) header(out, h, 9);
        const rp_config *pair[2] = {c, &m->c[c->baseline]};
        double max = fmax(pair[0]->e.mean, pair[1]->e.mean);
        for (int k = 0; k < 2; k++) {
            char name[200];
            snprintf(name, sizeof name, "%s · %s", pair[k]->key->gpu_name, pair[k]->key->model);
            fputc('|', out);
            cell_text(out, name);
            cell_text(out, pair[k]->label);
            cell(out, pair[k]->e.mean);
            cell(out, pair[k]->e_gross.mean);
            cell(out, pair[k]->e_net.mean);
            cell(out, pair[k]->req_gross.mean);
            cell(out, pair[k]->tok.mean);
            cell(out, pair[k]->w.mean);
            bar(out, pair[k]->e.mean, max);
            fputc('\n', out);
        }
    }
    if (!shown)
        md_why(out, "No greenest configuration has an fp16 baseline to compare with (measure "
                    "fp16 too: <code>ecocompute bench --precision fp16,int8</code>).");
    else fputc('\n', out);
}

static void runs(FILE *out, const rp_model *m)
{
    fputs("## Runs\n\n", out);
    if (!m->n) {
        md_why(out, "No runs in the input. Measure with <code>ecocompute bench</code>.");
        return;
    }
    static const char *const h[] = {"Run id",   "GPU", "Model",      "Precision", "Kernels",
                                    "Batch",    "TP",  "Prompt/Gen", "Run #",     "Gate",
                                    "J/1k tok", "Def", "tok/s",      "Driver",    "Commit"};
    header(out, h, 15);
    for (size_t i = 0; i < m->n && i < MD_MAX_RUNS; i++) {
        const ec_run_record *r = &m->r[i];
        ec_energy_definition d;
        double e = ec_record_energy_per_1k(r, &d);
        fputc('|', out);
        cell_int(out, r->run_id);
        cell_text(out, r->gpu_name);
        cell_text(out, r->model);
        cell_text(out, r->precision);
        cell_text(out, r->kernels);
        cell_int(out, r->batch);
        cell_int(out, ec_record_gpus(r));
        fprintf(out, " %d / %d |", r->prompt_len, r->gen_len);
        cell_int(out, r->run_index);
        cell_text(out, ec_gate_status_name(r->gate));
        cell(out, e);
        cell_text(out, isfinite(e) ? ec_energy_definition_name(d) : "");
        cell(out, r->tok_s);
        cell_text(out, r->driver);
        cell_text(out, r->git_commit);
        fputc('\n', out);
    }
    if (m->n > MD_MAX_RUNS)
        fprintf(out, "\n… and %zu more runs (the HTML report lists and searches them all; "
                     "`ecocompute export` writes them).\n",
                m->n - MD_MAX_RUNS);
    fputc('\n', out);
}

static void provenance(FILE *out, const rp_model *m)
{
    fputs("## Provenance\n\nGross energy is what the board drew; net subtracts the session's "
          "idle power × duration.\n\n",
          out);
    if (!m->nenv) {
        fputs("No runs, no environments.\n", out);
        return;
    }
    static const char *const h[] = {"GPU", "Driver", "CUDA", "Host CPU", "ecocompute", "Commit",
                                    "Source", "Licence", "Sessions", "Runs"};
    header(out, h, 10);
    for (size_t i = 0; i < m->nenv; i++) {
        const ec_run_record *k = m->env[i].key;
        fputc('|', out);
        cell_text(out, k->gpu_name);
        cell_text(out, k->driver);
        cell_text(out, k->cuda);
        cell_text(out, k->host_cpu);
        cell_text(out, k->ecocompute_version);
        cell_text(out, k->git_commit);
        cell_text(out, k->source);
        cell_text(out, k->licence[0] ? k->licence : "ours");
        cell_int(out, (long)m->env[i].sessions);
        cell_int(out, (long)m->env[i].runs);
        fputc('\n', out);
    }
}

int rp_write_markdown(FILE *out, const rp_model *m)
{
    fprintf(out, "<!-- generator: " EC_REPORT_GENERATOR " %s -->\n# ", ec_version());
    md_text(out, m->title);
    size_t defs[3] = {0, 0, 0};
    for (size_t i = 0; i < m->nc; i++)
        if (m->c[i].e.n) defs[m->c[i].def] += m->c[i].e.n;
    fprintf(out, "\n\n%zu runs, %zu configurations", m->n, m->nc);
    if (m->input[0]) {
        fputs(" from ", out);
        md_text(out, m->input);
    }
    fprintf(out, ". Energies: %zu gross, %zu net, %zu of unknown definition (never mixed in one "
                 "comparison).\n\n",
            defs[0], defs[1], defs[2]);
    overview(out, m);
    precisions(out, m);
    if (batch(out, m) || crossover(out, m)) return -1;
    accuracy(out, m);
    traces(out, m);
    compare(out, m);
    runs(out, m);
    provenance(out, m);
    return 0;
}
