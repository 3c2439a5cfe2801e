/* test_quant_nf4.c — NF4: code table bits, encoder thresholds, packing and nibble order, round
 * trip bound; nf4-dq: the dynamic map's structure and absmax reconstruction; byte counts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ecocompute/quant.h"
#include "quant/quant_test_util.h"

#include <math.h>
#include <stdlib.h>

/* Bit patterns of bitsandbytes' nf4_dequantization_lut as float32. */
static const uint32_t nf4_bits[16] = {
    0xbf800000, 0xbf3239b1, 0xbf066b30, 0xbeca32a0, 0xbe91a24d, 0xbe3d353f, 0xbdba7871, 0x00000000,
    0x3da2faff, 0x3e24cae3, 0x3e7c04dd, 0x3ead033a, 0x3ee1a4b8, 0x3f1007ab, 0x3f3913b3, 0x3f800000,
};

/* dQuantizeNF4's thresholds (research notes §1.2): code k+1 when x > threshold[k]. */
static const float thresholds[15] = {
    -0.8480964004993439f, -0.6106329262256622f, -0.4599952697753906f, -0.33967943489551544f,
    -0.23460740596055984f, -0.13791173323988914f, -0.045525018125772476f, 0.03979014977812767f,
    0.1202552504837513f, 0.2035212516784668f, 0.2920137718319893f, 0.3893125355243683f,
    0.5016634166240692f, 0.6427869200706482f, 0.8614784181118011f,
};

static double nf4_max_half_gap(void)
{
    double g = 0;
    for (int k = 0; k < 15; k++)
        g = fmax(g, ((double)ec_nf4_code[k + 1] - ec_nf4_code[k]) / 2);
    return g;
}

static void test_code_table_bits(void **state)
{
    (void)state;
    for (int k = 0; k < 16; k++)
        assert_int_equal(qt_bits(ec_nf4_code[k]), nf4_bits[k]);
}

static void test_encoder(void **state)
{
    (void)state;
    for (int k = 0; k < 16; k++)
        assert_int_equal(ec_nf4_encode(ec_nf4_code[k]), k);
    for (int k = 0; k < 15; k++) {
        /* The thresholds are the midpoints; exactly at one the strict `>` keeps the lower code. */
        assert_true(fabs(thresholds[k] - ((double)ec_nf4_code[k] + ec_nf4_code[k + 1]) / 2) < 1e-6);
        assert_int_equal(ec_nf4_encode(thresholds[k]), k);
        assert_int_equal(ec_nf4_encode(nextafterf(thresholds[k], 2.0f)), k + 1);
    }
    assert_int_equal(ec_nf4_encode(-5.0f), 0);
    assert_int_equal(ec_nf4_encode(5.0f), 15);
}

static void test_packing_hand_computed(void **state)
{
    (void)state;
    /* One row of 5 with absmax 2: codes 15, 0, 7, 13, 8 -> bytes F0 7D 87 (pad nibble 7). */
    const float w[5] = {2.0f, -2.0f, 0.0f, 2.0f * 0.5626170039176941f, 0.2f};
    ec_qmatrix m;
    assert_int_equal(ec_qmatrix_quantize(&m, EC_PREC_NF4, w, 1, 5), 0);
    const uint8_t *d = m.data;
    assert_int_equal(d[0], 0xF0);
    assert_int_equal(d[1], 0x7D);
    assert_int_equal(d[2], 0x87);
    assert_true(m.scales[0] == 2.0f);
    float out[5];
    ec_qmatrix_dequantize_row(&m, 0, out);
    const int codes[5] = {15, 0, 7, 13, 8};
    for (int i = 0; i < 5; i++)
        assert_true(out[i] == ec_nf4_code[codes[i]] * 2.0f);
    assert_int_equal(ec_qmatrix_bytes(&m), 3 + 4);
    ec_qmatrix_free(&m);
}

static void test_blocks_per_row(void **state)
{
    (void)state;
    /* cols 130: blocks of 64, 64, 2 in each row; the last block never takes the next row's data. */
    enum { R = 3, C = 130 };
    float *w = malloc(sizeof(float) * R * C);
    for (int i = 0; i < R * C; i++)
        w[i] = (float)((i % C) / 64 + 1) * (i % 2 ? -1.0f : 1.0f) * (float)(i / C + 1);
    ec_qmatrix m;
    assert_int_equal(ec_qmatrix_quantize(&m, EC_PREC_NF4, w, R, C), 0);
    for (int r = 0; r < R; r++)
        for (int k = 0; k < 3; k++)
            assert_true(m.scales[r * 3 + k] == (float)((k + 1) * (r + 1)));
    assert_int_equal(ec_qmatrix_bytes(&m), R * 65 + R * 3 * 4);
    ec_qmatrix_free(&m);
    free(w);
}

static void round_trip(ec_precision p, int rows, int cols)
{
    uint64_t s = 7u + (uint64_t)cols;
    float *w = malloc(sizeof(float) * (size_t)rows * (size_t)cols), *out = malloc(sizeof(float) * (size_t)cols);
    qt_fill(&s, w, (size_t)rows * (size_t)cols, -3.0f, 3.0f);
    ec_qmatrix m, ref;
    assert_int_equal(ec_qmatrix_quantize(&m, p, w, rows, cols), 0);
    assert_int_equal(ec_qmatrix_quantize(&ref, EC_PREC_NF4, w, rows, cols), 0);
    const float *map = ec_dynamic_map();
    double gap = nf4_max_half_gap();
    int nb = (cols + 63) / 64;
    for (int r = 0; r < rows; r++) {
        ec_qmatrix_dequantize_row(&m, r, out);
        for (int c = 0; c < cols; c++) {
            size_t i = (size_t)r * (size_t)nb + (size_t)(c / 64);
            double am = p == EC_PREC_NF4 ? m.scales[i] : (double)map[m.qscales[i]] * m.qscale_absmax[i / 256] + m.qscale_offset;
            /* nf4-dq decodes with its reconstructed absmax: the code error scales with it plus
             * the absmax error times |code| <= 1. */
            double bound = gap * am + fabs(am - ref.scales[i]) + 1e-6;
            assert_true(fabs((double)out[c] - w[(size_t)r * (size_t)cols + (size_t)c]) <= bound);
        }
    }
    ec_qmatrix_free(&m);
    ec_qmatrix_free(&ref);
    free(w);
    free(out);
}

static void test_round_trip_bounds(void **state)
{
    (void)state;
    const int shapes[][2] = {{1, 1}, {1, 63}, {2, 64}, {3, 65}, {4, 129}, {5, 200}, {1, 4096}};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        round_trip(EC_PREC_NF4, shapes[i][0], shapes[i][1]);
        round_trip(EC_PREC_NF4_DQ, shapes[i][0], shapes[i][1]);
    }
}

static void test_dynamic_map(void **state)
{
    (void)state;
    const float *map = ec_dynamic_map();
    for (int i = 0; i < 255; i++)
        assert_true(map[i] < map[i + 1]);
    assert_true(map[255] == 1.0f);
    assert_true(map[127] == 0.0f);
    for (int i = 0; i < 127; i++) /* negatives mirror the 127 positive midpoints */
        assert_true(map[i] == -map[254 - i]);
    /* decade 10^(i-6) holds 2^i midpoints of linspace(0.1, 1, 2^i + 1) */
    for (int i = 0, idx = 128; i < 7; i++) {
        double decade = pow(10.0, i - 6), step = 0.9 / (1 << i);
        for (int k = 0; k < (1 << i); k++, idx++)
            assert_true(fabs(map[idx] - decade * (0.1 + step * (k + 0.5))) <= 1e-6 * decade);
    }
}

static void test_double_quant_absmax(void **state)
{
    (void)state;
    /* 40 rows x 9 blocks = 360 absmax values: one full second-level block and a short one. */
    enum { R = 40, C = 520 };
    uint64_t s = 99;
    float *w = malloc(sizeof(float) * R * C);
    for (int r = 0; r < R; r++)
        qt_fill(&s, w + r * C, C, -0.1f * (float)(r + 1), 0.1f * (float)(r + 1));
    ec_qmatrix dq, ref;
    assert_int_equal(ec_qmatrix_quantize(&dq, EC_PREC_NF4_DQ, w, R, C), 0);
    assert_int_equal(ec_qmatrix_quantize(&ref, EC_PREC_NF4, w, R, C), 0);
    assert_null(dq.scales);
    assert_memory_equal(dq.data, ref.data, (size_t)R * (C / 2)); /* codes use the fp32 absmax */
    const int n = R * 9;
    double mean = 0;
    for (int i = 0; i < n; i++)
        mean += ref.scales[i];
    mean /= n;
    assert_true(fabs(dq.qscale_offset - mean) <= 1e-6 * mean);
    const float *map = ec_dynamic_map();
    double gap = 1.0 - map[254]; /* the widest half gap is at the ends (e.g. -1 vs map[0]) */
    for (int i = 0; i < 255; i++)
        gap = fmax(gap, ((double)map[i + 1] - map[i]) / 2);
    for (int i = 0; i < n; i++) {
        double a2 = dq.qscale_absmax[i / 256];
        double got = (double)map[dq.qscales[i]] * a2 + dq.qscale_offset;
        assert_true(fabs(got - ref.scales[i]) <= gap * a2 + 1e-6);
    }
    for (int j = 0; j < 2; j++) { /* absmax2 is the block's max |absmax - offset| */
        double mx = 0;
        for (int i = j * 256; i < n && i < (j + 1) * 256; i++)
            mx = fmax(mx, fabs((double)ref.scales[i] - dq.qscale_offset));
        assert_true(fabs(dq.qscale_absmax[j] - mx) <= 1e-6 * mx);
    }
    assert_int_equal(ec_qmatrix_bytes(&dq), (size_t)R * (C / 2) + n + 2 * 4 + 4);
    assert_int_equal(ec_precision_weight_bytes(EC_PREC_NF4_DQ, R, C), ec_qmatrix_bytes(&dq));
    ec_qmatrix_free(&dq);
    ec_qmatrix_free(&ref);
    free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_code_table_bits),   cmocka_unit_test(test_encoder),
        cmocka_unit_test(test_packing_hand_computed), cmocka_unit_test(test_blocks_per_row),
        cmocka_unit_test(test_round_trip_bounds), cmocka_unit_test(test_dynamic_map),
        cmocka_unit_test(test_double_quant_absmax),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
