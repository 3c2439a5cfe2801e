/* test_stories260k.c — the real 260K TinyStories model: greedy tokens from [BOS] agree between
 * the llama2.c v0 and v1 checkpoints, and the 16-bit and 8-bit precisions follow the float32
 * tokens (whose text test_run_cli.sh checks byte for byte against llama2.c) for a long stretch
 * before the first divergence. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine/engine_test_util.h"

#include <stdio.h>

enum { GEN = 256, BOS = 1 };

static void greedy(const char *file, ec_precision p, int *out /* [GEN] */)
{
    ec_model *m = test_open_model(test_data_file(file), 0);
    ec_backend *b = test_load(m, p, 1, GEN, 1);
    const int prompt[1] = {BOS};
    assert_int_equal(ec_generate(b, prompt, 1, 1, GEN, out, NULL, NULL), 0);
    ec_backend_destroy(b);
    ec_model_close(m);
}

static int matching_prefix(const int *a, const int *b)
{
    int n = 0;
    while (n < GEN && a[n] == b[n])
        n++;
    return n;
}

static void v0_and_v1_checkpoints_agree(void **state)
{
    (void)state;
    int v0[GEN], v1[GEN];
    greedy("models/stories260K.bin", EC_PREC_F32, v0);
    greedy("models/stories260K_v1.bin", EC_PREC_F32, v1);
    assert_memory_equal(v0, v1, sizeof v0);
}

/* Lower precisions flip a near-tie sooner or later; each must hold the float32 text for at
 * least min_match tokens (measured: see docs/engine.md), and fp16 tokens count is reported. */
static void precisions_follow_f32_tokens(void **state)
{
    (void)state;
    static const struct {
        ec_precision p;
        int min_match;
    } cases[] = {{EC_PREC_FP16, 128}, {EC_PREC_BF16, 128}, {EC_PREC_INT8, 30}, {EC_PREC_FP8, 15}};
    int ref[GEN], got[GEN];
    greedy("models/stories260K.bin", EC_PREC_F32, ref);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        greedy("models/stories260K.bin", cases[i].p, got);
        int n = matching_prefix(ref, got);
        printf("%s: %d of %d greedy tokens match float32 before the first divergence\n",
               ec_precision_name(cases[i].p), n, GEN);
        assert_true(n >= cases[i].min_match);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(v0_and_v1_checkpoints_agree),
        cmocka_unit_test(precisions_follow_f32_tokens),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
