/* test_fit.c — fits on synthetic data with known parameters: exact data gives the parameters back
 * with R² = 1; noisy data (fixed-seed noise) gives them back within the reported 95% CI; the
 * crossover fit finds a planted zero crossing and says "none in range" when there is none. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "ecocompute/analysis.h"

#define NEAR(a, b, tol) assert_true(fabs((a) - (b)) <= (tol))

/* Deterministic noise in [-1, 1] (xorshift), so the test never flakes. */
static double noise(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (double)(*s >> 11) / (double)(1ULL << 52) - 1.0;
}

static void linear_exact(void **state)
{
    (void)state;
    const double x[] = {1, 2, 3, 4, 5}, y[] = {5, 7, 9, 11, 13};
    ec_linear_fit f;
    assert_int_equal(ec_fit_linear(x, y, 5, &f), 0);
    NEAR(f.slope, 2, 1e-12);
    NEAR(f.intercept, 3, 1e-12);
    NEAR(f.r2, 1, 1e-12);
    NEAR(f.se_slope, 0, 1e-9);
    const double same[] = {2, 2, 2};
    assert_int_equal(ec_fit_linear(same, y, 3, &f), -1); /* no distinct x */
}

static void power_law_exact(void **state)
{
    (void)state;
    const double a = 6144.6, b = 0.762;
    double x[7], y[7];
    for (int i = 0; i < 7; i++) {
        x[i] = (double)(1 << i); /* batch 1..64 */
        y[i] = a * pow(x[i], -b);
    }
    ec_power_fit f;
    assert_int_equal(ec_fit_power_law(x, y, 7, &f), 0);
    NEAR(f.a, a, 1e-8 * a);
    NEAR(f.b, b, 1e-10);
    NEAR(f.r2, 1.0, 1e-12);
    assert_int_equal(f.n, 7);
}

static void power_law_noisy(void **state)
{
    (void)state;
    const double a = 250.0, b = 0.6;
    double x[60], y[60];
    uint64_t s = 0x9E3779B97F4A7C15ULL;
    for (int i = 0; i < 60; i++) {
        x[i] = (double)(1 << (i % 6));
        y[i] = a * pow(x[i], -b) * (1.0 + 0.03 * noise(&s)); /* ±3% */
    }
    ec_power_fit f;
    assert_int_equal(ec_fit_power_law(x, y, 60, &f), 0);
    NEAR(f.b, b, 0.02);
    NEAR(f.a, a, 0.03 * a);
    assert_true(f.b_lo <= b && b <= f.b_hi);
    assert_true(f.a_lo <= a && a <= f.a_hi);
    assert_true(f.r2 > 0.99 && f.r2 < 1.0);
    /* non-positive values cannot be on a power law: skipped, not fitted */
    x[0] = -1;
    y[1] = 0;
    assert_int_equal(ec_fit_power_law(x, y, 60, &f), 0);
    assert_int_equal(f.n, 58);
}

static void crossover_planted(void **state)
{
    (void)state;
    /* Δ% = 40 − 25·ln(N): zero at N* = e^1.6 = 4.953 B */
    const double n[] = {0.5, 1.1, 1.5, 3.0, 7.0, 14.0};
    double d[6];
    for (int i = 0; i < 6; i++) d[i] = 40.0 - 25.0 * log(n[i]);
    ec_crossover c;
    assert_int_equal(ec_fit_crossover(n, d, 6, &c), 0);
    assert_int_equal(c.found, 1);
    NEAR(c.params_b, exp(1.6), 1e-9);
    NEAR(c.lo_b, c.params_b, 1e-6); /* exact data: a zero-width interval */
    /* with noise, the CI still holds the planted crossover */
    uint64_t s = 42;
    for (int i = 0; i < 6; i++) d[i] += 3.0 * noise(&s);
    assert_int_equal(ec_fit_crossover(n, d, 6, &c), 0);
    assert_int_equal(c.found, 1);
    assert_true(c.lo_b < exp(1.6) && exp(1.6) < c.hi_b);
    assert_true(c.lo_b < c.params_b && c.params_b < c.hi_b);
}

static void crossover_none_in_range(void **state)
{
    (void)state;
    /* INT8-like: always costs more, less so for bigger models; the line's zero lies at 1097 B */
    const double n[] = {0.5, 1.1, 3.0, 7.0};
    double d[4];
    for (int i = 0; i < 4; i++) d[i] = 350.0 - 50.0 * log(n[i]);
    ec_crossover c;
    assert_int_equal(ec_fit_crossover(n, d, 4, &c), 0);
    assert_int_equal(c.found, 0);
    assert_true(c.params_b > c.max_b);
    NEAR(c.min_b, 0.5, 0);
    NEAR(c.max_b, 7.0, 0);
    /* flat: no zero at all */
    const double flat[] = {10, 10, 10, 10};
    assert_int_equal(ec_fit_crossover(n, flat, 4, &c), 0);
    assert_int_equal(c.found, 0);
    assert_true(isnan(c.params_b));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(linear_exact),      cmocka_unit_test(power_law_exact),
        cmocka_unit_test(power_law_noisy),   cmocka_unit_test(crossover_planted),
        cmocka_unit_test(crossover_none_in_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
