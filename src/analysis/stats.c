/* stats.c — descriptive statistics, Student t distribution and Welch's t-test, with libm only.
 *
 * The t distribution's CDF goes through the regularized incomplete beta function
 * (P(|T| > t) = I_{df/(df+t²)}(df/2, 1/2)), evaluated by its continued fraction with the modified
 * Lentz method (Numerical Recipes §6.4), which converges fast for x < (a+1)/(a+b+2) and is used
 * through the symmetry I_x(a,b) = 1 − I_{1−x}(b,a) otherwise. */
#include "ecocompute/analysis.h"

#include <math.h>

#include "ecocompute/common.h"

#define CF_MAX_ITER 300
#define CF_EPS 1e-15
#define CF_TINY 1e-300

/* Continued fraction of I_x(a,b) without the front factor (modified Lentz). */
static double betacf(double a, double b, double x)
{
    double qab = a + b, qap = a + 1.0, qam = a - 1.0;
    double c = 1.0, d = 1.0 - qab * x / qap;
    if (fabs(d) < CF_TINY) d = CF_TINY;
    d = 1.0 / d;
    double h = d;
    for (int m = 1; m <= CF_MAX_ITER; m++) {
        double m2 = 2.0 * m;
        double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if (fabs(d) < CF_TINY) d = CF_TINY;
        c = 1.0 + aa / c;
        if (fabs(c) < CF_TINY) c = CF_TINY;
        d = 1.0 / d;
        h *= d * c;
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if (fabs(d) < CF_TINY) d = CF_TINY;
        c = 1.0 + aa / c;
        if (fabs(c) < CF_TINY) c = CF_TINY;
        d = 1.0 / d;
        double del = d * c;
        h *= del;
        if (fabs(del - 1.0) < CF_EPS) break;
    }
    return h;
}

double ec_betai(double a, double b, double x)
{
    if (!(a > 0) || !(b > 0) || isnan(x)) return NAN;
    if (x <= 0) return 0.0;
    if (x >= 1) return 1.0;
    /* front factor x^a (1−x)^b / (a B(a,b)), in logs to avoid overflow */
    double lbt = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
    double bt = exp(lbt);
    if (x < (a + 1.0) / (a + b + 2.0)) return bt * betacf(a, b, x) / a;
    return 1.0 - bt * betacf(b, a, 1.0 - x) / b;
}

double ec_t_cdf(double t, double df)
{
    if (isnan(t) || !(df > 0)) return NAN;
    if (isinf(df)) return 0.5 * erfc(-t / sqrt(2.0));
    if (isinf(t)) return t > 0 ? 1.0 : 0.0;
    double tail = 0.5 * ec_betai(df / 2.0, 0.5, df / (df + t * t)); /* P(T > |t|) */
    return t > 0 ? 1.0 - tail : tail;
}

double ec_t_quantile(double p, double df)
{
    if (!(p > 0 && p < 1) || !(df > 0)) return NAN;
    if (p == 0.5) return 0.0;
    /* The distribution is symmetric: solve for the upper half and mirror. */
    double q = p > 0.5 ? p : 1.0 - p;
    double lo = 0.0, hi = 1.0;
    while (ec_t_cdf(hi, df) < q && hi < 1e300) {
        lo = hi;
        hi *= 2.0;
    }
    /* Bisection: the CDF is monotone; 200 halvings reach double precision for any bracket. */
    for (int i = 0; i < 200 && hi - lo > 1e-14 * hi; i++) {
        double mid = 0.5 * (lo + hi);
        if (ec_t_cdf(mid, df) < q) lo = mid;
        else hi = mid;
    }
    double x = 0.5 * (lo + hi);
    return p > 0.5 ? x : -x;
}

void ec_summarize(const double *x, size_t n, ec_summary *out)
{
    size_t k = 0;
    double mean = 0.0, m2 = 0.0;
    /* Welford's update: stable for values with a large common offset (joules of long runs). */
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(x[i])) continue;
        k++;
        double d = x[i] - mean;
        mean += d / (double)k;
        m2 += d * (x[i] - mean);
    }
    out->n = k;
    out->mean = k ? mean : NAN;
    out->sd = k >= 2 ? sqrt(m2 / (double)(k - 1)) : NAN;
    out->cv_pct = (k >= 2 && mean != 0.0) ? 100.0 * out->sd / fabs(mean) : NAN;
    out->se = k >= 2 ? out->sd / sqrt((double)k) : NAN;
    if (k >= 2) {
        double h = ec_t_quantile(0.975, (double)(k - 1)) * out->se;
        out->ci_lo = mean - h;
        out->ci_hi = mean + h;
    } else {
        out->ci_lo = out->ci_hi = NAN;
    }
}

int ec_welch_test(const ec_summary *a, const ec_summary *b, ec_welch *out)
{
    out->diff = a->mean - b->mean;
    out->se = out->df = out->t = out->p = out->ci_lo = out->ci_hi = NAN;
    out->pct = (b->n && b->mean != 0.0) ? 100.0 * out->diff / b->mean : NAN;
    out->pct_lo = out->pct_hi = NAN;
    if (a->n < 2 || b->n < 2)
        return ec_set_error("Welch's t-test needs at least 2 values on each side (have %zu and %zu)",
                            a->n, b->n);
    double va = a->sd * a->sd / (double)a->n, vb = b->sd * b->sd / (double)b->n;
    double se = sqrt(va + vb);
    if (!(se > 0))
        return ec_set_error("Welch's t-test: both samples have zero variance");
    out->se = se;
    out->df = (va + vb) * (va + vb) /
              (va * va / (double)(a->n - 1) + vb * vb / (double)(b->n - 1));
    out->t = out->diff / se;
    out->p = 2.0 * ec_t_cdf(-fabs(out->t), out->df);
    double tq = ec_t_quantile(0.975, out->df);
    out->ci_lo = out->diff - tq * se;
    out->ci_hi = out->diff + tq * se;
    if (b->mean != 0.0 && a->mean != 0.0) {
        /* R = mean(a)/mean(b); first-order (delta method): se(R)/R = √((se_a/a)² + (se_b/b)²). */
        double r = a->mean / b->mean;
        double rel = sqrt(va / (a->mean * a->mean) + vb / (b->mean * b->mean));
        double h = tq * fabs(r) * rel;
        out->pct_lo = 100.0 * (r - h - 1.0);
        out->pct_hi = 100.0 * (r + h - 1.0);
    }
    return 0;
}
