/* test_decode_split.c — the decode attention's policies without a GPU. The split policy
 * (ec_decode_split_len_for) as a function of the device's wave and clusters: the fallback when
 * the wave is unknown, the shape of every answer, the two ends the policy exists for (one
 * sequence spread over the whole device, a batch that fills it with one split per row), and
 * where a row's splits meet in one cluster (ec_decode_clustered_for);
 * test_cuda_kernels checks the device-backed ec_cuda_decode_split_len on a real GPU. The L2
 * prefetch rule (ec_decode_prefetch_below) at the shapes it was measured on. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine/cuda/kernels.h"

static int splits_of(int max_seq, int len) { return (max_seq + len - 1) / len; }

/* Multiples of the minimum, at most the most splits, never shorter as the rows grow. */
static void test_shape_of_every_answer(void **state)
{
    (void)state;
    static const int seqs[] = {1, 31, 32, 33, 640, 5000, 131072};
    static const int rows[] = {0, 1, 8, 32, 33, 256, 2048, 1 << 20};
    static const int waves[] = {0, 1, 132, 1056, 2112};
    static const int clusters[] = {0, 8, 16};
    for (int c = 0; c < 3; c++)
        for (int w = 0; w < 5; w++)
            for (int s = 0; s < 7; s++) {
                int prev = 0;
                for (int r = 0; r < 8; r++) {
                    int len = ec_decode_split_len_for(seqs[s], rows[r], waves[w], clusters[c]);
                    if (len < EC_DECODE_MIN_SPLIT || len % EC_DECODE_MIN_SPLIT != 0 ||
                        splits_of(seqs[s], len) > EC_DECODE_MAX_SPLITS || (r > 1 && len < prev))
                        fail_msg("max_seq %d, %d rows, wave %d, clusters of %d: %d positions per "
                                 "split (%d at fewer rows)",
                                 seqs[s], rows[r], waves[w], clusters[c], len, prev);
                    if (r > 0) prev = len;
                }
            }
}

/* Unknown wave (the occupancy query failed) or no rows: the most splits, each as short as that
 * allows. */
static void test_unknown_wave_takes_the_most_splits(void **state)
{
    (void)state;
    assert_int_equal(ec_decode_split_len_for(640, 32, 0, 0), 32);
    assert_int_equal(ec_decode_split_len_for(640, 0, 1056, 0), 32);
    assert_int_equal(ec_decode_split_len_for(4096, 32, 0, 0), 64); /* 64 splits of 64 */
    assert_int_equal(ec_decode_split_len_for(100000, 2048, 0, 0), 1568); /* 64, rounded up */
    assert_int_equal(ec_decode_split_len_for(1, 1, 0, 0), EC_DECODE_MIN_SPLIT);
}

/* An H100-like wave of 1,056 blocks: batch 1 of a 32-head model spreads 640 positions over 20
 * splits of 32; batch 8 takes 4 splits of 160; batch 64 (2,048 rows, more than the wave) one
 * split per row. */
static void test_the_two_ends(void **state)
{
    (void)state;
    assert_int_equal(ec_decode_split_len_for(640, 32, 1056, 0), 32);
    assert_int_equal(ec_decode_split_len_for(640, 256, 1056, 0), 160);
    assert_int_equal(ec_decode_split_len_for(640, 2048, 1056, 0), 640);
    assert_int_equal(ec_decode_split_len_for(650, 2048, 1056, 0), 672); /* rounded up to 32 */
}

/* A row runs clustered where the wave would cut it into more splits than a cluster holds: at
 * batch 1, 640 positions take 10 splits of 64 instead of 20 of 32. It keeps the wave's splits
 * where a cluster's worth of splits of at most 64 positions cannot cover it (640 positions in
 * clusters of 8, 1,025 in clusters of 16), and where the wave already gives a cluster's worth or
 * fewer (512 positions, batch 8 and 64). */
static void test_clusters(void **state)
{
    (void)state;
    static const struct {
        int max_seq, rows, cluster_max, len, clustered;
    } cases[] = {
        {640, 32, 16, 64, 1},  {640, 40, 16, 64, 1},     {1024, 32, 16, 64, 1},
        {640, 32, 8, 32, 0},   {1025, 32, 16, 32, 0},    {512, 32, 16, 32, 0},
        {640, 256, 16, 160, 0}, {640, 2048, 16, 640, 0}, {640, 32, 0, 32, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int len = ec_decode_split_len_for(cases[i].max_seq, cases[i].rows, 1056,
                                          cases[i].cluster_max);
        int clustered = ec_decode_clustered_for(cases[i].max_seq, cases[i].rows, 1056,
                                                cases[i].cluster_max);
        if (len != cases[i].len || clustered != cases[i].clustered)
            fail_msg("max_seq %d, %d rows, clusters of %d: %d positions a split, clustered %d "
                     "(expected %d, %d)",
                     cases[i].max_seq, cases[i].rows, cases[i].cluster_max, len, clustered,
                     cases[i].len, cases[i].clustered);
        if (clustered && splits_of(cases[i].max_seq, len) > cases[i].cluster_max)
            fail_msg("max_seq %d: %d clustered splits", cases[i].max_seq,
                     splits_of(cases[i].max_seq, len));
    }
}

/* An H100's 50 MiB L2, 16-bit caches: the step's K and V rows fill at most an eighth of it up to
 * the returned position. Measured at 512-640 positions: prefetched at batch 1 with 8 kv heads
 * (2.6 MB), not with 32 (10.5 MB) nor at batch 8 (21 MB). */
static void test_prefetch_rule(void **state)
{
    (void)state;
    const long long h100 = 50LL << 20;
    assert_int_equal(ec_decode_prefetch_below(h100, 1, 8, 128, 2), 1600);  /* Llama-3.1-8B */
    assert_int_equal(ec_decode_prefetch_below(h100, 1, 32, 128, 2), 400);  /* Llama-2-7B */
    assert_int_equal(ec_decode_prefetch_below(h100, 8, 8, 128, 2), 200);   /* batch 8 */
    assert_int_equal(ec_decode_prefetch_below(h100, 4, 32, 128, 2), 100);
    assert_int_equal(ec_decode_prefetch_below(h100, 1, 1, 8, 2), 204800);  /* a tiny model */
    /* no bulk prefetch (l2 0: below sm_90) or no rows: never, at any position */
    assert_int_equal(ec_decode_prefetch_below(0, 1, 8, 128, 2), -1);
    assert_int_equal(ec_decode_prefetch_below(h100, 0, 8, 128, 2), -1);
    /* huge L2 and a tiny row: capped, not overflowed */
    assert_int_equal(ec_decode_prefetch_below(1LL << 62, 1, 1, 8, 2), INT_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shape_of_every_answer),
        cmocka_unit_test(test_unknown_wave_takes_the_most_splits),
        cmocka_unit_test(test_the_two_ends),
        cmocka_unit_test(test_clusters),
        cmocka_unit_test(test_prefetch_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
