/* physmodel.c — the physical model of a decode step and its fit to measured points.
 *
 * Per step (one token for each of `batch` sequences):
 *   time   = max(bytes / (eta_bw · peak bandwidth), FLOPs / (eta_tf · peak tensor rate))
 *            + (overhead + overhead per sequence · batch) · layers
 *   energy = idle W · time + pJ/byte · bytes + pJ/FLOP · FLOPs (decode + its share of prefill)
 *            + active W above idle · time
 * bytes = all weights (at the precision) + the KV cache of every sequence at the mean context.
 * The per-sequence term stands for the work that grows with the batch outside the two roofline
 * terms (attention over each sequence's cache, per-row quantization, sampling); without it the
 * fused kernels' leave-one-out error was 21 % (16 % with the sum instead of the max), with it
 * 13 %. The parameters are fitted per software stack and precision, across GPUs: the time terms
 * by a grid search on log time refined by a pattern search, then one scale of the overheads per
 * GPU with 3 or more points (the overheads are the host's as much as the GPU's: the seeds'
 * transformers rows came from different machines); the energy terms by non-negative least
 * squares on the relative energy error. docs/advise.md gives the leave-one-out error. */
#include "ecocompute/advise.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ecocompute/analysis.h"
#include "ecocompute/common.h"
#include "ecocompute/model.h"

/* Median idle / TDP of the GPUs of data/gpus.csv whose idle power has a source: H100 SXM 0.17,
 * H200 0.18, T4 0.18, A800 0.16 (0.17); used only where a GPU has no idle figure, and said so. */
const double ec_idle_fraction_of_tdp = 0.17;

int ec_step_work_of(const char *model, double params_b, const char *precision, int batch,
                    int prompt_len, int gen_len, ec_step_work *w)
{
    memset(w, 0, sizeof *w);
    ec_precision prec;
    if (ec_precision_parse(precision, &prec))
        return ec_set_error("unknown precision '%s'", precision);
    if (batch < 1) return ec_set_error("batch must be at least 1");
    const ec_model_config *c = model ? ec_catalog_find(model) : NULL;
    if (!c && model) c = ec_catalog_match(model);
    int prompt = prompt_len > 0 ? prompt_len : 0, gen = gen_len > 0 ? gen_len : 256;
    if (c) {
        w->from_catalog = 1;
        w->params_b = (double)ec_model_param_count(c) / 1e9;
        w->weight_bytes = (double)ec_model_weight_bytes(c, prec);
        w->n_layers = c->n_layers;
        /* K and V, 16-bit, every layer, at the mean context of the generation. */
        double ctx = prompt + gen / 2.0;
        w->kv_bytes = 2.0 * c->n_layers * c->n_kv_heads * c->head_dim * 2.0 * ctx * batch;
    } else {
        if (!(params_b > 0))
            return ec_set_error("model '%s' is not in the catalog and its size is unknown",
                                model ? model : "");
        w->params_b = params_b;
        /* A model's shapes unknown: its parameters at the format's bytes per weight, scales
         * included (nf4 0.5625, nf4-dq 0.5159). */
        w->weight_bytes = params_b * 1e9 * ec_qformat_bytes_per_weight(prec);
        w->n_layers = 32; /* the common depth of 7B-class models; no KV counted (a lower bound) */
    }
    w->batch = batch;
    w->flops = 2.0 * w->params_b * 1e9 * batch;
    w->flops_prefill = 2.0 * w->params_b * 1e9 * batch * prompt / gen;
    return 0;
}

static double tensor_rate(const ec_gpu_spec *g, const char *precision)
{
    double r = g->fp16_tflops;
    if (!strncmp(precision, "int8", 4) && isfinite(g->int8_tops)) r = g->int8_tops;
    if (!strcmp(precision, "fp8") && isfinite(g->fp8_tflops)) r = g->fp8_tflops;
    return r * 1e12;
}

double ec_gpu_idle_w(const ec_gpu_spec *g, int *assumed)
{
    if (isfinite(g->idle_w)) {
        if (assumed) *assumed = 0;
        return g->idle_w;
    }
    if (assumed) *assumed = 1;
    return ec_idle_fraction_of_tdp * g->tdp_w;
}

static double step_time(double eta_bw, double eta_tf, double overhead, double seq_overhead,
                        const ec_gpu_spec *g, const char *precision, const ec_step_work *w)
{
    double mem = (w->weight_bytes + w->kv_bytes) / (eta_bw * g->bandwidth_gbs * 1e9);
    double cmp = w->flops / (eta_tf * tensor_rate(g, precision));
    return (mem > cmp ? mem : cmp) + (overhead + seq_overhead * w->batch) * w->n_layers;
}

void ec_model_step(const ec_model_params *p, const ec_gpu_spec *g, const ec_step_work *w,
                   double idle_w, double *time_s, double *energy_j)
{
    double k = ec_model_overhead_scale(p, g);
    double t = step_time(p->eta_bw, p->eta_tf, k * p->overhead_s, k * p->seq_overhead_s, g,
                         p->precision, w);
    *time_s = t;
    *energy_j = (idle_w + p->active_w) * t +
                p->pj_per_byte * 1e-12 * (w->weight_bytes + w->kv_bytes) +
                p->pj_per_flop * 1e-12 * (w->flops + w->flops_prefill);
}

int ec_model_predict(const ec_model_params *p, const ec_gpu_spec *g, const ec_step_work *w,
                     int batch, double idle_w, double *tok_s, double *j_per_1k)
{
    double t, e;
    ec_model_step(p, g, w, idle_w, &t, &e);
    if (!(t > 0)) return ec_set_error("model gives no time");
    *tok_s = batch / t;
    *j_per_1k = 1000.0 * e / batch;
    return 0;
}

/* ---- fitting ---- */

typedef struct {
    const ec_gpu_spec *g;
    ec_step_work w;
    double t_meas; /* s per step */
    double e_meas; /* J per step under def */
    ec_energy_definition def;
    double idle_w;
} fit_row;

static int usable(const ec_ref_point *p, const char *stack, const char *precision)
{
    return !strcmp(p->stack, stack) && !strcmp(p->precision, precision) && p->gpu[0] &&
           p->verdict != (int)EC_SEV_ERROR && p->batch > 0;
}

static size_t collect(const ec_ref_point *pts, size_t n, const ec_advise_data *d, const char *stack,
                      const char *precision, size_t skip, fit_row *rows)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == skip || !usable(&pts[i], stack, precision)) continue;
        fit_row *r = &rows[m];
        r->g = ec_advise_find_gpu(d, pts[i].gpu);
        if (!r->g) continue;
        if (ec_step_work_of(pts[i].model, pts[i].params_b, precision, pts[i].batch,
                            pts[i].prompt_len, pts[i].gen_len, &r->w))
            continue;
        r->t_meas = pts[i].tok_s > 0 ? pts[i].batch / pts[i].tok_s : NAN;
        r->def = pts[i].def;
        r->e_meas = pts[i].j_per_1k > 0 ? pts[i].j_per_1k / 1000.0 * pts[i].batch : NAN;
        r->idle_w = isfinite(pts[i].idle_w) ? pts[i].idle_w : ec_gpu_idle_w(r->g, NULL);
        m++;
    }
    return m;
}

static double log_grid(double lo, double hi, int i, int n)
{
    return exp(log(lo) + (log(hi) - log(lo)) * i / (n - 1));
}

static double time_loss(const fit_row *r, size_t m, const char *precision, double bw, double tf,
                        double ov, double ovs, double stop)
{
    double ss = 0;
    for (size_t i = 0; i < m && ss < stop; i++) {
        if (!(r[i].t_meas > 0)) continue;
        double d = log(step_time(bw, tf, ov, ovs, r[i].g, precision, &r[i].w) / r[i].t_meas);
        ss += d * d;
    }
    return ss;
}

/* A coarse grid finds the basin (the max() makes the loss non-smooth); a pattern search in log
 * space then refines it. Efficiencies stay within (0, 1]. */
static void fit_time(const fit_row *r, size_t m, const char *precision, ec_model_params *p)
{
    enum { NBW = 16, NTF = 8, NOV = 16 };
    double best = INFINITY;
    for (int a = 0; a < NBW; a++)
        for (int b = 0; b < NTF; b++)
            for (int c = 0; c < NOV; c++) {
                double bw = log_grid(0.01, 1.0, a, NBW), tf = log_grid(0.01, 1.0, b, NTF);
                double ov = c ? log_grid(1e-7, 1e-2, c - 1, NOV - 1) : 0.0;
                double ss = time_loss(r, m, precision, bw, tf, ov, 0.0, best);
                if (ss < best) {
                    best = ss;
                    p->eta_bw = bw;
                    p->eta_tf = tf;
                    p->overhead_s = ov;
                }
            }
    double x[4] = {p->eta_bw, p->eta_tf, p->overhead_s > 0 ? p->overhead_s : 1e-8, 1e-9};
    for (double step = 1.5; step > 1.002; step = sqrt(step)) {
        for (int improved = 1, guard = 0; improved && guard < 50; guard++) {
            improved = 0;
            for (int k = 0; k < 4; k++)
                for (int dir = -1; dir <= 1; dir += 2) {
                    double y[4] = {x[0], x[1], x[2], x[3]};
                    y[k] *= dir > 0 ? step : 1 / step;
                    if (y[0] > 1 || y[1] > 1) continue;
                    double ss = time_loss(r, m, precision, y[0], y[1], y[2], y[3], best);
                    if (ss < best) {
                        best = ss;
                        memcpy(x, y, sizeof x);
                        improved = 1;
                    }
                }
        }
    }
    p->eta_bw = x[0];
    p->eta_tf = x[1];
    p->overhead_s = x[2];
    p->seq_overhead_s = x[3];

    /* Per GPU (host): one scale of both overheads, by a 1-D search on its own points. */
    p->nscales = 0;
    for (size_t i = 0; i < m && p->nscales < 16; i++) {
        int seen = 0;
        for (size_t k = 0; k < p->nscales && !seen; k++)
            seen = !strcmp(p->scale_gpu[k], r[i].g->name);
        if (seen) continue;
        fit_row *mine = malloc(m * sizeof *mine);
        if (!mine) return;
        size_t nm = 0;
        for (size_t j = 0; j < m; j++)
            if (r[j].g == r[i].g && r[j].t_meas > 0) mine[nm++] = r[j];
        if (nm >= 3) {
            double best_k = 1, best_ss = INFINITY;
            for (int a = 0; a <= 120; a++) {
                double k = exp(log(0.05) + (log(20.0) - log(0.05)) * a / 120);
                double ss = time_loss(mine, nm, precision, x[0], x[1], k * x[2], k * x[3], best_ss);
                if (ss < best_ss) {
                    best_ss = ss;
                    best_k = k;
                }
            }
            snprintf(p->scale_gpu[p->nscales], sizeof p->scale_gpu[0], "%s", r[i].g->name);
            p->overhead_scale[p->nscales++] = best_k;
        }
        free(mine);
    }
}

double ec_model_overhead_scale(const ec_model_params *p, const ec_gpu_spec *g)
{
    for (size_t k = 0; k < p->nscales; k++)
        if (!strcmp(p->scale_gpu[k], g->name)) return p->overhead_scale[k];
    return 1.0;
}

/* Solves the k×k system a·x = y (Gaussian elimination with pivoting); -1 if singular. */
static int solve(double a[3][3], double y[3], int k, double x[3])
{
    for (int c = 0; c < k; c++) {
        int piv = c;
        for (int r = c + 1; r < k; r++)
            if (fabs(a[r][c]) > fabs(a[piv][c])) piv = r;
        if (fabs(a[piv][c]) < 1e-300) return -1;
        for (int j = 0; j < k; j++) {
            double t = a[c][j];
            a[c][j] = a[piv][j];
            a[piv][j] = t;
        }
        double t = y[c];
        y[c] = y[piv];
        y[piv] = t;
        for (int r = 0; r < k; r++) {
            if (r == c) continue;
            double f = a[r][c] / a[c][c];
            for (int j = 0; j < k; j++)
                a[r][j] -= f * a[c][j];
            y[r] -= f * y[c];
        }
    }
    for (int c = 0; c < k; c++)
        x[c] = y[c] / a[c][c];
    return 0;
}

/* Non-negative least squares over the three energy terms by trying every subset of them: with
 * three unknowns that is 7 small solves, and exact. Each equation is divided by its measured
 * energy, so the fit minimises relative error (points span 100× in J/1k). */
static size_t fit_energy(const fit_row *r, size_t m, ec_model_params *p)
{
    double best = INFINITY, coef[3] = {0, 0, 0};
    size_t used = 0;
    for (int mask = 1; mask < 8; mask++) {
        double ata[3][3] = {{0}}, aty[3] = {0};
        int idx[3], k = 0;
        for (int j = 0; j < 3; j++)
            if (mask & (1 << j)) idx[k++] = j;
        size_t cnt = 0;
        for (size_t i = 0; i < m; i++) {
            if (!(r[i].e_meas > 0) || !(r[i].t_meas > 0)) continue;
            if (r[i].def != EC_ENERGY_GROSS && r[i].def != EC_ENERGY_NET) continue;
            double x[3] = {(r[i].w.weight_bytes + r[i].w.kv_bytes) * 1e-12,
                           (r[i].w.flops + r[i].w.flops_prefill) * 1e-12, r[i].t_meas};
            double y = r[i].e_meas - (r[i].def == EC_ENERGY_GROSS ? r[i].idle_w * r[i].t_meas : 0);
            double s = 1.0 / r[i].e_meas;
            for (int a = 0; a < k; a++) {
                for (int b = 0; b < k; b++)
                    ata[a][b] += x[idx[a]] * x[idx[b]] * s * s;
                aty[a] += x[idx[a]] * y * s * s;
            }
            cnt++;
        }
        if (cnt < (size_t)k) continue;
        double sol[3];
        if (solve(ata, aty, k, sol)) continue;
        int neg = 0;
        for (int a = 0; a < k; a++)
            neg |= sol[a] < 0;
        if (neg) continue;
        double full[3] = {0, 0, 0};
        for (int a = 0; a < k; a++)
            full[idx[a]] = sol[a];
        double ss = 0;
        for (size_t i = 0; i < m; i++) {
            if (!(r[i].e_meas > 0) || !(r[i].t_meas > 0)) continue;
            if (r[i].def != EC_ENERGY_GROSS && r[i].def != EC_ENERGY_NET) continue;
            double pred = full[0] * (r[i].w.weight_bytes + r[i].w.kv_bytes) * 1e-12 +
                          full[1] * (r[i].w.flops + r[i].w.flops_prefill) * 1e-12 +
                          full[2] * r[i].t_meas +
                          (r[i].def == EC_ENERGY_GROSS ? r[i].idle_w * r[i].t_meas : 0);
            double d = pred / r[i].e_meas - 1;
            ss += d * d;
        }
        if (ss < best) {
            best = ss;
            memcpy(coef, full, sizeof coef);
            used = cnt;
        }
    }
    p->pj_per_byte = coef[0];
    p->pj_per_flop = coef[1];
    p->active_w = coef[2];
    return used;
}

int ec_model_fit(const ec_ref_point *pts, size_t n, const ec_advise_data *d, const char *stack,
                 const char *precision, size_t skip, ec_model_params *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->stack, sizeof out->stack, "%s", stack);
    snprintf(out->precision, sizeof out->precision, "%s", precision);
    fit_row *rows = malloc((n ? n : 1) * sizeof *rows);
    if (!rows) return ec_set_error("out of memory");
    size_t m = collect(pts, n, d, stack, precision, skip, rows);
    size_t nt = 0;
    for (size_t i = 0; i < m; i++)
        nt += rows[i].t_meas > 0;
    if (nt < 2) {
        free(rows);
        return ec_set_error("fewer than 2 measured points for stack %s at %s", stack, precision);
    }
    fit_time(rows, m, precision, out);
    out->n_time = nt;
    out->n_energy = fit_energy(rows, m, out);
    free(rows);
    if (out->n_energy < 2)
        return ec_set_error("fewer than 2 points with a gross or net energy for stack %s at %s",
                            stack, precision);
    return 0;
}

int ec_model_loo(const ec_ref_point *pts, size_t n, const ec_advise_data *d, ec_loo_error **out,
                 size_t *nout)
{
    *out = calloc(n ? n : 1, sizeof **out);
    *nout = 0;
    if (!*out) return ec_set_error("out of memory");
    for (size_t i = 0; i < n; i++) {
        const ec_ref_point *p = &pts[i];
        if (!usable(p, p->stack, p->precision)) continue;
        const ec_gpu_spec *g = ec_advise_find_gpu(d, p->gpu);
        ec_model_params mp;
        ec_step_work w;
        if (!g || ec_model_fit(pts, n, d, p->stack, p->precision, i, &mp) ||
            ec_step_work_of(p->model, p->params_b, p->precision, p->batch, p->prompt_len,
                            p->gen_len, &w))
            continue;
        double idle = isfinite(p->idle_w) ? p->idle_w : ec_gpu_idle_w(g, NULL);
        double tok_s = NAN, j1k = NAN;
        if (ec_model_predict(&mp, g, &w, p->batch, idle, &tok_s, &j1k)) continue;
        if (p->def == EC_ENERGY_NET) j1k -= 1000.0 * idle / tok_s;
        ec_loo_error *e = &(*out)[(*nout)++];
        e->point = i;
        e->tok_s_err_pct = p->tok_s > 0 ? 100.0 * (tok_s / p->tok_s - 1) : NAN;
        e->energy_err_pct =
            p->j_per_1k > 0 && (p->def == EC_ENERGY_GROSS || p->def == EC_ENERGY_NET)
                ? 100.0 * (j1k / p->j_per_1k - 1)
                : NAN;
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double ec_loo_median(const ec_loo_error *e, size_t n, const ec_ref_point *pts,
                     const ec_advise_data *d, const char *stack, const char *family, int which,
                     size_t *count)
{
    double *v = malloc((n ? n : 1) * sizeof *v);
    size_t m = 0;
    if (!v) return NAN;
    for (size_t i = 0; i < n; i++) {
        const ec_ref_point *p = &pts[e[i].point];
        if (stack && strcmp(p->stack, stack)) continue;
        if (family) {
            const ec_gpu_spec *g = ec_advise_find_gpu(d, p->gpu);
            if (!g || strncmp(g->arch, family, strlen(family))) continue;
        }
        double x = which ? e[i].energy_err_pct : e[i].tok_s_err_pct;
        if (isfinite(x)) v[m++] = fabs(x);
    }
    double med = NAN;
    if (m) {
        qsort(v, m, sizeof *v, cmp_double);
        med = m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
    }
    free(v);
    if (count) *count = m;
    return med;
}
