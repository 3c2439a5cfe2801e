/* test_cuda_formats.c — the CUDA backend's format table (qlinear.c) against quant.h's, without a
 * GPU: every precision has an entry, the formats quant.h marks as running on CUDA are exactly
 * the ones the backend has kernels for, and each path matches the format's storage. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine/cuda/qweight.h"

static void test_every_precision_has_an_entry(void **state)
{
    (void)state;
    for (int p = 0; p < EC_PREC_COUNT; p++)
        assert_int_not_equal(ec_cuda_format_of((ec_precision)p).path, EC_CUDA_PATH_MISSING);
    assert_int_equal(ec_cuda_format_of(EC_PREC_COUNT).path, EC_CUDA_PATH_MISSING);
}

static void test_supported_list_agrees_with_quant(void **state)
{
    (void)state;
    for (int p = 0; p < EC_PREC_COUNT; p++) {
        const ec_qformat *f = ec_qformat_of((ec_precision)p);
        int runs = ec_cuda_format_of((ec_precision)p).path > EC_CUDA_PATH_NONE;
        if (runs != !!(f->backends & EC_QFORMAT_CUDA))
            fail_msg("%s: quant.h says CUDA %s, the CUDA table %s", f->name,
                     f->backends & EC_QFORMAT_CUDA ? "yes" : "no", runs ? "runs it" : "does not");
    }
}

/* The path follows the storage: 16-bit codes are 16BIT, int8 codes with int8 activations INT8,
 * the rest (nf4, nf4-dq, fp8) PACKED; bf16 alone computes in bf16; only a packed format may
 * carry the norm. */
static void test_paths_follow_the_storage(void **state)
{
    (void)state;
    for (int p = 0; p < EC_PREC_COUNT; p++) {
        const ec_qformat *f = ec_qformat_of((ec_precision)p);
        ec_cuda_format c = ec_cuda_format_of((ec_precision)p);
        if (c.path == EC_CUDA_PATH_NONE) continue;
        ec_cuda_path want = f->code_bits == 16      ? EC_CUDA_PATH_16BIT
                            : f->act == EC_ACT_INT8 ? EC_CUDA_PATH_INT8
                                                    : EC_CUDA_PATH_PACKED;
        if (c.path != want) fail_msg("%s: path %d, expected %d", f->name, c.path, want);
        assert_int_equal(c.act, p == EC_PREC_BF16 ? EC_CUDA_BF16 : EC_CUDA_F16);
        assert_int_equal(ec_cuda_is_packed((ec_precision)p), c.path == EC_CUDA_PATH_PACKED);
        if (c.carries_norm) assert_int_equal(c.path, EC_CUDA_PATH_PACKED);
    }
    assert_int_equal(ec_cuda_format_of(EC_PREC_F32).path, EC_CUDA_PATH_NONE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_precision_has_an_entry),
        cmocka_unit_test(test_supported_list_agrees_with_quant),
        cmocka_unit_test(test_paths_follow_the_storage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
