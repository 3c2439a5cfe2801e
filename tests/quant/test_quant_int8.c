/* test_quant_int8.c — int8 and LLM.int8(): outputs against the formula evaluated independently in
 * double precision, the outlier cases (one, several, no columns), threshold 0 and a threshold above
 * every |x| equal to plain int8 bit for bit, outliers left out of the per-token absmax; the CUDA
 * kernels' reciprocal route to the activation codes equal to the division. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ecocompute/quant.h"
#include "quant/quant_test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { R = 5, C = 70, B = 3 };

static double h16(double v) { return ec_f16_to_f32(ec_f32_to_f16((float)v)); }

/* LLM.int8 in double: the test's own quantization (round half to even via nearbyint) of the
 * fp16 activations the format sees. */
static void reference(const float *w, const float *x, float t, double *y /* [B][R] */)
{
    int outlier[C] = {0};
    for (int c = 0; c < C; c++)
        for (int b = 0; b < B; b++)
            if (t > 0 && fabs(h16(x[b * C + c])) >= t)
                outlier[c] = 1;
    for (int b = 0; b < B; b++) {
        double tok = 0;
        for (int c = 0; c < C; c++)
            if (!outlier[c])
                tok = fmax(tok, fabs(h16(x[b * C + c])));
        for (int r = 0; r < R; r++) {
            double row = 0, acc = 0, extra = 0;
            for (int c = 0; c < C; c++)
                row = fmax(row, fabs(w[r * C + c]));
            for (int c = 0; c < C; c++) {
                double qw = row > 0 ? nearbyint(w[r * C + c] / row * 127) : 0;
                if (outlier[c])
                    extra += h16(x[b * C + c]) * h16(qw * (row / 127));
                else
                    acc += qw * (tok > 0 ? nearbyint(h16(x[b * C + c]) / tok * 127) : 0);
            }
            y[b * R + r] = acc * (row / 127) * (tok / 127) + extra;
        }
    }
}

static void run(ec_precision p, float t, const float *w, const float *x, float *y, ec_qact *a)
{
    ec_qmatrix m;
    assert_int_equal(ec_qmatrix_quantize(&m, p, w, R, C), 0);
    m.threshold = t;
    assert_int_equal(ec_qact_prepare(a, &m, x, B), 0);
    ec_qmatrix_matmul_rows(&m, x, a, B, y, 0, R);
    ec_qmatrix_free(&m);
}

static void inputs(float *w, float *x, uint64_t seed)
{
    qt_fill(&seed, w, R * C, -1.0f, 1.0f);
    qt_fill(&seed, x, B * C, -2.0f, 2.0f);
    w[3 * C + 10] = 0.0f; /* leave the rest of row 3 intact; make row 4 all zero */
    memset(w + 4 * C, 0, sizeof(float) * C);
}

/* expect_outliers < 0: do not check the count (low thresholds make many columns outliers). */
static void check_case(const float *w, const float *x, float t, int expect_outliers)
{
    float y[B * R];
    double ref[B * R];
    ec_qact a;
    run(EC_PREC_INT8_MIXED, t, w, x, y, &a);
    if (expect_outliers >= 0)
        assert_int_equal(a.n_outliers, expect_outliers);
    reference(w, x, t, ref);
    for (int i = 0; i < B * R; i++) {
        assert_false(isnan(y[i]));
        assert_true(fabs(y[i] - ref[i]) <= 1e-5 * (fabs(ref[i]) + 1.0));
    }
    ec_qact_free(&a);
}

static void test_outlier_cases(void **state)
{
    (void)state;
    float w[R * C], x[B * C];
    inputs(w, x, 1);
    check_case(w, x, 6.0f, 0); /* none: every |x| < 2 */
    x[1 * C + 17] = -9.5f;     /* one column, from one token */
    check_case(w, x, 6.0f, 1);
    x[0 * C + 3] = 6.0f; /* exactly the threshold counts (>=) */
    x[2 * C + 69] = 40.0f;
    x[1 * C + 69] = 25.0f;
    check_case(w, x, 6.0f, 3);
    check_case(w, x, 1.0f, -1); /* most columns are outliers */
}

static void test_outliers_leave_absmax(void **state)
{
    (void)state;
    float w[R * C], x[B * C];
    inputs(w, x, 2);
    x[0 * C + 5] = 30.0f;
    x[2 * C + 8] = -7.0f;
    ec_qmatrix m;
    ec_qact a;
    assert_int_equal(ec_qmatrix_quantize(&m, EC_PREC_INT8_MIXED, w, R, C), 0);
    assert_true(m.threshold == 6.0f);
    assert_int_equal(ec_qact_prepare(&a, &m, x, B), 0);
    assert_int_equal(a.n_outliers, 2);
    assert_int_equal(a.outlier_cols[0], 5);
    assert_int_equal(a.outlier_cols[1], 8);
    for (int b = 0; b < B; b++) {
        float mx = 0;
        for (int c = 0; c < C; c++)
            if (c != 5 && c != 8)
                mx = fmaxf(mx, fabsf((float)h16(x[b * C + c])));
        assert_true(a.scale[b] == mx / 127.0f);
        assert_int_equal(a.q[b * C + 5], 0); /* the whole column is zeroed, every token */
        assert_int_equal(a.q[b * C + 8], 0);
    }
    ec_qact_free(&a);
    ec_qmatrix_free(&m);
}

static void test_threshold_zero_and_high_equal_int8(void **state)
{
    (void)state;
    float w[R * C], x[B * C], y8[B * R], y0[B * R], yhi[B * R];
    inputs(w, x, 3);
    x[4] = 50.0f;
    ec_qact a;
    run(EC_PREC_INT8, 0.0f, w, x, y8, &a);
    assert_int_equal(a.n_outliers, 0);
    ec_qact_free(&a);
    run(EC_PREC_INT8_MIXED, 0.0f, w, x, y0, &a);
    ec_qact_free(&a);
    run(EC_PREC_INT8_MIXED, 50.5f, w, x, yhi, &a);
    assert_int_equal(a.n_outliers, 0);
    ec_qact_free(&a);
    assert_memory_equal(y8, y0, sizeof y8);
    assert_memory_equal(y8, yhi, sizeof y8);
    check_case(w, x, 0.0f, 0);
}

static void test_weight_round_trip(void **state)
{
    (void)state;
    float w[R * C], x[B * C], out[C];
    inputs(w, x, 4);
    ec_qmatrix m;
    assert_int_equal(ec_qmatrix_quantize(&m, EC_PREC_INT8, w, R, C), 0);
    assert_true(m.threshold == 0.0f);
    for (int r = 0; r < R; r++) {
        ec_qmatrix_dequantize_row(&m, r, out);
        for (int c = 0; c < C; c++)
            assert_true(fabs((double)out[c] - w[r * C + c]) <= m.scales[r] / 254.0 * (1 + 1e-6));
    }
    assert_true(m.scales[4] == 0.0f);
    ec_qmatrix_free(&m);
}

static void test_zero_token_no_nan(void **state)
{
    (void)state;
    float w[R * C], x[B * C], y[B * R];
    inputs(w, x, 5);
    memset(x, 0, sizeof(float) * C); /* token 0 all zero; token 1 all outliers */
    for (int c = 0; c < C; c++)
        x[C + c] = 8.0f;
    ec_qact a;
    run(EC_PREC_INT8_MIXED, 6.0f, w, x, y, &a);
    for (int i = 0; i < B * R; i++)
        assert_false(isnan(y[i]));
    ec_qact_free(&a);
    check_case(w, x, 6.0f, C);
}

/* The CUDA GEMV that quantizes its own token (kernels_int8_act.cuh, act_code_rcp) divides by the
 * token's absmax a through r = RN(1/a): q0 = RN(v·r), then q = fma(fma(−q0, a, v), r, q0). The
 * codes stay those of src/quant/int8.c only if q is RN(v / a) for every pair of fp16 values with
 * |v| <= a, a > 0 (a non-outlier value never exceeds its token's absmax). Both are IEEE binary32
 * operations, so the CPU checks the GPU's arithmetic: every positive finite fp16 a, every 53rd v
 * (all 1,007,713,278 pairs with EC_TEST_EXHAUSTIVE=1, ~6 s). A zero quotient may differ in sign
 * only, which rounds to the same code. */
static void test_reciprocal_division_is_exact(void **state)
{
    (void)state;
    unsigned stride = getenv("EC_TEST_EXHAUSTIVE") ? 1 : 53;
    long pairs = 0;
    for (uint16_t ah = 1; ah < 0x7c00; ah++) {
        float a = ec_f16_to_f32(ah), r = 1.0f / a;
        for (uint32_t vh = ah % stride; vh <= ah; vh += stride)
            for (int neg = 0; neg < 2; neg++) {
                float v = ec_f16_to_f32((uint16_t)(vh | (neg ? 0x8000u : 0u)));
                float q0 = v * r;
                float q = fmaf(fmaf(-q0, a, v), r, q0), want = v / a;
                pairs++;
                if (q != want) /* -0 == +0: a zero's sign gives the same code */
                    fail_msg("absmax %a, v %a: reciprocal route %a, division %a", (double)a,
                             (double)v, (double)q, (double)want);
            }
    }
    assert_true(pairs > 1000000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_outlier_cases),
        cmocka_unit_test(test_outliers_leave_absmax),
        cmocka_unit_test(test_threshold_zero_and_high_equal_int8),
        cmocka_unit_test(test_weight_round_trip),
        cmocka_unit_test(test_zero_token_no_nan),
        cmocka_unit_test(test_reciprocal_division_is_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
