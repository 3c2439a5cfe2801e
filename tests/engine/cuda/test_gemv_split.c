/* test_gemv_split.c — the decode GEMV's warps per row pair (ec_gemv_split_for) as a function of
 * the weight's shape and the device's SM count, without a GPU: the shape of every answer, the
 * unknown device, and the answers for the weights the rule exists for on an H100 (132 SMs), and
 * for the shapes test_cuda_kernels runs to cover each split. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine/cuda/kernels.h"

enum { H100_SMS = 132 };

/* A GEMV's arguments for a weight of rows x cols (16-bit, store or add): pairs and rounds. */
static int split_of(int rows, int cols, int sms)
{
    int chunks = cols / 8;
    return ec_gemv_split_for((rows + 1) / 2, (chunks + 31) / 32, sms);
}

/* 1, 2, 4 or 8; a split leaves every warp 2 rounds at least; it is the fewest that reach the
 * warps wanted, so half of it would not; more pairs never get more warps each. */
static void test_shape_of_every_answer(void **state)
{
    (void)state;
    static const int pairs[] = {1, 2, 3, 100, 1024, 2048, 3072, 3959, 3960, 11008, 64128};
    static const int rounds[] = {1, 2, 3, 4, 7, 8, 9, 16, 17, 43, 1000};
    static const int sms[] = {0, 1, 78, 132};
    for (size_t d = 0; d < sizeof sms / sizeof *sms; d++)
        for (size_t r = 0; r < sizeof rounds / sizeof *rounds; r++) {
            int prev = EC_GEMV_MAX_SPLIT;
            for (size_t p = 0; p < sizeof pairs / sizeof *pairs; p++) {
                int ks = ec_gemv_split_for(pairs[p], rounds[r], sms[d]);
                assert_true(ks == 1 || ks == 2 || ks == 4 || ks == 8);
                if (ks > 1) {
                    assert_true(rounds[r] >= 2 * ks);
                    assert_true(pairs[p] * (ks / 2) < EC_GEMV_WARPS_PER_SM * sms[d]);
                }
                assert_true(ks <= prev);
                prev = ks;
            }
        }
}

static void test_unknown_device_keeps_a_warp_per_pair(void **state)
{
    (void)state;
    assert_int_equal(ec_gemv_split_for(1024, 43, 0), 1);
}

static void test_h100_shapes(void **state)
{
    (void)state;
    /* the small shapes' o and down (1,024 pairs): 4 warps; the 7-8 B shapes' (2,048): 2 */
    assert_int_equal(split_of(2048, 11008, H100_SMS), 4); /* Qwen2.5-3B down */
    assert_int_equal(split_of(2048, 2048, H100_SMS), 4);  /* Qwen2.5-3B, TinyLlama o */
    assert_int_equal(split_of(4096, 11008, H100_SMS), 2); /* Llama-2-7B down */
    assert_int_equal(split_of(4096, 4096, H100_SMS), 2);  /* Llama-2-7B o */
    assert_int_equal(split_of(6144, 4096, H100_SMS), 2);  /* Llama-3.1-8B qkv: 3,072 pairs */
    assert_int_equal(split_of(12288, 4096, H100_SMS), 1); /* Llama-2-7B qkv */
    assert_int_equal(split_of(32000, 4096, H100_SMS), 1); /* a head */
    assert_int_equal(ec_gemv_split_for(11008, 8, H100_SMS), 1); /* gate/up: a pair per feature */
    /* test_cuda_kernels' linear shapes */
    assert_int_equal(split_of(4097, 4104, H100_SMS), 2);
    assert_int_equal(split_of(64, 8, H100_SMS), 1);
    assert_int_equal(split_of(3, 1000, H100_SMS), 2);
    assert_int_equal(split_of(5, 2056, H100_SMS), 4);
    assert_int_equal(split_of(6, 4104, H100_SMS), 8);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shape_of_every_answer),
        cmocka_unit_test(test_unknown_device_keeps_a_warp_per_pair),
        cmocka_unit_test(test_h100_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
