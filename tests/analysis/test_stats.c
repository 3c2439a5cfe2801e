/* test_stats.c — statistics against textbook values: Student t quantiles from printed tables,
 * closed forms of the t CDF (df = 1 is Cauchy, df = 2 has an algebraic CDF), the incomplete beta
 * function at a polynomial case, a sample's mean/sd/CI, and Welch's t-test on the worked example
 * of Wikipedia's "Welch's t-test" article (example 1: t = -2.46, df = 25.0, p = 0.021), whose
 * values we recomputed independently (t and df by hand, p by numerical integration of the t
 * density: t = -2.455356, df = 24.98853, p = 0.021378). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "ecocompute/analysis.h"

#define NEAR(a, b, tol) assert_true(fabs((a) - (b)) <= (tol))

static void t_quantiles_match_tables(void **state)
{
    (void)state;
    NEAR(ec_t_quantile(0.975, 1), 12.7062, 5e-4);
    NEAR(ec_t_quantile(0.975, 10), 2.2281, 5e-4);
    NEAR(ec_t_quantile(0.975, 30), 2.0423, 5e-4);
    NEAR(ec_t_quantile(0.975, INFINITY), 1.95996, 5e-5);
    NEAR(ec_t_quantile(0.995, 5), 4.0321, 5e-4);
    NEAR(ec_t_quantile(0.025, 10), -2.2281, 5e-4); /* symmetric */
    NEAR(ec_t_quantile(0.5, 7), 0.0, 1e-12);
    assert_true(isnan(ec_t_quantile(0.0, 5)));
    assert_true(isnan(ec_t_quantile(0.5, 0)));
}

static void t_cdf_closed_forms(void **state)
{
    (void)state;
    const double ts[] = {-30, -3.1, -1, -0.2, 0, 0.7, 2.5, 12};
    for (size_t i = 0; i < sizeof ts / sizeof *ts; i++) {
        double t = ts[i];
        NEAR(ec_t_cdf(t, 1), 0.5 + atan(t) / acos(-1.0), 1e-12);
        NEAR(ec_t_cdf(t, 2), 0.5 + t / (2.0 * sqrt(2.0 + t * t)), 1e-12);
    }
    NEAR(ec_t_cdf(1.96, INFINITY), 0.975002, 1e-6);
}

static void incomplete_beta(void **state)
{
    (void)state;
    /* I_x(2,3) = Σ_{j=2..4} C(4,j) x^j (1-x)^(4-j); at x = 0.5: 11/16 */
    NEAR(ec_betai(2, 3, 0.5), 0.6875, 1e-13);
    for (double x = 0.05; x < 1; x += 0.1)
        NEAR(ec_betai(2, 3, x), 6 * x * x * pow(1 - x, 2) + 4 * pow(x, 3) * (1 - x) + pow(x, 4),
             1e-12);
    NEAR(ec_betai(1, 1, 0.3), 0.3, 1e-14); /* uniform */
    NEAR(ec_betai(0.5, 0.5, 0.25), 2.0 / acos(-1.0) * asin(sqrt(0.25)), 1e-12); /* arcsine */
    assert_true(ec_betai(3, 4, 0) == 0 && ec_betai(3, 4, 1) == 1);
}

static void summary_of_a_sample(void **state)
{
    (void)state;
    const double x[] = {2, 4, 4, NAN, 4, 5, 5, 7, 9}; /* NaN: not measured, skipped */
    ec_summary s;
    ec_summarize(x, 9, &s);
    assert_int_equal(s.n, 8);
    NEAR(s.mean, 5.0, 1e-12);
    NEAR(s.sd, sqrt(32.0 / 7.0), 1e-12);
    NEAR(s.cv_pct, 100.0 * sqrt(32.0 / 7.0) / 5.0, 1e-10);
    /* t(0.975, 7) = 2.364624 */
    NEAR(s.ci_hi - s.mean, 2.364624 * sqrt(32.0 / 7.0) / sqrt(8.0), 1e-5);
    NEAR(s.mean - s.ci_lo, s.ci_hi - s.mean, 1e-12);
    ec_summarize(x, 1, &s);
    assert_int_equal(s.n, 1);
    assert_true(s.mean == 2 && isnan(s.sd) && isnan(s.ci_lo));
}

static void welch_textbook_example(void **state)
{
    (void)state;
    const double a[] = {27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1,
                        21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4};
    const double b[] = {27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0,
                        24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4};
    ec_summary sa, sb;
    ec_summarize(a, 15, &sa);
    ec_summarize(b, 15, &sb);
    ec_welch w;
    assert_int_equal(ec_welch_test(&sa, &sb, &w), 0);
    NEAR(w.t, -2.455356, 1e-6);
    NEAR(w.df, 24.98853, 1e-5);
    NEAR(w.p, 0.021378, 1e-5);
    NEAR(w.diff, 20.82 - 22.986667, 1e-6);
    double h = ec_t_quantile(0.975, w.df) * w.se;
    NEAR(w.ci_hi - w.ci_lo, 2 * h, 1e-12);
    assert_true(w.ci_hi < 0); /* significant at 5%: the CI excludes 0, as p < 0.05 says */
    NEAR(w.pct, 100.0 * w.diff / sb.mean, 1e-12);
    assert_true(w.pct_lo < w.pct && w.pct < w.pct_hi);
}

/* Equal sizes and variances: Welch's df is 2(n-1) and t is Student's pooled t. */
static void welch_reduces_to_student(void **state)
{
    (void)state;
    ec_summary a = {.n = 10, .mean = 12, .sd = 3}, b = {.n = 10, .mean = 10, .sd = 3};
    ec_welch w;
    assert_int_equal(ec_welch_test(&a, &b, &w), 0);
    NEAR(w.df, 18.0, 1e-12);
    NEAR(w.t, 2.0 / (3.0 * sqrt(0.2)), 1e-12);
    NEAR(w.p, 2 * (1 - ec_t_cdf(w.t, 18)), 1e-12);
    ec_summary one = {.n = 1, .mean = 5, .sd = NAN};
    assert_int_equal(ec_welch_test(&one, &b, &w), -1);
    NEAR(w.pct, -50.0, 1e-12); /* Δ% is still known */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_quantiles_match_tables), cmocka_unit_test(t_cdf_closed_forms),
        cmocka_unit_test(incomplete_beta),          cmocka_unit_test(summary_of_a_sample),
        cmocka_unit_test(welch_textbook_example),   cmocka_unit_test(welch_reduces_to_student),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
