/* test_cpu_ops.c — the CPU backend's building blocks against hand-computed values: RMSNorm,
 * rotary embeddings (both pair conventions, Llama-3 scaling), one head's attention, SwiGLU,
 * the thread pool's split, and the eval metrics. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ecocompute/engine.h"
#include "engine/cpu/cpu_ops.h"
#include "engine/cpu/threadpool.h"

#include <math.h>
#include <string.h>

static void rmsnorm_scales_to_unit_rms(void **state)
{
    (void)state;
    const float x[4] = {1, -2, 3, -4}, w[4] = {1, 1, 2, 0.5f};
    float y[4];
    cpu_rmsnorm(y, x, w, 4, 0.0f);
    float inv = 1.0f / sqrtf((1 + 4 + 9 + 16) / 4.0f);
    for (int i = 0; i < 4; i++)
        assert_float_equal(y[i], w[i] * x[i] * inv, 1e-6);
}

/* Rotate-half on a head equals interleaved rotation on the same head with its pairs moved from
 * (j, j + half) to (2j, 2j + 1): that is the permutation HF applies to wq/wk. */
static void rope_conventions_agree_up_to_pair_layout(void **state)
{
    (void)state;
    ec_model_config c = {.head_dim = 8, .rope_theta = 10000.0f};
    float inv[4], cs[4], sn[4], half[8], inter[8];
    cpu_rope_inv_freq(&c, inv);
    assert_float_equal(inv[0], 1.0f, 0);
    assert_float_equal(inv[2], 1.0f / 100.0f, 1e-7); /* 10000^(-4/8) */
    cpu_rope_angles(inv, 4, 5, cs, sn);
    for (int j = 0; j < 4; j++) {
        half[j] = (float)j + 1, half[j + 4] = -(float)j * 0.5f;
        inter[2 * j] = half[j], inter[2 * j + 1] = half[j + 4];
    }
    cpu_rope_apply(half, 1, 8, cs, sn, 0);
    cpu_rope_apply(inter, 1, 8, cs, sn, 1);
    for (int j = 0; j < 4; j++) {
        assert_float_equal(half[j], inter[2 * j], 0);
        assert_float_equal(half[j + 4], inter[2 * j + 1], 0);
    }
    /* Position 5, pair 0 turned by 5 rad: (1, 0) -> (cos 5, sin 5). */
    assert_float_equal(inter[0], cosf(5.0f), 1e-6);
    assert_float_equal(inter[1], sinf(5.0f), 1e-6);
}

static void llama3_scaling_keeps_high_and_slows_low_frequencies(void **state)
{
    (void)state;
    ec_model_config plain = {.head_dim = 128, .rope_theta = 500000.0f};
    ec_model_config scaled = plain;
    scaled.rope_scaling = EC_ROPE_SCALING_LLAMA3;
    scaled.rope_scaling_factor = 8.0f;
    scaled.rope_low_freq_factor = 1.0f;
    scaled.rope_high_freq_factor = 4.0f;
    scaled.rope_original_max_pos = 8192;
    float a[64], b[64];
    cpu_rope_inv_freq(&plain, a);
    cpu_rope_inv_freq(&scaled, b);
    int kept = 0, slowed = 0, blended = 0;
    for (int j = 0; j < 64; j++) {
        float wavelen = 2.0f * 3.14159265f / a[j];
        if (wavelen < 8192 / 4.0f)
            kept += b[j] == a[j];
        else if (wavelen > 8192 / 1.0f)
            slowed += fabsf(b[j] - a[j] / 8) <= 1e-6f * a[j];
        else
            blended += b[j] < a[j] && b[j] > a[j] / 8;
    }
    assert_int_equal(kept + slowed + blended, 64);
    assert_true(kept > 0 && slowed > 0 && blended > 0);
}

static void attention_weights_values_by_softmax(void **state)
{
    (void)state;
    /* Two positions, head_dim 2, stride 4 (another head interleaved in the cache). */
    const float q[2] = {1, 0};
    const float k[8] = {2, 0, 9, 9, 0, 0, 9, 9};
    const float v[8] = {1, 2, 9, 9, 3, 4, 9, 9};
    float out[2], scores[2];
    cpu_attend(out, q, k, v, 4, 1, 2, scores);
    assert_float_equal(out[0], 1, 0);
    assert_float_equal(out[1], 2, 0);
    cpu_attend(out, q, k, v, 4, 2, 2, scores);
    double w0 = exp(2 / sqrt(2.0)) / (exp(2 / sqrt(2.0)) + 1); /* scores 2/sqrt2 and 0 */
    assert_float_equal(out[0], w0 * 1 + (1 - w0) * 3, 1e-6);
    assert_float_equal(out[1], w0 * 2 + (1 - w0) * 4, 1e-6);
}

static void swiglu_is_silu_gate_times_up(void **state)
{
    (void)state;
    float g[3] = {0, 1, -2};
    const float up[3] = {5, 2, 3};
    cpu_swiglu(g, up, 3);
    assert_float_equal(g[0], 0, 0);
    assert_float_equal(g[1], 2 / (1 + exp(-1.0)), 1e-6);
    assert_float_equal(g[2], 3 * -2 / (1 + exp(2.0)), 1e-6);
}

typedef struct {
    int calls[8];
    int parts_seen;
} pool_log;

static void count_call(void *arg, int t, int n)
{
    pool_log *log = arg;
    __atomic_fetch_add(&log->calls[t], 1, __ATOMIC_SEQ_CST);
    __atomic_store_n(&log->parts_seen, n, __ATOMIC_SEQ_CST);
}

static void pool_runs_each_part_once(void **state)
{
    (void)state;
    ec_pool *p;
    assert_int_equal(ec_pool_create(&p, 3), 0);
    for (int parts = 1; parts <= 5; parts++) {
        pool_log log;
        memset(&log, 0, sizeof log);
        ec_pool_run(p, count_call, &log, parts);
        int expect = parts > 3 ? 3 : parts;
        assert_int_equal(log.parts_seen, expect);
        for (int t = 0; t < 8; t++)
            assert_int_equal(log.calls[t], t < expect);
    }
    assert_int_equal(ec_pool_parts(p, 10.0), 1);
    assert_int_equal(ec_pool_parts(p, 1e9), 3);
    ec_pool_destroy(p);
    /* The split tiles [0, count) without gaps or overlap, whatever the part count. */
    for (int n = 1; n <= 7; n++) {
        int next = 0;
        for (int t = 0; t < n; t++) {
            int lo, hi;
            ec_pool_split(10, t, n, &lo, &hi);
            assert_int_equal(lo, next);
            next = hi;
        }
        assert_int_equal(next, 10);
    }
}

static void metrics_match_hand_values(void **state)
{
    (void)state;
    const float tie[4] = {1, 3, 3, 2};
    assert_int_equal(ec_argmax(tie, 4), 1); /* lowest index among equals */
    const float p[2] = {0, 0}, q[2] = {logf(3), 0};
    /* KL([1/2,1/2] || [3/4,1/4]) = 1/2 ln(2/3) + 1/2 ln 2 */
    assert_float_equal(ec_logits_kl(p, q, 2), 0.5 * log(2.0 / 3) + 0.5 * log(2.0), 1e-7);
    assert_float_equal(ec_logits_kl(q, q, 2), 0, 0);
    assert_float_equal(ec_logits_nll(q, 2, 1), log(4.0), 1e-7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rmsnorm_scales_to_unit_rms),
        cmocka_unit_test(rope_conventions_agree_up_to_pair_layout),
        cmocka_unit_test(llama3_scaling_keeps_high_and_slows_low_frequencies),
        cmocka_unit_test(attention_weights_values_by_softmax),
        cmocka_unit_test(swiglu_is_silu_gate_times_up),
        cmocka_unit_test(pool_runs_each_part_once),
        cmocka_unit_test(metrics_match_hand_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
