/* test_engine.c — the generation loop over the CPU backend on the `tiny` synthetic model:
 * determinism, KV-cache decoding equal to full recomputation, batch independence, bit-identical
 * results for any thread count, phase hooks, and the errors of bad calls. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine/engine_test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { L = 8, GEN = 12 };

/* Greedy tokens of `batch` seeded prompts, on a fresh model and backend. */
static void generate(const char *model, uint64_t seed, ec_precision p, int batch, int threads,
                     int *out /* [batch][GEN] */)
{
    ec_model *m = test_open_model(model, seed);
    int vocab = ec_model_config_of(m)->vocab_size;
    int prompts[4 * L];
    ec_prompt_synthetic(seed, vocab, batch, L, prompts);
    ec_backend *b = test_load(m, p, batch, L + GEN, threads);
    ec_generate_stats st;
    assert_int_equal(ec_generate(b, prompts, batch, L, GEN, out, NULL, &st), 0);
    assert_int_equal(st.prefill_tokens, batch * L);
    assert_int_equal(st.decode_tokens, batch * (GEN - 1));
    ec_backend_destroy(b);
    ec_model_close(m);
}

static void same_seed_same_tokens(void **state)
{
    (void)state;
    int a[2 * GEN], b[2 * GEN], c[2 * GEN];
    generate("tiny", 7, EC_PREC_INT8, 2, 0, a);
    generate("tiny", 7, EC_PREC_INT8, 2, 0, b);
    generate("tiny", 8, EC_PREC_INT8, 2, 0, c);
    assert_memory_equal(a, b, sizeof a);
    assert_memory_not_equal(a, c, sizeof a); /* the seed reaches weights and prompts */
}

/* Decoding with the cache gives the logits a from-scratch forward over the whole sequence gives. */
static void check_cache_against_recompute(ec_precision p)
{
    enum { B = 2 };
    ec_model *m = test_open_model("tiny", 3);
    int vocab = ec_model_config_of(m)->vocab_size;
    ec_backend *inc = test_load(m, p, B, L + GEN, 2), *full = test_load(m, p, B, L + GEN, 2);
    int prompts[B * L], seq[B][L + GEN], next[B], next_full[B], step[B];
    float *lg = malloc(sizeof(float) * B * vocab), *lg_full = malloc(sizeof(float) * B * vocab);
    ec_prompt_synthetic(3, vocab, B, L, prompts);
    for (int i = 0; i < B; i++)
        memcpy(seq[i], prompts + i * L, sizeof(int) * L);
    assert_int_equal(inc->ops->forward(inc, prompts, B, L, 0, next, lg), 0);
    double worst = 0.0;
    for (int len = L; len < L + GEN; len++) {
        /* The full pass sees tokens [0, len) of each sequence as one prompt. */
        int *flat = malloc(sizeof(int) * B * len);
        for (int i = 0; i < B; i++)
            memcpy(flat + i * len, seq[i], sizeof(int) * len);
        assert_int_equal(full->ops->forward(full, flat, B, len, 0, next_full, lg_full), 0);
        free(flat);
        for (int k = 0; k < B * vocab; k++)
            worst = fmax(worst, fabs((double)lg[k] - lg_full[k]));
        assert_memory_equal(next, next_full, sizeof next);
        for (int i = 0; i < B; i++)
            step[i] = seq[i][len] = next[i];
        if (len + 1 < L + GEN)
            assert_int_equal(inc->ops->forward(inc, step, B, 1, len, next, lg), 0);
    }
    printf("%s: max |logit(cache) - logit(recompute)| = %.3g\n", ec_precision_name(p), worst);
    assert_true(worst < 1e-4);
    free(lg);
    free(lg_full);
    ec_backend_destroy(inc);
    ec_backend_destroy(full);
    ec_model_close(m);
}

static void kv_cache_equals_recompute_f32(void **state)
{
    (void)state;
    check_cache_against_recompute(EC_PREC_F32);
}

static void kv_cache_equals_recompute_nf4(void **state)
{
    (void)state;
    check_cache_against_recompute(EC_PREC_NF4);
}

/* A batch of B sequences yields what B runs of one sequence yield. (Not int8-mixed: LLM.int8
 * picks outlier columns across the whole batch, so its numerics depend on the batch by design.) */
static void batch_equals_single_runs(void **state)
{
    (void)state;
    enum { B = 3 };
    const ec_precision precs[] = {EC_PREC_F32, EC_PREC_INT8, EC_PREC_NF4};
    for (size_t k = 0; k < sizeof precs / sizeof precs[0]; k++) {
        ec_model *m = test_open_model("tiny", 5);
        int vocab = ec_model_config_of(m)->vocab_size;
        int prompts[B * L], batched[B * GEN], single[GEN];
        ec_prompt_synthetic(11, vocab, B, L, prompts);
        ec_backend *b = test_load(m, precs[k], B, L + GEN, 2);
        assert_int_equal(ec_generate(b, prompts, B, L, GEN, batched, NULL, NULL), 0);
        for (int i = 0; i < B; i++) {
            assert_int_equal(ec_generate(b, prompts + i * L, 1, L, GEN, single, NULL, NULL), 0);
            assert_memory_equal(single, batched + i * GEN, sizeof single);
        }
        ec_backend_destroy(b);
        ec_model_close(m);
    }
}

/* Logits of a prefill big enough to be split across threads, then of decode steps, are
 * bit-identical for 1, 2 and 3 threads. */
static void thread_count_does_not_change_bits(void **state)
{
    (void)state;
    enum { B = 2, P = 24, STEPS = 2 };
    const ec_precision precs[] = {EC_PREC_F32, EC_PREC_INT8_MIXED, EC_PREC_NF4};
    for (size_t k = 0; k < sizeof precs / sizeof precs[0]; k++) {
        ec_model *m = test_open_model("tiny", 9);
        int vocab = ec_model_config_of(m)->vocab_size;
        int prompts[B * P], next[B];
        ec_prompt_synthetic(9, vocab, B, P, prompts);
        float *ref = malloc(sizeof(float) * (STEPS + 1) * B * vocab);
        float *got = malloc(sizeof(float) * B * vocab);
        for (int threads = 1; threads <= 3; threads++) {
            ec_backend *b = test_load(m, precs[k], B, P + STEPS, threads);
            float *dst = threads == 1 ? ref : got;
            assert_int_equal(b->ops->forward(b, prompts, B, P, 0, next, dst), 0);
            if (threads > 1) assert_memory_equal(ref, got, sizeof(float) * B * vocab);
            for (int s = 1; s <= STEPS; s++) {
                dst = threads == 1 ? ref + (size_t)s * B * vocab : got;
                assert_int_equal(b->ops->forward(b, next, B, 1, P + s - 1, next, dst), 0);
                if (threads > 1)
                    assert_memory_equal(ref + (size_t)s * B * vocab, got,
                                        sizeof(float) * B * vocab);
            }
            ec_backend_destroy(b);
        }
        free(ref);
        free(got);
        ec_model_close(m);
    }
}

/* --quantize-head moves the head (tied to the embedding in tiny) into the linear format: the
 * logits change, the greedy path through the blocks does not break. */
static void quantized_head_changes_logits(void **state)
{
    (void)state;
    ec_model *m = test_open_model("tiny", 4);
    int vocab = ec_model_config_of(m)->vocab_size, prompt[L], next[2];
    ec_prompt_synthetic(4, vocab, 1, L, prompt);
    float *plain = malloc(sizeof(float) * vocab), *quant = malloc(sizeof(float) * vocab);
    ec_load_options o;
    ec_load_options_default(&o);
    o.precision = EC_PREC_NF4;
    o.max_seq = L;
    for (int q = 0; q <= 1; q++) {
        ec_backend *b;
        o.quantize_head = q;
        assert_int_equal(ec_backend_create(&b, "cpu"), 0);
        assert_int_equal(b->ops->load(b, m, &o), 0);
        assert_int_equal(b->ops->forward(b, prompt, 1, L, 0, &next[q], q ? quant : plain), 0);
        ec_backend_destroy(b);
    }
    assert_memory_not_equal(plain, quant, sizeof(float) * vocab);
    double worst = 0.0;
    for (int v = 0; v < vocab; v++) worst = fmax(worst, fabs((double)plain[v] - quant[v]));
    printf("nf4 head vs fp16 head: max |dlogit| = %.3g\n", worst);
    assert_true(worst < 1.0); /* a 4-bit head is close to a 16-bit one, not unrelated */
    free(plain);
    free(quant);
    ec_model_close(m);
}

typedef struct {
    int events[5];
    int n;
    int prepared_batch;
} hook_log;

static void record_phase(void *ctx, ec_phase phase, int begin)
{
    hook_log *log = ctx;
    if (log->n < 5) log->events[log->n] = (int)phase * 2 + !begin;
    log->n++;
}

/* The CPU backend's own ops with a prepare that logs itself (event -1) into prepare_log. */
static hook_log *prepare_log;
static int record_prepare(ec_backend *b, int batch)
{
    (void)b;
    if (prepare_log->n < 5) prepare_log->events[prepare_log->n] = -1;
    prepare_log->n++;
    prepare_log->prepared_batch = batch;
    return 0;
}
static int failing_prepare(ec_backend *b, int batch)
{
    (void)b, (void)batch;
    return ec_set_error("prepare failed on purpose");
}

static void phase_hooks_bracket_each_phase(void **state)
{
    (void)state;
    ec_model *m = test_open_model("tiny", 1);
    ec_backend *b = test_load(m, EC_PREC_FP16, 1, L + 4, 1);
    int prompt[L], out[4];
    ec_prompt_synthetic(1, ec_model_config_of(m)->vocab_size, 1, L, prompt);
    hook_log log = {{0}, 0, 0};
    ec_phase_hooks hooks = {record_phase, &log};
    ec_generate_stats st;
    /* The backend's one-time prepare runs first, outside both timed phases. */
    ec_backend_ops with_prepare = *b->ops;
    const ec_backend_ops *own = b->ops;
    with_prepare.prepare = record_prepare;
    prepare_log = &log;
    b->ops = &with_prepare;
    assert_int_equal(ec_generate(b, prompt, 1, L, 4, out, &hooks, &st), 0);
    b->ops = own;
    const int expect[5] = {-1, EC_PHASE_PREFILL * 2, EC_PHASE_PREFILL * 2 + 1,
                           EC_PHASE_DECODE * 2, EC_PHASE_DECODE * 2 + 1};
    assert_int_equal(log.n, 5);
    assert_memory_equal(log.events, expect, sizeof expect);
    assert_int_equal(log.prepared_batch, 1);
    assert_true(st.prefill_s > 0.0 && st.decode_s > 0.0);
    /* A failed prepare fails the call before any phase starts. */
    with_prepare.prepare = failing_prepare;
    b->ops = &with_prepare;
    log.n = 0;
    assert_int_equal(ec_generate(b, prompt, 1, L, 4, out, &hooks, &st), -1);
    b->ops = own;
    assert_int_equal(log.n, 0);
    assert_string_equal(ec_last_error(), "prepare failed on purpose");
    ec_backend_destroy(b);
    ec_model_close(m);
}

static void bad_calls_fail_with_a_message(void **state)
{
    (void)state;
    ec_model *m = test_open_model("tiny", 1);
    ec_backend *b = test_load(m, EC_PREC_F32, 2, 8, 1);
    int tokens[16] = {0}, next[4], out[16];
    assert_int_equal(b->ops->forward(b, tokens, 3, 1, 0, next, NULL), -1); /* batch > max */
    assert_non_null(strstr(ec_last_error(), "batch"));
    assert_int_equal(b->ops->forward(b, tokens, 1, 4, 6, next, NULL), -1); /* past the cache */
    assert_non_null(strstr(ec_last_error(), "cache"));
    tokens[0] = ec_model_config_of(m)->vocab_size;
    assert_int_equal(b->ops->forward(b, tokens, 1, 1, 0, next, NULL), -1);
    assert_non_null(strstr(ec_last_error(), "vocabulary"));
    tokens[0] = 5;
    assert_int_equal(ec_generate(b, tokens, 1, 4, 6, out, NULL, NULL), -1); /* 4 + 6 - 1 > 8 */
    assert_int_equal(ec_generate(b, tokens, 1, 4, 5, out, NULL, NULL), 0);  /* exactly fits */
    ec_backend_destroy(b);

    ec_backend *none = NULL;
#ifdef ECOCOMPUTE_HAVE_CUDA
    /* Creating touches no GPU; a missing device shows at load. */
    assert_int_equal(ec_backend_create(&none, "cuda:0"), 0);
    assert_string_equal(none->ops->name, "cuda");
    ec_backend_destroy(none);
#else
    assert_int_equal(ec_backend_create(&none, "cuda:0"), -1);
    assert_non_null(strstr(ec_last_error(), "no CUDA backend"));
#endif
    assert_int_equal(ec_backend_create(&none, "tpu"), -1);
    assert_non_null(strstr(ec_last_error(), "unknown device"));
    int idx;
    assert_int_equal(ec_device_parse("cuda:3", &idx), 0);
    assert_int_equal(idx, 3);
    assert_int_equal(ec_device_parse("cuda:x", &idx), -1);

    ec_load_options o;
    ec_load_options_default(&o);
    o.max_seq = ec_model_config_of(m)->max_seq_len + 1;
    assert_int_equal(ec_backend_create(&b, "cpu"), 0);
    assert_int_equal(b->ops->load(b, m, &o), -1);
    assert_non_null(strstr(ec_last_error(), "max_seq_len"));
    ec_backend_destroy(b);

    /* ec_backend_open tells a backend it cannot create (-1) from a load that failed (-2). */
    assert_int_equal(ec_backend_open(&b, "tpu", m, &o), -1);
    assert_null(b);
    assert_int_equal(ec_backend_open(&b, "cpu", m, &o), -2);
    assert_null(b);
    assert_non_null(strstr(ec_last_error(), "max_seq_len"));
    o.max_seq = 0;
    assert_int_equal(ec_backend_open(&b, "cpu", m, &o), 0);
    assert_int_equal(o.device, -1);
    ec_backend_destroy(b);
    ec_model_close(m);
}

/* ec_device_ready: the CPU runs every format; a GPU is checked by the CUDA backend, and a build
 * without one says so; a bad name or precision fails with its own message. */
static void device_ready_by_name(void **state)
{
    (void)state;
    for (int p = 0; p < EC_PREC_COUNT; p++)
        assert_int_equal(ec_device_ready("cpu", (ec_precision)p), 0);
    assert_int_equal(ec_device_ready("tpu", EC_PREC_FP16), -1);
    assert_non_null(strstr(ec_last_error(), "unknown device"));
    assert_int_equal(ec_device_ready("cpu", (ec_precision)EC_PREC_COUNT), -1);
    assert_non_null(strstr(ec_last_error(), "not a precision"));
#ifndef ECOCOMPUTE_HAVE_CUDA
    assert_int_equal(ec_device_ready("cuda:0", EC_PREC_FP16), -1);
    assert_non_null(strstr(ec_last_error(), "no CUDA backend"));
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_seed_same_tokens),
        cmocka_unit_test(kv_cache_equals_recompute_f32),
        cmocka_unit_test(kv_cache_equals_recompute_nf4),
        cmocka_unit_test(batch_equals_single_runs),
        cmocka_unit_test(thread_count_does_not_change_bits),
        cmocka_unit_test(quantized_head_changes_logits),
        cmocka_unit_test(phase_hooks_bracket_each_phase),
        cmocka_unit_test(bad_calls_fail_with_a_message),
        cmocka_unit_test(device_ready_by_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
