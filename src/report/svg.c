/* svg.c — the SVG chart primitives of the HTML report: a figure with a title for screen
 * readers, axes (linear or log) with ticks and labels, series markers whose shape, colour and
 * dash differ together (readable without colour), and legend rows. The charts are drawn by the
 * tool itself so the report needs no chart library at all (Debian packages none that works
 * offline from one file). */
#include "report/report_internal.h"

#include <math.h>
#include <string.h>

/* Okabe–Ito: distinguishable by people with the common colour-vision deficiencies. */
static const char *const colours[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                      "#E69F00", "#56B4E9", "#000000", "#F0E442"};
static const char *const dashes[] = {"", "6 3", "2 3", "8 3 2 3", "4 4", "1 2", "10 4", "3 6"};
#define NSTYLE 8

const char *rp_series_colour(size_t k)
{
    return colours[k % NSTYLE];
}

const char *rp_series_dash(size_t k)
{
    return dashes[k % NSTYLE];
}

void rp_svg_begin(FILE *out, int width, int height, const char *title)
{
    fprintf(out, "<figure class=\"chart\"><svg role=\"img\" viewBox=\"0 0 %d %d\" width=\"%d\" "
                 "height=\"%d\" xmlns=\"http://www.w3.org/2000/svg\"><title>",
            width, height, width, height);
    rp_html_text(out, title);
    fputs("</title>", out);
}

void rp_svg_end(FILE *out, const char *caption)
{
    fputs("</svg>", out);
    if (caption && caption[0]) {
        fputs("<figcaption>", out);
        rp_html_text(out, caption);
        fputs("</figcaption>", out);
    }
    fputs("</figure>\n", out);
}

static double tr(double v, int lg)
{
    return lg ? log10(v) : v;
}

void rp_axes_fit(rp_axes *a)
{
    if (!(a->x1 > a->x0)) {
        double c = isfinite(a->x0) ? a->x0 : 1;
        a->x0 = a->logx ? c / 2 : c - 1;
        a->x1 = a->logx ? c * 2 : c + 1;
    }
    if (!(a->y1 > a->y0)) {
        double c = isfinite(a->y0) ? a->y0 : 1;
        a->y0 = a->logy ? c / 2 : c - fabs(c) * 0.1 - 1;
        a->y1 = a->logy ? c * 2 : c + fabs(c) * 0.1 + 1;
    }
    if (a->logx) {
        a->x0 /= 1.3;
        a->x1 *= 1.3;
    } else {
        double p = (a->x1 - a->x0) * 0.05;
        a->x0 -= p;
        a->x1 += p;
    }
    if (a->logy) {
        a->y0 /= 1.3;
        a->y1 *= 1.3;
    } else {
        double p = (a->y1 - a->y0) * 0.08;
        if (a->y0 >= 0 && a->y0 < (a->y1 - a->y0) * 0.5) a->y0 = 0; /* bars and energies from 0 */
        else a->y0 -= p;
        a->y1 += p;
    }
}

double rp_px(const rp_axes *a, double x)
{
    double t = (tr(x, a->logx) - tr(a->x0, a->logx)) / (tr(a->x1, a->logx) - tr(a->x0, a->logx));
    return a->left + t * a->w;
}

double rp_py(const rp_axes *a, double y)
{
    double t = (tr(y, a->logy) - tr(a->y0, a->logy)) / (tr(a->y1, a->logy) - tr(a->y0, a->logy));
    return a->top + a->h - t * a->h;
}

/* A tick label: as short as the value allows (0, 20, 2.5, 0.001, 12,000). */
static const char *tick_label(char *buf, size_t len, double v)
{
    if (fabs(v) >= 1000) return rp_num(buf, len, v);
    snprintf(buf, len, "%g", v);
    return buf;
}

/* Tick values of one axis into v (at most max). */
static int ticks(double lo, double hi, int lg, double *v, int max)
{
    int n = 0;
    if (lg) {
        int d0 = (int)floor(log10(lo)), d1 = (int)ceil(log10(hi));
        static const double steps[] = {1, 2, 5};
        int fine = d1 - d0 <= 3;
        for (int d = d0; d <= d1 && n < max; d++)
            for (int s = 0; s < (fine ? 3 : 1) && n < max; s++) {
                double t = steps[s] * pow(10, d);
                if (t >= lo && t <= hi) v[n++] = t;
            }
        return n;
    }
    double span = hi - lo, raw = span / 5, mag = pow(10, floor(log10(raw))), step = mag;
    if (raw / mag > 5) step = 10 * mag;
    else if (raw / mag > 2) step = 5 * mag;
    else if (raw / mag > 1) step = 2 * mag;
    for (double t = ceil(lo / step) * step; t <= hi + step * 1e-9 && n < max; t += step)
        v[n++] = fabs(t) < step * 1e-9 ? 0 : t;
    return n;
}

void rp_axes_draw(FILE *out, const rp_axes *a, const char *xlabel, const char *ylabel)
{
    double v[40];
    char b[32];
    fprintf(out, "<g class=\"axes\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                 "class=\"plot\"/>",
            a->left, a->top, a->w, a->h);
    int n = ticks(a->x0, a->x1, a->logx, v, 40);
    for (int i = 0; i < n; i++) {
        double x = rp_px(a, v[i]);
        fprintf(out, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>"
                     "<text x=\"%.1f\" y=\"%.1f\" class=\"tick\" text-anchor=\"middle\">%s</text>",
                x, x, a->top, a->top + a->h, x, a->top + a->h + 14, tick_label(b, sizeof b, v[i]));
    }
    n = ticks(a->y0, a->y1, a->logy, v, 40);
    for (int i = 0; i < n; i++) {
        double y = rp_py(a, v[i]);
        fprintf(out, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>"
                     "<text x=\"%.1f\" y=\"%.1f\" class=\"tick\" text-anchor=\"end\">%s</text>",
                a->left, a->left + a->w, y, y, a->left - 5, y + 4, tick_label(b, sizeof b, v[i]));
    }
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" class=\"label\" text-anchor=\"middle\">",
            a->left + a->w / 2, a->top + a->h + 32);
    rp_html_text(out, xlabel);
    fprintf(out, "</text><text class=\"label\" text-anchor=\"middle\" "
                 "transform=\"translate(%.1f %.1f) rotate(-90)\">",
            a->left - 52, a->top + a->h / 2);
    rp_html_text(out, ylabel);
    fputs("</text></g>", out);
}

static void shape(FILE *out, size_t k, double x, double y, double r)
{
    const char *c = rp_series_colour(k);
    switch (k % 5) {
    case 0:
        fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\"/>", x, y, r, c);
        break;
    case 1:
        fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>",
                x - r, y - r, 2 * r, 2 * r, c);
        break;
    case 2:
        fprintf(out, "<path d=\"M%.1f %.1fL%.1f %.1fL%.1f %.1fZ\" fill=\"%s\"/>", x, y - r * 1.2,
                x + r * 1.1, y + r * 0.8, x - r * 1.1, y + r * 0.8, c);
        break;
    case 3:
        fprintf(out, "<path d=\"M%.1f %.1fL%.1f %.1fL%.1f %.1fL%.1f %.1fZ\" fill=\"%s\"/>", x,
                y - r * 1.3, x + r * 1.3, y, x, y + r * 1.3, x - r * 1.3, y, c);
        break;
    default: /* hollow circle */
        fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"#fff\" stroke=\"%s\" "
                     "stroke-width=\"2\"/>",
                x, y, r, c);
    }
}

void rp_marker(FILE *out, size_t k, double px, double py, const char *tooltip)
{
    fputs("<g class=\"pt\">", out);
    shape(out, k, px, py, 4.5);
    if (tooltip) {
        fputs("<title>", out);
        rp_html_text(out, tooltip);
        fputs("</title>", out);
    }
    fputs("</g>", out);
}

void rp_legend(FILE *out, size_t k, double x, double y, const char *text, int line)
{
    if (line)
        fprintf(out, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                     "stroke-width=\"2\" stroke-dasharray=\"%s\"/>",
                x, x + 24, y, y, rp_series_colour(k), rp_series_dash(k));
    shape(out, k, x + 12, y, 4.5);
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" class=\"legend\">", x + 30, y + 4);
    rp_html_text(out, text);
    fputs("</text>", out);
}
