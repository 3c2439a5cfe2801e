/* test_quant_formats.c — the format table: one row per precision with its entry points, names
 * that parse back, byte counts against the layouts of docs/formats.md written out by hand,
 * bytes per weight, and the name lists help texts print. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ecocompute/common.h"
#include "ecocompute/quant.h"

#include <math.h>
#include <string.h>

static void test_every_row_is_complete(void **state)
{
    (void)state;
    for (int p = 0; p < EC_PREC_COUNT; p++) {
        const ec_qformat *f = ec_qformat_of((ec_precision)p);
        assert_non_null(f);
        assert_non_null(f->name);
        assert_non_null(f->description);
        assert_non_null(f->quantize);
        assert_non_null(f->dequantize_row);
        assert_non_null(f->matmul_rows);
        /* int8 multiplies its codes; every other format decodes them. */
        assert_int_equal(f->decode == NULL, f->act == EC_ACT_INT8);
        assert_true(f->backends & EC_QFORMAT_CPU); /* the CPU reference runs every format */
        ec_precision back;
        assert_int_equal(ec_precision_parse(f->name, &back), 0);
        assert_int_equal(back, p);
        assert_string_equal(ec_precision_name((ec_precision)p), f->name);
    }
    assert_null(ec_qformat_of(EC_PREC_COUNT));
    assert_true(isnan(ec_qformat_bytes_per_weight(EC_PREC_COUNT)));
}

/* rows x cols = 3 x 130: 3 blocks of 64 per row (the last partial), odd nothing. */
static void test_weight_bytes_by_hand(void **state)
{
    (void)state;
    const size_t r = 3, c = 130, blocks = r * 3;
    assert_int_equal(ec_precision_weight_bytes(EC_PREC_F32, 3, 130), r * c * 4);
    assert_int_equal(ec_precision_weight_bytes(EC_PREC_BF16, 3, 130), r * c * 2);
    assert_int_equal(ec_precision_weight_bytes(EC_PREC_INT8_MIXED, 3, 130), r * c + r * 4);
    assert_int_equal(ec_precision_weight_bytes(EC_PREC_FP8, 3, 130), r * c + r * 4);
    assert_int_equal(ec_precision_weight_bytes(EC_PREC_NF4, 3, 130), r * 65 + blocks * 4);
    /* codes + 8-bit absmax codes + one fp32 per 256 of them + the fp32 offset */
    assert_int_equal(ec_precision_weight_bytes(EC_PREC_NF4_DQ, 3, 130), r * 65 + blocks + 4 + 4);
    /* an odd width rounds each row's nibbles up to a byte */
    assert_int_equal(ec_precision_weight_bytes(EC_PREC_NF4, 2, 63), 2 * 32 + 2 * 4);
    assert_int_equal(ec_precision_weight_bytes(EC_PREC_FP16, 0, 8), 0);
}

static void test_bytes_per_weight(void **state)
{
    (void)state;
    assert_float_equal(ec_qformat_bytes_per_weight(EC_PREC_FP16), 2.0, 0);
    assert_float_equal(ec_qformat_bytes_per_weight(EC_PREC_INT8), 1.0, 0);
    assert_float_equal(ec_qformat_bytes_per_weight(EC_PREC_NF4), 0.5625, 0);
    assert_float_equal(ec_qformat_bytes_per_weight(EC_PREC_NF4_DQ), 0.5 + 1.0 / 64 + 4.0 / 16384,
                       1e-12);
    assert_float_equal(ec_qformat_code_bytes(EC_PREC_NF4_DQ), 0.5, 0);
    /* A large matrix's exact bytes per weight approach the figure (per-row scales vanish). */
    for (int p = 0; p < EC_PREC_COUNT; p++) {
        double exact =
            (double)ec_precision_weight_bytes((ec_precision)p, 4096, 65536) / (4096.0 * 65536.0);
        assert_float_equal(exact, ec_qformat_bytes_per_weight((ec_precision)p), 1e-4);
    }
}

static void test_name_lists(void **state)
{
    (void)state;
    char buf[128];
    assert_string_equal(ec_qformat_names(EC_QFORMAT_CPU, " ", buf, sizeof buf),
                        "f32 fp16 bf16 int8 int8-mixed nf4 nf4-dq fp8");
    assert_string_equal(ec_qformat_names(EC_QFORMAT_CUDA, ",", buf, sizeof buf),
                        "fp16,bf16,int8,int8-mixed,nf4,nf4-dq,fp8");
    /* A short buffer keeps whole names only, terminated. */
    assert_string_equal(ec_qformat_names(EC_QFORMAT_CPU, " ", buf, 12), "f32 fp16");
    ec_precision p;
    assert_int_equal(ec_precision_parse("nf5", &p), -1);
    assert_non_null(strstr(ec_last_error(), "f32, fp16, bf16, int8, int8-mixed, nf4, nf4-dq, fp8"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_row_is_complete),
        cmocka_unit_test(test_weight_bytes_by_hand),
        cmocka_unit_test(test_bytes_per_weight),
        cmocka_unit_test(test_name_lists),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
