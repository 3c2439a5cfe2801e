/* html_views.c — the charted views of the HTML report: precisions (bars with 95 % CIs, reference
 * hatched next to fused), batch size (log-log points with the fitted power law and its band),
 * crossover (Δ% vs model size with the fitted line and the crossover's interval), energy ×
 * accuracy (scatter) and power traces (W against time, phases shaded, idle line). Each view
 * says why when it has nothing to draw. */
#include "report/report_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ecocompute/common.h"

static const char *gpu_of(const ec_run_record *k)
{
    return k->gpu_name[0] ? k->gpu_name : "GPU unknown";
}

/* A mean with its 95 % CI under it: "12.3" over "11.1 – 13.5" (sorts by the mean). */
static void mean_ci_cell(FILE *out, double mean, double lo, double hi)
{
    char a[40], b[40], c[40];
    if (!isfinite(mean)) {
        fputs("<td class=\"num\" data-v=\"\">–</td>", out);
        return;
    }
    fprintf(out, "<td class=\"num\" data-v=\"%.6g\">%s", mean, rp_num(a, sizeof a, mean));
    if (isfinite(lo) && isfinite(hi))
        fprintf(out, "<br><span class=\"ci\">%s – %s</span>", rp_num(b, sizeof b, lo),
                rp_num(c, sizeof c, hi));
    fputs("</td>", out);
}

static void filter_box(FILE *out, const char *table_id)
{
    fprintf(out, "<div class=\"controls\"><label>Filter rows <input type=\"search\" "
                 "data-filter=\"%s\" data-count=\"%s-count\" placeholder=\"e.g. H100 int8\">"
                 "</label><span id=\"%s-count\" role=\"status\"></span></div>\n",
            table_id, table_id, table_id);
}

static void header_row(FILE *out, const char *const *h, size_t n, const char *numeric)
{
    fputs("<thead><tr>", out);
    for (size_t i = 0; i < n; i++) rp_th(out, h[i], numeric[i] == 'n');
    fputs("</tr></thead><tbody>", out);
}

static void charts_capped(FILE *out, size_t n)
{
    if (n > RP_MAX_CHARTS)
        fprintf(out, "<p class=\"note\">Charts for the first %d of %zu groups; the table lists "
                     "them all.</p>\n",
                RP_MAX_CHARTS, n);
}

/* The style of series s: by precision, so a precision looks the same in every chart. */
static size_t style_of(const rp_model *m, const rp_group *g, const size_t *first, size_t s)
{
    return (size_t)rp_precision_rank(m->c[g->cfg[first[s]]].key->precision);
}

/* ---- precisions ---- */

static int is_reference(const ec_run_record *k)
{
    return !strcmp(k->kernels, "reference");
}

static void precision_chart(FILE *out, const rp_model *m, const rp_group *g)
{
    double max = 0;
    for (size_t i = 0; i < g->n; i++) {
        const rp_config *c = &m->c[g->cfg[i]];
        double v[] = {c->e.mean, c->e.ci_hi, c->e_net.mean};
        for (int j = 0; j < 3; j++)
            if (isfinite(v[j]) && v[j] > max) max = v[j];
    }
    if (!(max > 0)) return;
    const double left = 190, right = 150, top = 28, row = 30;
    const int width = 760;
    double plot_w = width - left - right;
    int height = (int)(top + row * (double)g->n + 40);
    const rp_config *c0 = &m->c[g->cfg[0]];
    char title[480];
    snprintf(title, sizeof title, "Energy per 1000 tokens (%s) by precision: %s",
             rp_def_name(c0->def, c0->mixed), g->title);
    rp_svg_begin(out, width, height, title);
    rp_axes a = {.x0 = 0, .x1 = max, .y0 = 0, .y1 = 1, .left = left, .top = top, .w = plot_w,
                 .h = row * (double)g->n};
    rp_axes_fit(&a);
    a.x0 = 0;
    char xl[96];
    snprintf(xl, sizeof xl, "J per 1000 generated tokens (%s); thin bar: net",
             rp_def_name(c0->def, c0->mixed));
    /* x axis only: the rows are the categories */
    fprintf(out, "<g class=\"axes\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                 "class=\"plot\"/></g>",
            a.left, a.top, a.w, a.h);
    {
        /* ticks along x */
        char b[32];
        double span = a.x1, raw = span / 5, mag = pow(10, floor(log10(raw))), step = mag;
        if (raw / mag > 5) step = 10 * mag;
        else if (raw / mag > 2) step = 5 * mag;
        else if (raw / mag > 1) step = 2 * mag;
        for (double t = 0; t <= a.x1 + step * 1e-9; t += step) {
            double x = rp_px(&a, t);
            fprintf(out, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>"
                         "<text x=\"%.1f\" y=\"%.1f\" class=\"tick\" text-anchor=\"middle\">%s"
                         "</text>",
                    x, x, a.top, a.top + a.h, x, a.top + a.h + 14, t >= 1000 ? rp_num(b, sizeof b, t) : (snprintf(b, sizeof b, "%g", t), b));
        }
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" class=\"label\" text-anchor=\"middle\">",
                a.left + a.w / 2, a.top + a.h + 32);
        rp_html_text(out, xl);
        fputs("</text>", out);
    }
    for (size_t i = 0; i < g->n; i++) {
        const rp_config *c = &m->c[g->cfg[i]];
        double y = top + row * (double)i;
        int ref = is_reference(c->key);
        char v[40], lo[40], hi[40], d[48] = "";
        if (c->has_delta) snprintf(d, sizeof d, " (%+.1f %%)", c->delta.pct);
        fprintf(out, "<g class=\"bar\"><title>%s: %s J/1k tok, 95%% CI %s – %s, n = %zu%s</title>",
                c->label, rp_num(v, sizeof v, c->e.mean), rp_num(lo, sizeof lo, c->e.ci_lo),
                rp_num(hi, sizeof hi, c->e.ci_hi), c->e.n, d);
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" class=\"val\" text-anchor=\"end\">", left - 6,
                y + 15);
        rp_html_text(out, c->label);
        fputs("</text>", out);
        if (c->e.mean > 0) /* a bar from zero; a negative mean has none (the text says it) */
            fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"14\" fill=\"%s\" "
                         "stroke=\"%s\"/>",
                    rp_px(&a, 0), y + 4, rp_px(&a, c->e.mean) - rp_px(&a, 0),
                    ref ? "url(#hatch)" : "#0072B2", ref ? "#D55E00" : "#0072B2");
        if (c->e_net.mean > 0 && c->def == EC_ENERGY_GROSS)
            fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"5\" fill=\"#555\"/>",
                    rp_px(&a, 0), y + 20, rp_px(&a, c->e_net.mean) - rp_px(&a, 0));
        if (isfinite(c->e.ci_lo) && c->e.ci_hi > 0)
            fprintf(out, "<path d=\"M%.1f %.1fV%.1fM%.1f %.1fH%.1fM%.1f %.1fV%.1f\" "
                         "stroke=\"#000\" stroke-width=\"1.5\" fill=\"none\"/>",
                    rp_px(&a, fmax(c->e.ci_lo, 0)), y + 6, y + 16, rp_px(&a, fmax(c->e.ci_lo, 0)),
                    y + 11, rp_px(&a, c->e.ci_hi), rp_px(&a, c->e.ci_hi), y + 6, y + 16);
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" class=\"val\">%s%s</text></g>",
                left + plot_w + 6, y + 15, rp_num(v, sizeof v, c->e.mean), d);
    }
    rp_svg_end(out, "Solid bars: fused (or the source's) kernels; hatched bars: reference "
                    "kernels (the libraries' dataflow). Whiskers: 95 % CI of the mean over runs. "
                    "Δ in brackets: vs fp16 of the same kernels.");
}

int rp_view_precisions(FILE *out, const rp_model *m)
{
    if (!m->nprec) {
        rp_empty(out, m->n ? "No configuration carries an energy figure. Measure precisions "
                             "with <code>ecocompute bench --precision fp16,int8,nf4</code>."
                           : "The input holds no runs: nothing to compare. Measure with "
                             "<code>ecocompute bench --precision fp16,int8,nf4</code>.");
        return 0;
    }
    char *used = calloc(m->nenv ? m->nenv : 1, 1);
    if (!used) return ec_set_error("out of memory");
    charts_capped(out, m->nprec);
    for (size_t i = 0; i < m->nprec && i < RP_MAX_CHARTS; i++) {
        fputs("<h3>", out);
        rp_html_text(out, m->prec[i].title);
        fputs("</h3>", out);
        precision_chart(out, m, &m->prec[i]);
    }
    fputs("<h3>All configurations</h3>", out);
    filter_box(out, "prec-table");
    fputs("<div class=\"wrap\"><table class=\"sortable\" id=\"prec-table\">", out);
    fputs("<p class=\"note\">Each value is the mean over the configuration's runs with its 95 % "
          "CI below it (Δ: Welch's interval).</p>",
          out);
    static const char *const h[] = {
        "GPU", "Model", "Batch", "Prompt/Gen (tok)", "Precision", "Kernels", "n", "Energy def",
        "J/1k tok", "J/1k gross", "J/1k net", "J/request gross", "J/request net",
        "Δ vs fp16 (%)", "tok/s", "Power (W)", "Gate"};
    header_row(out, h, 17, "ttnttttnnnnnnnnnt");
    for (size_t g = 0; g < m->nprec; g++)
        for (size_t j = 0; j < m->prec[g].n; j++) {
            const rp_config *c = &m->c[m->prec[g].cfg[j]];
            const ec_run_record *k = c->key;
            rp_mark_config(m, c, used);
            fputs("<tr>", out);
            rp_td_text(out, gpu_of(k));
            rp_td_text(out, k->model);
            rp_td_int(out, k->batch > 0 ? k->batch : -1);
            fprintf(out, "<td>%d / %d</td>", k->prompt_len, k->gen_len);
            rp_td_text(out, k->precision);
            rp_td_text(out, k->kernels[0] ? k->kernels : "–");
            rp_td_int(out, (long)c->e.n);
            rp_td_text(out, rp_def_name(c->def, c->mixed));
            const ec_summary *col[] = {&c->e, &c->e_gross, &c->e_net, &c->req_gross, &c->req_net};
            for (int q = 0; q < 5; q++) mean_ci_cell(out, col[q]->mean, col[q]->ci_lo, col[q]->ci_hi);
            if (c->has_delta) mean_ci_cell(out, c->delta.pct, c->delta.pct_lo, c->delta.pct_hi);
            else mean_ci_cell(out, NAN, NAN, NAN);
            mean_ci_cell(out, c->tok.mean, c->tok.ci_lo, c->tok.ci_hi);
            rp_td_num(out, c->w.mean);
            fprintf(out, "<td%s>%s</td></tr>", c->gate == EC_GATE_FAIL ? " class=\"gate-fail\"" : "",
                    ec_gate_status_name(c->gate));
        }
    fputs("</tbody></table></div>\n", out);
    rp_provenance(out, m, used);
    free(used);
    return 0;
}

/* ---- batch size ---- */

/* The per-request energy a configuration is drawn with: gross when stored, else net. */
static const ec_summary *req_of(const rp_config *c)
{
    return c->req_gross.n ? &c->req_gross : &c->req_net;
}

static void axes_range(rp_axes *a, double x, double y)
{
    if (!isfinite(x) || !isfinite(y) || (a->logx && !(x > 0)) || (a->logy && !(y > 0))) return;
    if (!isfinite(a->x0) || x < a->x0) a->x0 = x;
    if (!isfinite(a->x1) || x > a->x1) a->x1 = x;
    if (!isfinite(a->y0) || y < a->y0) a->y0 = y;
    if (!isfinite(a->y1) || y > a->y1) a->y1 = y;
}

static int batch_charts(FILE *out, const rp_model *m, const rp_group *g, rp_batch_fit *fits,
                        size_t *first, size_t ns, const size_t *which)
{
    for (int panel = 0; panel < 2; panel++) {
        rp_axes a = {.x0 = NAN, .x1 = NAN, .y0 = NAN, .y1 = NAN, .logx = 1, .logy = 1,
                     .left = 70, .top = 16, .w = 340, .h = 230};
        for (size_t i = 0; i < g->n; i++) {
            const rp_config *c = &m->c[g->cfg[i]];
            double y = panel ? c->tok.mean : req_of(c)->mean;
            axes_range(&a, c->key->batch, y);
            if (!panel) axes_range(&a, c->key->batch, req_of(c)->ci_hi);
        }
        if (!isfinite(a.x0)) continue;
        rp_axes_fit(&a);
        const rp_config *c0 = &m->c[g->cfg[0]];
        char title[480], yl[80];
        int gross = c0->req_gross.n > 0;
        snprintf(yl, sizeof yl, panel ? "tok/s (decode)" : "J per request (%s)",
                 gross ? "gross" : "net");
        snprintf(title, sizeof title, "%s against batch size: %s", panel ? "Throughput" : "Energy per request",
                 g->title);
        int height = 290 + 18 * (int)((ns + 1) / 2);
        rp_svg_begin(out, 440, height, title);
        rp_axes_draw(out, &a, "batch size (sequences, log)", yl);
        for (size_t s = 0; s < ns; s++) {
            /* fitted law and band (energy panel), or lines joining the means (throughput) */
            if (!panel && fits[s].ok) {
                fprintf(out, "<path fill=\"%s\" fill-opacity=\"0.15\" stroke=\"none\" d=\"",
                        rp_series_colour(style_of(m, g, first, s)));
                const int steps = 24;
                double bx0 = a.x0 * 1.3, bx1 = a.x1 / 1.3;
                for (int k = 0; k <= steps; k++) {
                    double b = bx0 * pow(bx1 / bx0, (double)k / steps), lo, hi;
                    rp_batch_band(&fits[s], b, &lo, &hi);
                    fprintf(out, "%c%.1f %.1f", k ? 'L' : 'M', rp_px(&a, b),
                            rp_py(&a, fmin(fmax(hi, a.y0), a.y1)));
                }
                for (int k = steps; k >= 0; k--) {
                    double b = bx0 * pow(bx1 / bx0, (double)k / steps), lo, hi;
                    rp_batch_band(&fits[s], b, &lo, &hi);
                    fprintf(out, "L%.1f %.1f", rp_px(&a, b), rp_py(&a, fmin(fmax(lo, a.y0), a.y1)));
                }
                fprintf(out, "Z\"/><path stroke=\"%s\" stroke-width=\"2\" stroke-dasharray=\"%s\" "
                             "fill=\"none\" d=\"M%.1f %.1fL%.1f %.1f\"><title>",
                        rp_series_colour(style_of(m, g, first, s)), rp_series_dash(style_of(m, g, first, s)), rp_px(&a, bx0),
                        rp_py(&a, fits[s].fit.a * pow(bx0, -fits[s].fit.b)), rp_px(&a, bx1),
                        rp_py(&a, fits[s].fit.a * pow(bx1, -fits[s].fit.b)));
                fprintf(out, "fit: J/request ≈ %.4g·B^-%.3f (b 95%% CI %.3f – %.3f), R² %.3f",
                        fits[s].fit.a, fits[s].fit.b, fits[s].fit.b_lo, fits[s].fit.b_hi,
                        fits[s].fit.r2);
                fputs("</title></path>", out);
            } else {
                fprintf(out, "<path stroke=\"%s\" stroke-width=\"1.5\" stroke-dasharray=\"%s\" "
                             "fill=\"none\" d=\"",
                        rp_series_colour(style_of(m, g, first, s)), rp_series_dash(style_of(m, g, first, s)));
                int k = 0;
                for (size_t i = 0; i < g->n; i++) {
                    const rp_config *c = &m->c[g->cfg[i]];
                    double y = panel ? c->tok.mean : req_of(c)->mean;
                    if (which[i] != s || !(y > 0)) continue;
                    fprintf(out, "%c%.1f %.1f", k++ ? 'L' : 'M', rp_px(&a, c->key->batch),
                            rp_py(&a, y));
                }
                fputs("\"/>", out);
            }
            for (size_t i = 0; i < g->n; i++) {
                const rp_config *c = &m->c[g->cfg[i]];
                if (which[i] != s) continue;
                const ec_summary *e = panel ? &c->tok : req_of(c);
                if (!(e->mean > 0)) continue;
                double x = rp_px(&a, c->key->batch);
                /* clipped to the plot; an interval reaching 0 runs to the log axis' bottom */
                if (isfinite(e->ci_lo) && isfinite(e->ci_hi))
                    fprintf(out, "<path d=\"M%.1f %.1fV%.1f\" stroke=\"%s\"/>", x,
                            rp_py(&a, e->ci_lo > a.y0 ? e->ci_lo : a.y0),
                            rp_py(&a, fmin(e->ci_hi, a.y1)),
                            rp_series_colour(style_of(m, g, first, s)));
                char tip[200], v[40];
                snprintf(tip, sizeof tip, "%s, batch %d: %s %s (n = %zu)", c->label, c->key->batch,
                         rp_num(v, sizeof v, e->mean), panel ? "tok/s" : "J/request", e->n);
                rp_marker(out, style_of(m, g, first, s), x, rp_py(&a, e->mean), tip);
            }
        }
        for (size_t s = 0; s < ns; s++) {
            const rp_config *c = &m->c[g->cfg[first[s]]];
            char text[96];
            snprintf(text, sizeof text, "%s%s", c->key->precision,
                     !panel && fits[s].ok ? " (fit, 95 % band)" : "");
            rp_legend(out, style_of(m, g, first, s), 70 + 200 * (double)(s % 2), 290 + 18 * (double)(s / 2), text, 1);
        }
        rp_svg_end(out, NULL);
    }
    return 0;
}

int rp_view_batch(FILE *out, const rp_model *m)
{
    if (!m->nbatch) {
        rp_empty(out, m->n ? "No GPU, model and precision was measured at two or more batch "
                             "sizes, so there is no batch curve to draw. Sweep batch sizes with "
                             "<code>ecocompute bench --batch 1,8,32,64</code>."
                           : "The input holds no runs. Sweep batch sizes with <code>ecocompute "
                             "bench --batch 1,8,32,64</code>.");
        return 0;
    }
    char *used = calloc(m->nenv ? m->nenv : 1, 1);
    size_t cap = rp_groups_max_size(m->batch, m->nbatch);
    size_t *first = malloc(cap * sizeof *first), *which = malloc(cap * sizeof *which);
    char *members = malloc(cap);
    rp_batch_fit *fits = malloc(cap * sizeof *fits);
    rp_batch_fit *all = calloc(m->nbatch * cap, sizeof *all);
    int rc = 0;
    if (!used || !first || !which || !members || !fits || !all) {
        rc = ec_set_error("out of memory");
        goto out;
    }
    charts_capped(out, m->nbatch);
    for (size_t gi = 0; gi < m->nbatch && !rc; gi++) {
        const rp_group *g = &m->batch[gi];
        size_t ns = rp_series_of(m, g, first, which);
        for (size_t s = 0; s < ns && !rc; s++)
            rc = rp_batch_series_fit(m, g, first[s], members, &all[gi * cap + s]);
        if (gi >= RP_MAX_CHARTS || rc) continue;
        fputs("<h3>", out);
        rp_html_text(out, g->title);
        fputs("</h3>", out);
        rc = batch_charts(out, m, g, &all[gi * cap], first, ns, which);
    }
    if (rc) goto out;
    fputs("<h3>Fitted scaling laws</h3><p class=\"note\">J per request ≈ a·B<sup>−b</sup>, "
          "least squares on (ln B, ln J) over every run; fitted where three or more batch sizes "
          "were measured. b = 1 would mean energy per request falls in proportion to the "
          "batch.</p>",
          out);
    filter_box(out, "batch-table");
    fputs("<div class=\"wrap\"><table class=\"sortable\" id=\"batch-table\">", out);
    static const char *const h[] = {"GPU", "Model", "Kernels", "Precision", "Energy def",
                                    "Batch sizes", "Runs", "a (J/request at B=1)", "b",
                                    "95% CI b", "R²"};
    header_row(out, h, 11, "tttttnnnn.n");
    for (size_t gi = 0; gi < m->nbatch; gi++) {
        const rp_group *g = &m->batch[gi];
        size_t ns = rp_series_of(m, g, first, which);
        for (size_t s = 0; s < ns; s++) {
            const rp_config *c = &m->c[g->cfg[first[s]]];
            const rp_batch_fit *f = &all[gi * cap + s];
            int bmin = 0, bmax = 0;
            for (size_t i = 0; i < g->n; i++) {
                if (which[i] != s) continue;
                rp_mark_config(m, &m->c[g->cfg[i]], used);
                int b = m->c[g->cfg[i]].key->batch;
                bmin = !bmin || b < bmin ? b : bmin;
                bmax = b > bmax ? b : bmax;
            }
            fputs("<tr>", out);
            rp_td_text(out, gpu_of(c->key));
            rp_td_text(out, c->key->model);
            rp_td_text(out, c->key->kernels[0] ? c->key->kernels : "–");
            rp_td_text(out, c->key->precision);
            fprintf(out, "<td>%s</td><td>%d – %d</td>", c->req_gross.n ? "gross" : "net", bmin,
                    bmax);
            if (f->ok) {
                rp_td_int(out, (long)f->fit.n);
                rp_td_num(out, f->fit.a);
                rp_td_num(out, f->fit.b);
                rp_td_ci(out, f->fit.b_lo, f->fit.b_hi);
                rp_td_num(out, f->fit.r2);
            } else {
                fputs("<td colspan=\"5\">fewer than 3 batch sizes: no fit</td>", out);
            }
            fputs("</tr>", out);
        }
    }
    fputs("</tbody></table></div>\n", out);
    rp_provenance(out, m, used);
out:
    free(used), free(first), free(which), free(members), free(fits), free(all);
    return rc;
}

/* ---- crossover ---- */

static int cross_chart(FILE *out, const rp_model *m, const rp_group *g, size_t *first,
                       size_t ns, const size_t *which, const ec_crossover *fits, const int *ok)
{
    rp_axes a = {.x0 = NAN, .x1 = NAN, .y0 = NAN, .y1 = NAN, .logx = 1,
                 .left = 70, .top = 16, .w = 560, .h = 250};
    for (size_t i = 0; i < g->n; i++) {
        const rp_config *c = &m->c[g->cfg[i]];
        axes_range(&a, c->key->params_b, c->delta.pct);
        axes_range(&a, c->key->params_b, c->delta.pct_lo);
        axes_range(&a, c->key->params_b, c->delta.pct_hi);
    }
    axes_range(&a, a.x0, 0); /* the zero line is always in view */
    if (!isfinite(a.x0)) return 0;
    rp_axes_fit(&a);
    char title[480];
    snprintf(title, sizeof title, "Δ energy vs fp16 against model size: %s", g->title);
    int height = 310 + 18 * (int)((ns + 1) / 2);
    rp_svg_begin(out, 680, height, title);
    rp_axes_draw(out, &a, "model size (billions of parameters, log)", "Δ energy vs fp16 (%)");
    fprintf(out, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#000\"/>", a.left,
            a.left + a.w, rp_py(&a, 0), rp_py(&a, 0));
    for (size_t s = 0; s < ns; s++) {
        if (ok[s]) {
            const ec_crossover *f = &fits[s];
            double x0 = f->min_b, x1 = f->max_b;
            fprintf(out, "<path stroke=\"%s\" stroke-width=\"2\" stroke-dasharray=\"%s\" "
                         "fill=\"none\" d=\"M%.1f %.1fL%.1f %.1f\"/>",
                    rp_series_colour(style_of(m, g, first, s)), rp_series_dash(style_of(m, g, first, s)), rp_px(&a, x0),
                    rp_py(&a, f->line.intercept + f->line.slope * log(x0)), rp_px(&a, x1),
                    rp_py(&a, f->line.intercept + f->line.slope * log(x1)));
            if (f->found) {
                double lo = isfinite(f->lo_b) ? fmax(f->lo_b, a.x0) : f->params_b;
                double hi = isfinite(f->hi_b) ? fmin(f->hi_b, a.x1) : f->params_b;
                char v[40], l[40], h[40];
                fprintf(out, "<g class=\"pt\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                             "height=\"8\" fill=\"%s\" fill-opacity=\"0.35\"/><line x1=\"%.1f\" "
                             "x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                             "stroke-dasharray=\"3 3\"/><title>crossover %s B params (95%% CI %s – "
                             "%s)</title></g>",
                        rp_px(&a, lo), rp_py(&a, 0) - 4, fmax(rp_px(&a, hi) - rp_px(&a, lo), 2),
                        rp_series_colour(style_of(m, g, first, s)), rp_px(&a, f->params_b), rp_px(&a, f->params_b),
                        a.top, a.top + a.h, rp_series_colour(style_of(m, g, first, s)),
                        rp_num(v, sizeof v, f->params_b), rp_num(l, sizeof l, f->lo_b),
                        rp_num(h, sizeof h, f->hi_b));
            }
        }
        for (size_t i = 0; i < g->n; i++) {
            const rp_config *c = &m->c[g->cfg[i]];
            if (which[i] != s) continue;
            double x = rp_px(&a, c->key->params_b);
            if (isfinite(c->delta.pct_lo) && isfinite(c->delta.pct_hi))
                fprintf(out, "<path d=\"M%.1f %.1fV%.1f\" stroke=\"%s\"/>", x,
                        rp_py(&a, c->delta.pct_lo), rp_py(&a, c->delta.pct_hi),
                        rp_series_colour(style_of(m, g, first, s)));
            char tip[240];
            snprintf(tip, sizeof tip, "%s %s (%.2f B params): %+.1f %% vs fp16", c->key->model,
                     c->label, c->key->params_b, c->delta.pct);
            rp_marker(out, style_of(m, g, first, s), x, rp_py(&a, c->delta.pct), tip);
        }
    }
    for (size_t s = 0; s < ns; s++) {
        char text[96];
        snprintf(text, sizeof text, "%s%s", m->c[g->cfg[first[s]]].key->precision,
                 ok[s] ? " (fit)" : "");
        rp_legend(out, style_of(m, g, first, s), 70 + 220 * (double)(s % 2), 310 + 18 * (double)(s / 2), text, ok[s]);
    }
    rp_svg_end(out, "Above zero a precision costs more energy than fp16, below it saves. Whiskers: "
                    "Welch 95 % CI of Δ; shaded band on the zero line: 95 % interval of the "
                    "crossover (delta method in ln size).");
    return 0;
}

int rp_view_crossover(FILE *out, const rp_model *m)
{
    if (!m->ncross) {
        rp_empty(out, m->n ? "No precision has a Δ vs fp16 at two or more model sizes on one GPU "
                             "and kernel family, so no crossover can be fitted. Measure several "
                             "models: <code>ecocompute bench --model tinyllama-1.1b,llama-2-7b "
                             "--precision fp16,nf4</code>."
                           : "The input holds no runs. Measure several models at fp16 and a "
                             "quantized precision with <code>ecocompute bench</code>.");
        return 0;
    }
    char *used = calloc(m->nenv ? m->nenv : 1, 1);
    size_t cap = rp_groups_max_size(m->cross, m->ncross);
    size_t *first = malloc(cap * sizeof *first), *which = malloc(cap * sizeof *which);
    ec_crossover *fits = calloc(m->ncross * cap, sizeof *fits);
    int *ok = calloc(m->ncross * cap, sizeof *ok);
    int rc = 0;
    if (!used || !first || !which || !fits || !ok) {
        rc = ec_set_error("out of memory");
        goto out;
    }
    charts_capped(out, m->ncross);
    for (size_t gi = 0; gi < m->ncross; gi++) {
        const rp_group *g = &m->cross[gi];
        size_t ns = rp_series_of(m, g, first, which);
        for (size_t s = 0; s < ns && !rc; s++) {
            int fit = rp_cross_series_fit(m, g, which, s, &fits[gi * cap + s]);
            if (fit < 0) rc = -1;
            ok[gi * cap + s] = fit == 0;
        }
        if (rc) goto out;
        if (gi >= RP_MAX_CHARTS) continue;
        fputs("<h3>", out);
        rp_html_text(out, g->title);
        fputs("</h3>", out);
        cross_chart(out, m, g, first, ns, which, &fits[gi * cap], &ok[gi * cap]);
    }
    fputs("<h3>Fitted crossovers</h3>", out);
    filter_box(out, "cross-table");
    fputs("<div class=\"wrap\"><table class=\"sortable\" id=\"cross-table\">", out);
    static const char *const h[] = {"GPU", "Kernels", "Batch", "Precision", "Energy def",
                                    "Sizes (B params)", "Slope (%/ln B)", "Crossover (B params)",
                                    "95% CI (B)", "R²", "Verdict"};
    header_row(out, h, 11, "ttnttt.nn.nt");
    for (size_t gi = 0; gi < m->ncross; gi++) {
        const rp_group *g = &m->cross[gi];
        size_t ns = rp_series_of(m, g, first, which);
        for (size_t s = 0; s < ns; s++) {
            const rp_config *c = &m->c[g->cfg[first[s]]];
            const ec_crossover *f = &fits[gi * cap + s];
            for (size_t i = 0; i < g->n; i++)
                if (which[i] == s) rp_mark_config(m, &m->c[g->cfg[i]], used);
            fputs("<tr>", out);
            rp_td_text(out, gpu_of(c->key));
            rp_td_text(out, c->key->kernels[0] ? c->key->kernels : "–");
            rp_td_int(out, c->key->batch > 0 ? c->key->batch : -1);
            rp_td_text(out, c->key->precision);
            rp_td_text(out, rp_def_name(c->def, c->mixed));
            if (!ok[gi * cap + s]) {
                fputs("<td colspan=\"6\">one model size only: no fit</td></tr>", out);
                continue;
            }
            char lo[40], hi[40];
            fprintf(out, "<td>%s – %s</td>", rp_num(lo, sizeof lo, f->min_b),
                    rp_num(hi, sizeof hi, f->max_b));
            rp_td_num(out, f->line.slope);
            rp_td_num(out, f->found ? f->params_b : NAN);
            rp_td_ci(out, f->found ? f->lo_b : NAN, f->found ? f->hi_b : NAN);
            rp_td_num(out, f->line.r2);
            rp_td_text(out, f->found ? "crossover in range"
                            : f->line.intercept + f->line.slope * log(f->min_b) > 0
                                ? "no crossover in range (costs more)"
                                : "no crossover in range (saves)");
            fputs("</tr>", out);
        }
    }
    fputs("</tbody></table></div>\n", out);
    rp_provenance(out, m, used);
out:
    free(used), free(first), free(which), free(fits), free(ok);
    return rc;
}

/* ---- energy × accuracy ---- */

int rp_view_accuracy(FILE *out, const rp_model *m)
{
    if (!m->naccuracy) {
        rp_empty(out, "No accuracy is stored with these runs (perplexity or KL vs float32), so "
                      "energy cannot be set against it. Measure accuracy with <code>ecocompute "
                      "eval --ppl FILE --tokenizer TOK</code> and store it with the runs.");
        return 0;
    }
    char *used = calloc(m->nenv ? m->nenv : 1, 1);
    if (!used) return ec_set_error("out of memory");
    /* x: Δ perplexity vs fp16 where any configuration has it, else KL vs float32 */
    int use_ppl = 0;
    for (size_t i = 0; i < m->nc; i++) use_ppl |= isfinite(m->c[i].d_ppl);
    rp_axes a = {.x0 = NAN, .x1 = NAN, .y0 = NAN, .y1 = NAN, .logy = 1,
                 .left = 80, .top = 16, .w = 560, .h = 260};
    for (size_t i = 0; i < m->nc; i++) {
        const rp_config *c = &m->c[i];
        axes_range(&a, use_ppl ? c->d_ppl : c->kl.mean, c->e.mean);
    }
    if (isfinite(a.x0)) {
        rp_axes_fit(&a);
        rp_svg_begin(out, 700, 360, "Energy per 1000 tokens against accuracy loss");
        rp_axes_draw(out, &a, use_ppl ? "Δ perplexity vs fp16 (lower is better)"
                                      : "KL divergence vs float32 (nats, lower is better)",
                     "J per 1000 tokens (log)");
        size_t legend = 0;
        for (int rank = 0; rank < 8; rank++) {
            int any = 0;
            for (size_t i = 0; i < m->nc; i++) {
                const rp_config *c = &m->c[i];
                double x = use_ppl ? c->d_ppl : c->kl.mean;
                if (rp_precision_rank(c->key->precision) != rank || !isfinite(x) ||
                    !(c->e.mean > 0))
                    continue;
                char tip[300], v[40];
                snprintf(tip, sizeof tip, "%s %s %s: %s J/1k tok (%s), %s %.4g",
                         gpu_of(c->key), c->key->model, c->label, rp_num(v, sizeof v, c->e.mean),
                         rp_def_name(c->def, c->mixed), use_ppl ? "Δ perplexity" : "KL", x);
                rp_marker(out, (size_t)rank, rp_px(&a, x), rp_py(&a, c->e.mean), tip);
                if (!any) {
                    rp_legend(out, (size_t)rank, 80 + 150 * (double)(legend % 4),
                              320 + 18 * (double)(legend / 4), c->key->precision, 0);
                    legend++;
                }
                any = 1;
            }
        }
        rp_svg_end(out, "Each point is a configuration (mean over its runs); marker shape and "
                        "colour name the precision.");
    } else {
        rp_empty(out, "Accuracy is stored, but no configuration with accuracy also has an "
                      "energy figure and an fp16 baseline to compare with.");
    }
    filter_box(out, "acc-table");
    fputs("<div class=\"wrap\"><table class=\"sortable\" id=\"acc-table\">", out);
    static const char *const h[] = {"GPU",          "Model",     "Precision", "Kernels",
                                    "Batch",        "Perplexity", "Δ perplexity",
                                    "KL vs f32 (nats)", "J/1k tok", "Energy def"};
    header_row(out, h, 10, "ttttnnnnnt");
    for (size_t i = 0; i < m->nc; i++) {
        const rp_config *c = &m->c[i];
        if (!c->ppl.n && !c->kl.n) continue;
        rp_mark_config(m, c, used);
        fputs("<tr>", out);
        rp_td_text(out, gpu_of(c->key));
        rp_td_text(out, c->key->model);
        rp_td_text(out, c->key->precision);
        rp_td_text(out, c->key->kernels[0] ? c->key->kernels : "–");
        rp_td_int(out, c->key->batch > 0 ? c->key->batch : -1);
        rp_td_num(out, c->ppl.mean);
        rp_td_num(out, c->d_ppl);
        rp_td_num(out, c->kl.mean);
        rp_td_num(out, c->e.mean);
        rp_td_text(out, c->e.n ? rp_def_name(c->def, c->mixed) : "–");
        fputs("</tr>", out);
    }
    fputs("</tbody></table></div>\n", out);
    rp_provenance(out, m, used);
    free(used);
    return 0;
}

/* ---- power traces ---- */

/* Seconds since 1970 of "YYYY-MM-DDTHH:MM:SSZ" (UTC); NaN when it does not parse. */
static double iso_seconds(const char *s)
{
    int y, mo, d, h, mi, se;
    if (sscanf(s, "%d-%d-%dT%d:%d:%d", &y, &mo, &d, &h, &mi, &se) != 6) return NAN;
    /* days from civil (Howard Hinnant's algorithm) */
    y -= mo <= 2;
    long era = (y >= 0 ? y : y - 399) / 400;
    long yoe = y - era * 400;
    long doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    double days = (double)(era * 146097 + doe - 719468);
    return days * 86400.0 + h * 3600.0 + mi * 60.0 + se;
}

#define TRACE_POINTS 1200 /* drawn per chart: min and max of each bucket keep the peaks */

static void trace_chart(FILE *out, const rp_model *m, const ec_report_trace *t)
{
    const ec_session_trace *tr = &t->trace;
    rp_axes a = {.x0 = tr->points[0].t_s, .x1 = tr->points[tr->n - 1].t_s, .y0 = 0, .y1 = NAN,
                 .left = 70, .top = 16, .w = 1000, .h = 240};
    for (size_t i = 0; i < tr->n; i++)
        if (!isfinite(a.y1) || tr->points[i].power_w > a.y1) a.y1 = tr->points[i].power_w;
    if (isfinite(tr->idle_power_w) && tr->idle_power_w > a.y1) a.y1 = tr->idle_power_w;
    rp_axes_fit(&a);
    char title[200];
    snprintf(title, sizeof title, "GPU power against time, session %s", t->session_id);
    rp_svg_begin(out, 1100, 330, title);
    rp_axes_draw(out, &a, "time since the meter opened (s)", "GPU power, instant (W)");
    /* phases of the session's runs, placed by their start time (whole seconds) */
    double t0 = iso_seconds(tr->started_utc);
    size_t shaded = 0;
    for (size_t i = 0; i < m->n && isfinite(t0) && shaded < 400; i++) {
        const ec_run_record *r = &m->r[i];
        if (strcmp(r->session_id, t->session_id)) continue;
        double s = iso_seconds(r->timestamp_utc) - t0;
        double p = isfinite(r->prefill.time_s) ? r->prefill.time_s : 0;
        double d = isfinite(r->decode.time_s) ? r->decode.time_s : 0;
        if (!isfinite(s) || s + p + d < a.x0 || s > a.x1) continue;
        double xs = rp_px(&a, fmax(s, a.x0)), xp = rp_px(&a, fmin(s + p, a.x1)),
               xd = rp_px(&a, fmin(s + p + d, a.x1));
        fprintf(out, "<g class=\"pt\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
                     "fill=\"#E69F00\" fill-opacity=\"0.35\"/><rect x=\"%.1f\" y=\"%.1f\" "
                     "width=\"%.2f\" height=\"%.1f\" fill=\"url(#hatch)\" fill-opacity=\"0.35\"/>"
                     "<title>run %ld %s %s B=%d #%d: prefill %.3f s, decode %.3f s</title></g>",
                xs, a.top, fmax(xp - xs, 0.5), a.h, xp, a.top, fmax(xd - xp, 0.5), a.h,
                r->run_id, r->model, r->precision, r->batch, r->run_index, p, d);
        shaded++;
    }
    if (isfinite(tr->idle_power_w))
        fprintf(out, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#000\" "
                     "stroke-dasharray=\"6 3\"><title>idle %.1f W</title></line>",
                a.left, a.left + a.w, rp_py(&a, tr->idle_power_w), rp_py(&a, tr->idle_power_w),
                tr->idle_power_w);
    fputs("<path fill=\"none\" stroke=\"#0072B2\" stroke-width=\"1.2\" d=\"", out);
    size_t per = tr->n / TRACE_POINTS + 1;
    for (size_t i = 0, k = 0; i < tr->n; i += per) {
        size_t lo = i, hi = i;
        for (size_t j = i; j < i + per && j < tr->n; j++) {
            if (tr->points[j].power_w < tr->points[lo].power_w) lo = j;
            if (tr->points[j].power_w > tr->points[hi].power_w) hi = j;
        }
        size_t f = lo < hi ? lo : hi, s = lo < hi ? hi : lo;
        fprintf(out, "%c%.1f %.1f", k++ ? 'L' : 'M', rp_px(&a, tr->points[f].t_s),
                rp_py(&a, tr->points[f].power_w));
        if (s != f)
            fprintf(out, "L%.1f %.1f", rp_px(&a, tr->points[s].t_s), rp_py(&a, tr->points[s].power_w));
    }
    fputs("\"/>", out);
    fprintf(out, "<rect x=\"80\" y=\"300\" width=\"18\" height=\"12\" fill=\"#E69F00\" "
                 "fill-opacity=\"0.5\"/><text x=\"104\" y=\"310\" class=\"legend\">prefill</text>"
                 "<rect x=\"180\" y=\"300\" width=\"18\" height=\"12\" fill=\"url(#hatch)\"/>"
                 "<text x=\"204\" y=\"310\" class=\"legend\">decode</text><line x1=\"280\" "
                 "x2=\"304\" y1=\"306\" y2=\"306\" stroke=\"#000\" stroke-dasharray=\"6 3\"/>"
                 "<text x=\"310\" y=\"310\" class=\"legend\">idle baseline</text><line "
                 "x1=\"420\" x2=\"444\" y1=\"306\" y2=\"306\" stroke=\"#0072B2\"/><text x=\"450\" "
                 "y=\"310\" class=\"legend\">instant power (%zu samples)</text>",
            tr->n);
    rp_svg_end(out, "Runs are placed by their start time, stored to the whole second, so a "
                    "phase's shading may sit up to 1 s off the power it caused. The first GPU of "
                    "the session.");
}

int rp_view_traces(FILE *out, const rp_model *m)
{
    const ec_report_traces *t = m->traces;
    if (!t || !t->n) {
        char why[400];
        snprintf(why, sizeof why, "No power trace to draw: %s",
                 t && t->why_none[0] ? t->why_none
                                     : "traces live in the results database; report it with "
                                       "<code>--db PATH</code> after <code>ecocompute bench "
                                       "--trace FILE</code>.");
        rp_empty(out, why);
        return 0;
    }
    char *used = calloc(m->nenv ? m->nenv : 1, 1);
    if (!used) return ec_set_error("out of memory");
    for (size_t i = 0; i < t->n; i++) {
        fputs("<h3>Session ", out);
        rp_html_text(out, t->v[i].session_id);
        fputs("</h3>", out);
        trace_chart(out, m, &t->v[i]);
        for (size_t j = 0; j < m->n; j++)
            if (!strcmp(m->r[j].session_id, t->v[i].session_id)) used[m->run_env[j]] = 1;
    }
    rp_provenance(out, m, used);
    free(used);
    return 0;
}
