/* test_quant_convert.c — the scalar conversions: fp16 and bf16 exhaustively (round trips, ties
 * to even, overflow, NaN) and FP8 E4M3 over all 256 codes (values, round trip, ties, saturation). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ecocompute/quant.h"
#include "quant/quant_test_util.h"

#include <math.h>

/* Value of a binary float from its fields, computed independently of the library in double. */
static double field_value(unsigned sign, unsigned e, unsigned m, int mbits, int bias)
{
    double v = e == 0 ? ldexp((double)m, 1 - bias - mbits) : ldexp(1.0 + ldexp(m, -mbits), (int)e - bias);
    return sign ? -v : v;
}

/* Every 16-bit pattern decodes to its field value and encodes back to itself; NaN stays NaN
 * with its sign. ebits + mbits = 15. */
static void check_exhaustive(uint16_t (*enc)(float), float (*dec)(uint16_t), int mbits, int bias)
{
    unsigned emax = (1u << (15 - mbits)) - 1;
    for (uint32_t h = 0; h < 65536; h++) {
        unsigned e = (h >> mbits) & emax, m = h & ((1u << mbits) - 1);
        float f = dec((uint16_t)h);
        uint16_t back = enc(f);
        if (e == emax && m != 0) {
            assert_true(isnan(f) && isnan(dec(back)));
            assert_int_equal(back & 0x8000, h & 0x8000);
        } else {
            assert_true(e == emax ? isinf(f) : (double)f == field_value(h >> 15, e, m, mbits, bias));
            assert_int_equal(back, h);
        }
    }
}

static void test_f16_exhaustive(void **state)
{
    (void)state;
    check_exhaustive(ec_f32_to_f16, ec_f16_to_f32, 10, 15);
}

static void check_ties(uint16_t (*enc)(float), float (*dec)(uint16_t), uint32_t last)
{
    for (uint32_t h = 0; h < last; h++) {
        double lo = dec((uint16_t)h), hi = dec((uint16_t)(h + 1));
        float mid = (float)((lo + hi) / 2);
        assert_true((double)mid == (lo + hi) / 2); /* the midpoint is exact in fp32 */
        assert_int_equal(enc(mid), (h & 1) ? h + 1 : h);
        assert_int_equal(enc(nextafterf(mid, 0.0f)), h);
        assert_int_equal(enc(nextafterf(mid, INFINITY)), h + 1);
        assert_int_equal(enc(-mid), ((h & 1) ? h + 1 : h) | 0x8000);
    }
}

static void test_f16_ties_and_overflow(void **state)
{
    (void)state;
    check_ties(ec_f32_to_f16, ec_f16_to_f32, 0x7bff);
    assert_int_equal(ec_f32_to_f16(65504.0f), 0x7bff);
    assert_int_equal(ec_f32_to_f16(nextafterf(65520.0f, 0.0f)), 0x7bff);
    assert_int_equal(ec_f32_to_f16(65520.0f), 0x7c00);
    assert_int_equal(ec_f32_to_f16(-1e10f), 0xfc00);
    assert_int_equal(ec_f32_to_f16(INFINITY), 0x7c00);
    assert_int_equal(ec_f32_to_f16(ldexpf(1.0f, -25)), 0x0000);                    /* tie -> 0 */
    assert_int_equal(ec_f32_to_f16(nextafterf(ldexpf(1.0f, -25), 1.0f)), 0x0001);
    assert_int_equal(ec_f32_to_f16(ldexpf(3.0f, -25)), 0x0002);                    /* tie -> even */
    assert_int_equal(ec_f32_to_f16(-0.0f), 0x8000);
    assert_true(isnan(ec_f16_to_f32(ec_f32_to_f16(NAN))));
}

static void test_bf16_exhaustive(void **state)
{
    (void)state;
    check_exhaustive(ec_f32_to_bf16, ec_bf16_to_f32, 7, 127);
    check_ties(ec_f32_to_bf16, ec_bf16_to_f32, 0x7f7f);
    assert_int_equal(ec_f32_to_bf16(3.4028235e38f), 0x7f80); /* FLT_MAX rounds past bf16 max */
    assert_true(isnan(ec_bf16_to_f32(ec_f32_to_bf16(qt_float(0x7f80ffffu))))); /* no carry to inf */
}

static void test_e4m3_decode_all(void **state)
{
    (void)state;
    for (int c = 0; c < 256; c++) {
        unsigned e = (c >> 3) & 15, m = c & 7;
        float f = ec_e4m3_to_f32((uint8_t)c);
        if (e == 15 && m == 7) {
            assert_true(isnan(f));
            continue;
        }
        assert_true((double)f == field_value((unsigned)c >> 7, e, m, 3, 7));
        assert_int_equal(ec_f32_to_e4m3(f), c); /* includes +0 (0x00) and -0 (0x80) */
    }
    assert_true(ec_e4m3_to_f32(0x7e) == 448.0f);
    assert_true(ec_e4m3_to_f32(0x01) == ldexpf(1.0f, -9));
}

static void test_e4m3_ties_saturation_nan(void **state)
{
    (void)state;
    for (int c = 0; c < 0x7e; c++) { /* midpoints between neighbouring positive codes */
        double lo = ec_e4m3_to_f32((uint8_t)c), hi = ec_e4m3_to_f32((uint8_t)(c + 1));
        float mid = (float)((lo + hi) / 2);
        int even = (c & 1) ? c + 1 : c;
        assert_int_equal(ec_f32_to_e4m3(mid), even);
        assert_int_equal(ec_f32_to_e4m3(-mid), even | 0x80);
        assert_int_equal(ec_f32_to_e4m3(nextafterf(mid, 0.0f)), c);
        assert_int_equal(ec_f32_to_e4m3(nextafterf(mid, INFINITY)), c + 1);
    }
    const float big[] = {449.0f, 464.0f, 480.0f, 1e6f, 3.4028235e38f, INFINITY};
    for (size_t i = 0; i < sizeof big / sizeof *big; i++) {
        assert_int_equal(ec_f32_to_e4m3(big[i]), 0x7e);
        assert_int_equal(ec_f32_to_e4m3(-big[i]), 0xfe);
    }
    assert_int_equal(ec_f32_to_e4m3(NAN) & 0x7f, 0x7f);
    assert_int_equal(ec_f32_to_e4m3(ldexpf(1.0f, -10)), 0x00); /* half of 2^-9: tie -> 0 */
    assert_int_equal(ec_f32_to_e4m3(ldexpf(1.0f, -149)), 0x00);
    /* No finite float encodes to NaN: sweep bit patterns with an odd stride. */
    for (uint64_t u = 0; u < 0x100000000ull; u += 65521) {
        float f = qt_float((uint32_t)u);
        if (isfinite(f))
            assert_int_not_equal(ec_f32_to_e4m3(f) & 0x7f, 0x7f);
    }
}

static void test_e4m3_relative_error(void **state)
{
    (void)state;
    uint64_t s = 42;
    for (int i = 0; i < 100000; i++) {
        float x = ldexpf(qt_uniform(&s, 1.0f, 2.0f), (int)(qt_next(&s) % 15) - 6); /* [2^-6, 2^9) */
        if (x > 448.0f)
            continue;
        float d = ec_e4m3_to_f32(ec_f32_to_e4m3(x));
        assert_true(fabsf(d - x) <= ldexpf(x, -4));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f16_exhaustive),
        cmocka_unit_test(test_f16_ties_and_overflow),
        cmocka_unit_test(test_bf16_exhaustive),
        cmocka_unit_test(test_e4m3_decode_all),
        cmocka_unit_test(test_e4m3_ties_saturation_nan),
        cmocka_unit_test(test_e4m3_relative_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
