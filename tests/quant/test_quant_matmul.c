/* test_quant_matmul.c — ec_qmatrix_matmul_rows for every precision against a double-precision
 * dot product of the dequantized weights (and the format's activations), split-row results equal
 * to whole-matrix results bit for bit, input validation, names and byte counts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ecocompute/common.h"
#include "ecocompute/quant.h"
#include "quant/quant_test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* What the format multiplies the weights with: 16-bit formats round the activations too. */
static double act(ec_precision p, float v)
{
    if (p == EC_PREC_FP16)
        return ec_f16_to_f32(ec_f32_to_f16(v));
    if (p == EC_PREC_BF16)
        return ec_bf16_to_f32(ec_f32_to_bf16(v));
    return v;
}

static void check_shape(ec_precision p, int rows, int cols, int batch)
{
    uint64_t s = (uint64_t)(rows * 1000 + cols);
    size_t nw = (size_t)rows * (size_t)cols, nx = (size_t)batch * (size_t)cols, ny = (size_t)batch * (size_t)rows;
    float *w = malloc(nw * sizeof *w), *x = malloc(nx * sizeof *x), *row = malloc((size_t)cols * sizeof *row);
    float *y = malloc(ny * sizeof *y), *ysplit = malloc(ny * sizeof *ysplit);
    qt_fill(&s, w, nw, -1.0f, 1.0f);
    qt_fill(&s, x, nx, -2.0f, 2.0f);
    ec_qmatrix m;
    ec_qact a, *ap = NULL;
    assert_int_equal(ec_qmatrix_quantize(&m, p, w, rows, cols), 0);
    assert_int_equal(ec_qmatrix_bytes(&m), ec_precision_weight_bytes(p, rows, cols));
    if (p == EC_PREC_INT8 || p == EC_PREC_INT8_MIXED) {
        assert_int_equal(ec_qact_prepare(&a, &m, x, batch), 0);
        ap = &a;
    }
    ec_qmatrix_matmul_rows(&m, x, ap, batch, y, 0, rows);
    int mid = rows / 2;
    ec_qmatrix_matmul_rows(&m, x, ap, batch, ysplit, mid, rows);
    ec_qmatrix_matmul_rows(&m, x, ap, batch, ysplit, 0, mid);
    assert_memory_equal(y, ysplit, ny * sizeof *y);
    for (int r = 0; r < rows; r++) {
        ec_qmatrix_dequantize_row(&m, r, row);
        for (int b = 0; b < batch; b++) {
            double ref = 0, mag = 0, xmax = 0;
            for (int c = 0; c < cols; c++) {
                double xv = act(p, x[(size_t)b * (size_t)cols + (size_t)c]);
                ref += row[c] * xv;
                mag += fabs(row[c] * xv);
                xmax = fmax(xmax, fabs(xv));
            }
            /* fp32 accumulation: at most (n + 2) roundings of 2^-24 relative to sum |w x|. For
             * int8 the activations are quantized too: each |x| error <= xmax/254. */
            double bound = (cols + 2) * ldexp(mag, -24) + 1e-30;
            if (ap) {
                double wsum = 0;
                for (int c = 0; c < cols; c++)
                    wsum += fabs(row[c]);
                bound += wsum * xmax / 254 * (1 + 1e-6);
            }
            assert_true(fabs(y[(size_t)b * (size_t)rows + (size_t)r] - ref) <= bound);
        }
    }
    if (ap)
        ec_qact_free(ap);
    ec_qmatrix_free(&m);
    free(w);
    free(x);
    free(row);
    free(y);
    free(ysplit);
}

static void test_all_precisions(void **state)
{
    (void)state;
    const int shapes[][2] = {{1, 1}, {3, 63}, {5, 64}, {7, 65}, {1, 255}, {4, 300}, {2, 513}};
    for (int p = 0; p < EC_PREC_COUNT; p++)
        for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
            check_shape((ec_precision)p, shapes[i][0], shapes[i][1], 1);
            check_shape((ec_precision)p, shapes[i][0], shapes[i][1], 3);
        }
}

static void test_validation(void **state)
{
    (void)state;
    float w[6] = {1, 2, 3, 4, 5, 6};
    ec_qmatrix m;
    assert_int_equal(ec_qmatrix_quantize(&m, EC_PREC_NF4, w, 0, 6), -1);
    assert_int_equal(ec_qmatrix_quantize(&m, EC_PREC_NF4, w, 6, 0), -1);
    assert_int_equal(ec_qmatrix_quantize(&m, EC_PREC_COUNT, w, 2, 3), -1);
    w[5] = NAN;
    for (int p = 0; p < EC_PREC_COUNT; p++) {
        assert_int_equal(ec_qmatrix_quantize(&m, (ec_precision)p, w, 2, 3), -1);
        assert_non_null(strstr(ec_last_error(), "[1][2]"));
        assert_null(m.data);
    }
    w[5] = -INFINITY;
    assert_int_equal(ec_qmatrix_quantize(&m, EC_PREC_FP8, w, 3, 2), -1);
    assert_non_null(strstr(ec_last_error(), "[2][1]"));
    w[5] = 6;
    assert_int_equal(ec_qmatrix_quantize(&m, EC_PREC_F32, w, 2, 3), 0);
    ec_qact a;
    assert_int_equal(ec_qact_prepare(&a, &m, w, 1), -1); /* no activation quantization for f32 */
    ec_qmatrix_free(&m);
    ec_qmatrix_free(&m); /* freeing twice is harmless: free zeroes the struct */
}

static void test_names_and_bytes(void **state)
{
    (void)state;
    for (int p = 0; p < EC_PREC_COUNT; p++) {
        ec_precision q;
        assert_int_equal(ec_precision_parse(ec_precision_name((ec_precision)p), &q), 0);
        assert_int_equal(q, p);
    }
    ec_precision q;
    assert_int_equal(ec_precision_parse("int4", &q), -1);
    assert_non_null(strstr(ec_last_error(), "int4"));
    /* 4096 x 4096: 64 blocks per row, 262144 blocks = 1024 second-level blocks. */
    const size_t n = 4096u * 4096u;
    assert_int_equal(ec_precision_weight_bytes(EC_PREC_F32, 4096, 4096), n * 4);
    assert_int_equal(ec_precision_weight_bytes(EC_PREC_BF16, 4096, 4096), n * 2);
    assert_int_equal(ec_precision_weight_bytes(EC_PREC_INT8_MIXED, 4096, 4096), n + 4096 * 4);
    assert_int_equal(ec_precision_weight_bytes(EC_PREC_FP8, 4096, 4096), n + 4096 * 4);
    assert_int_equal(ec_precision_weight_bytes(EC_PREC_NF4, 4096, 4096), n / 2 + 262144 * 4);
    assert_int_equal(ec_precision_weight_bytes(EC_PREC_NF4_DQ, 4096, 4096), n / 2 + 262144 + 1024 * 4 + 4);
    assert_int_equal(ec_precision_weight_bytes(EC_PREC_NF4, 3, 5), 3 * 3 + 3 * 4);
    assert_int_equal(ec_precision_weight_bytes(EC_PREC_NF4_DQ, 3, 5), 3 * 3 + 3 + 4 + 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_precisions),
        cmocka_unit_test(test_validation),
        cmocka_unit_test(test_names_and_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
