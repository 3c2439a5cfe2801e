/* fit.c — least-squares fits: a straight line with standard errors, the batch-size power law
 * (energy per token ≈ a·B^−b, fitted as a line in log-log space) and the crossover model size
 * (where a precision's Δ energy vs fp16 changes sign, fitted as Δ% linear in ln(parameters)).
 * Formulas: docs/analysis.md §2. */
#include "ecocompute/analysis.h"

#include <math.h>
#include <stdlib.h>

#include "ecocompute/common.h"

int ec_fit_linear(const double *x, const double *y, size_t n, ec_linear_fit *out)
{
    double sx = 0, sy = 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(x[i]) && isfinite(y[i])) {
            sx += x[i];
            sy += y[i];
            k++;
        }
    out->n = k;
    out->slope = out->intercept = out->se_slope = out->se_intercept = NAN;
    out->cov = out->r2 = out->resid_sd = NAN;
    if (k < 2) return ec_set_error("a line needs at least 2 points (have %zu)", k);
    double mx = sx / (double)k, my = sy / (double)k, sxx = 0, sxy = 0, syy = 0;
    /* Centred sums: no cancellation when x is far from 0 (e.g. ln of a large count). */
    for (size_t i = 0; i < n; i++)
        if (isfinite(x[i]) && isfinite(y[i])) {
            double dx = x[i] - mx, dy = y[i] - my;
            sxx += dx * dx;
            sxy += dx * dy;
            syy += dy * dy;
        }
    if (!(sxx > 0)) return ec_set_error("a line needs at least 2 distinct x values");
    out->slope = sxy / sxx;
    out->intercept = my - out->slope * mx;
    double ss_res = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(x[i]) && isfinite(y[i])) {
            double e = y[i] - (out->intercept + out->slope * x[i]);
            ss_res += e * e;
        }
    out->r2 = syy > 0 ? 1.0 - ss_res / syy : NAN;
    if (k >= 3) {
        double s2 = ss_res / (double)(k - 2);
        out->resid_sd = sqrt(s2);
        out->se_slope = sqrt(s2 / sxx);
        out->se_intercept = sqrt(s2 * (1.0 / (double)k + mx * mx / sxx));
        out->cov = -mx * s2 / sxx;
    }
    return 0;
}

int ec_fit_power_law(const double *x, const double *y, size_t n, ec_power_fit *out)
{
    double *lx = malloc((n ? n : 1) * sizeof *lx), *ly = malloc((n ? n : 1) * sizeof *ly);
    if (!lx || !ly) {
        free(lx);
        free(ly);
        return ec_set_error("out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        int ok = isfinite(x[i]) && isfinite(y[i]) && x[i] > 0 && y[i] > 0;
        lx[i] = ok ? log(x[i]) : NAN;
        ly[i] = ok ? log(y[i]) : NAN;
    }
    ec_linear_fit l;
    int rc = ec_fit_linear(lx, ly, n, &l);
    free(lx);
    free(ly);
    out->n = l.n;
    out->a = exp(l.intercept);
    out->b = -l.slope;
    out->se_b = l.se_slope;
    out->r2 = l.r2;
    out->a_lo = out->a_hi = out->b_lo = out->b_hi = NAN;
    if (rc) return rc;
    if (l.n >= 3) {
        double tq = ec_t_quantile(0.975, (double)(l.n - 2));
        out->a_lo = exp(l.intercept - tq * l.se_intercept);
        out->a_hi = exp(l.intercept + tq * l.se_intercept);
        out->b_lo = out->b - tq * l.se_slope;
        out->b_hi = out->b + tq * l.se_slope;
    }
    return 0;
}

int ec_fit_crossover(const double *params_b, const double *delta_pct, size_t n, ec_crossover *out)
{
    double *lx = malloc((n ? n : 1) * sizeof *lx);
    if (!lx) return ec_set_error("out of memory");
    out->min_b = INFINITY;
    out->max_b = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        int ok = isfinite(params_b[i]) && params_b[i] > 0 && isfinite(delta_pct[i]);
        lx[i] = ok ? log(params_b[i]) : NAN;
        if (ok) {
            out->min_b = fmin(out->min_b, params_b[i]);
            out->max_b = fmax(out->max_b, params_b[i]);
        }
    }
    int rc = ec_fit_linear(lx, delta_pct, n, &out->line);
    free(lx);
    out->found = 0;
    out->params_b = out->lo_b = out->hi_b = NAN;
    if (rc) return rc;
    const ec_linear_fit *l = &out->line;
    if (l->slope == 0.0) return 0;
    double x0 = -l->intercept / l->slope; /* ln of the crossover size */
    out->params_b = exp(x0);
    /* A crossover outside the measured sizes is an extrapolation, not a finding. */
    out->found = out->params_b >= out->min_b && out->params_b <= out->max_b;
    if (l->n >= 3) {
        /* Delta method: x0 = −α/β, ∂x0/∂α = −1/β, ∂x0/∂β = α/β² = −x0/β. */
        double var = (l->se_intercept * l->se_intercept + x0 * x0 * l->se_slope * l->se_slope +
                      2.0 * x0 * l->cov) / (l->slope * l->slope);
        double h = ec_t_quantile(0.975, (double)(l->n - 2)) * sqrt(fmax(var, 0.0));
        out->lo_b = exp(x0 - h);
        out->hi_b = exp(x0 + h);
    }
    return 0;
}
