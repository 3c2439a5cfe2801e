/* test_cuda_model.c — the CUDA backend end to end against the CPU backend.
 *
 * - synthetic `tiny` and `small` in fp16 against the CPU backend (fp16 weights, fp32
 *   activations): `small` at batch 1 matches 33 free-running greedy steps; at batch 1, 4 and 12
 *   teacher-forced steps agree except near-ties (|Δ CPU logit| <= 0.02); prefill logits agree
 *   within 2% of the largest logit magnitude (16-bit activations on the GPU, fp32 on the CPU);
 * - bf16 on `tiny`: the same with ties up to 0.1 and logits within 5% (8 significant bits);
 * - graph replay vs plain launches: identical tokens (the same kernels in the same order);
 * - the decode op (tokens fed on the device) vs one forward call per step: identical tokens;
 * - stories260K (a real llama2.c v0 checkpoint, interleaved rope, hidden 172 → padded): fp16
 *   greedy tokens against the CPU backend's fp32 tokens (which reproduce the golden text);
 *   matched prefix printed, at least 200 of 255 required; the same in fp8 against the CPU's
 *   fp8 (its 64-wide rows launch the batch-1 norms that fp8 carries elsewhere);
 * - the reference kernel family (fp16: one cuBLAS GEMM per linear, no graph) the same way;
 * - int8 and int8-mixed (on `small` with injected outlier dims) in both kernel families against
 *   the CPU backend's int8 formats, teacher-forced, with a wider tie (0.15) and logit tolerance
 *   (6%): the GPU quantizes fp16 activations where the CPU quantizes fp32 ones, so about one
 *   code in 16 can round the other way (127 · 2⁻¹¹ ≈ 0.06 of a code step) — int8's own error
 *   (half a code step everywhere) is larger still;
 * - the int8-mixed outlier-column counts per layer and linear input after one prefill: the two
 *   backends count the same columns except where an activation sits within fp16 rounding of the
 *   threshold (per entry within 1 column + 2%; how many entries are identical is printed);
 * - nf4, nf4-dq and fp8 on `small` in both kernel families against the CPU backend's formats
 *   (the same bytes: each tensor quantized by the CPU code), teacher-forced with a 0.15 tie and
 *   at most 10% of the steps beyond it, and the prefill KL between the backends at most half
 *   the format's own (CPU format vs float32): the GPU rounds activations to fp16 and the
 *   reference family's GEMM also the dequantized weights;
 * - an unsupported precision (f32) and an oversized KV cache fail with clear messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ecocompute/engine.h"
#include "engine/cuda/cuda_backend.h"
#include "engine/cuda/gpu_test.h"
#include "test_data.h"

#include <math.h>
#include <string.h>

static ec_backend *open_backend_k(const char *device, const ec_model *m, ec_precision p,
                                  ec_kernels kernels, int max_batch, int max_seq)
{
    ec_load_options o;
    ec_load_options_default(&o);
    o.precision = p;
    o.kernels = kernels;
    o.max_batch = max_batch;
    o.max_seq = max_seq;
    ec_backend *b;
    int rc = ec_backend_create(&b, device);
    if (rc != 0) fail_msg("create %s: %s", device, ec_last_error());
    if (b->ops->load(b, m, &o) != 0) fail_msg("load on %s: %s", device, ec_last_error());
    return b;
}

static ec_backend *open_backend(const char *device, const ec_model *m, ec_precision p, int max_batch,
                                int max_seq)
{
    return open_backend_k(device, m, p, EC_KERNELS_FUSED, max_batch, max_seq);
}

/* outliers > 0: synthetic weights with that many outlier hidden dims of magnitude 40 (as
 * `--outliers K:40`), which every layer's int8-mixed inputs then carry. */
static ec_model *open_model_outliers(const char *name, int outliers)
{
    ec_model *m;
    ec_model_options o;
    ec_model_options_default(&o);
    if (outliers > 0) {
        o.outliers = outliers;
        o.outlier_mag = 40.0f;
    }
    if (ec_model_open(&m, name, &o) != 0) fail_msg("open %s: %s", name, ec_last_error());
    return m;
}

static ec_model *open_model(const char *name) { return open_model_outliers(name, 0); }

/* Greedy tokens [batch][gen] of a backend for the synthetic prompt of (seed 7). */
static int *generate(ec_backend *b, const ec_model_config *c, int batch, int prompt_len, int gen)
{
    int *prompts = malloc((size_t)batch * prompt_len * sizeof(int));
    int *out = malloc((size_t)batch * gen * sizeof(int));
    ec_prompt_synthetic(7, c->vocab_size, batch, prompt_len, prompts);
    if (ec_generate(b, prompts, batch, prompt_len, gen, out, NULL, NULL) != 0)
        fail_msg("generate on %s: %s", b->ops->name, ec_last_error());
    free(prompts);
    return out;
}

static int first_mismatch(const int *a, const int *b, int n)
{
    for (int i = 0; i < n; i++)
        if (a[i] != b[i]) return i;
    return n;
}

/* Largest |gpu - cpu| of the prefill logits over the largest |cpu|. */
static double logits_gap(ec_backend *cpu, ec_backend *gpu, const ec_model_config *c, int batch,
                         int prompt_len)
{
    int *prompts = malloc((size_t)batch * prompt_len * sizeof(int)), next[16];
    size_t nl = (size_t)batch * c->vocab_size;
    float *lc = malloc(nl * 4), *lg = malloc(nl * 4);
    ec_prompt_synthetic(11, c->vocab_size, batch, prompt_len, prompts);
    if (cpu->ops->forward(cpu, prompts, batch, prompt_len, 0, next, lc) != 0 ||
        gpu->ops->forward(gpu, prompts, batch, prompt_len, 0, next, lg) != 0)
        fail_msg("forward: %s", ec_last_error());
    double gap = 0, mag = 0;
    for (size_t i = 0; i < nl; i++) {
        if (!(fabs(lg[i] - lc[i]) <= gap)) gap = isnan(lg[i]) ? INFINITY : fabs(lg[i] - lc[i]);
        if (fabs(lc[i]) > mag) mag = fabs(lc[i]);
    }
    free(prompts);
    free(lc);
    free(lg);
    return gap / mag;
}

/* Teacher-forced greedy agreement: both backends are fed the CPU's tokens for `steps` steps and
 * their argmax compared at every step and sequence. The GPU rounds activations and the KV cache
 * to 16 bits where the CPU keeps fp32, so a differing argmax is acceptable only as a near-tie:
 * the CPU's own logit for the GPU's pick must be within tie_tol of the CPU's best. Returns the
 * number of disagreements; *worst gets the largest CPU-side gap among them. */
static int forced_disagreements(ec_backend *cpu, ec_backend *gpu, const ec_model_config *c,
                                int batch, int prompt_len, int steps, double tie_tol,
                                double *worst)
{
    int *tok = malloc((size_t)batch * prompt_len * sizeof(int)), nc[16], ng[16], bad = 0;
    size_t nl = (size_t)batch * c->vocab_size;
    float *lc = malloc(nl * 4), *lg = malloc(nl * 4);
    ec_prompt_synthetic(7, c->vocab_size, batch, prompt_len, tok);
    *worst = 0;
    for (int step = 0; step < steps; step++) {
        int n = step == 0 ? prompt_len : 1, pos = step == 0 ? 0 : prompt_len + step - 1;
        if (cpu->ops->forward(cpu, tok, batch, n, pos, nc, lc) != 0 ||
            gpu->ops->forward(gpu, tok, batch, n, pos, ng, lg) != 0)
            fail_msg("forward at step %d: %s", step, ec_last_error());
        for (int b = 0; b < batch; b++) {
            if (nc[b] == ng[b]) continue;
            const float *l = lc + (size_t)b * c->vocab_size;
            double gap = (double)l[nc[b]] - l[ng[b]];
            printf("  step %d sequence %d: cpu %d, cuda %d; cpu logits %.5f vs %.5f (gap %.5f)\n",
                   step, b, nc[b], ng[b], l[nc[b]], l[ng[b]], gap);
            if (gap > *worst) *worst = gap;
            if (gap > tie_tol) bad++;
        }
        memcpy(tok, nc, (size_t)batch * sizeof(int)); /* next input: the CPU's tokens */
    }
    free(tok);
    free(lc);
    free(lg);
    return bad;
}

/* Mean KL(softmax(a) || softmax(b)) of two backends' prefill logits (batch 4, seed 11). */
static double prefill_kl(ec_backend *a, ec_backend *b, const ec_model_config *c, int prompt_len)
{
    enum { BATCH = 4 };
    int *prompts = malloc((size_t)BATCH * prompt_len * sizeof(int)), next[BATCH];
    size_t nl = (size_t)BATCH * c->vocab_size;
    float *la = malloc(nl * 4), *lb = malloc(nl * 4);
    ec_prompt_synthetic(11, c->vocab_size, BATCH, prompt_len, prompts);
    if (a->ops->forward(a, prompts, BATCH, prompt_len, 0, next, la) != 0 ||
        b->ops->forward(b, prompts, BATCH, prompt_len, 0, next, lb) != 0)
        fail_msg("forward: %s", ec_last_error());
    double kl = 0;
    for (int i = 0; i < BATCH; i++)
        kl += ec_logits_kl(la + (size_t)i * c->vocab_size, lb + (size_t)i * c->vocab_size,
                           c->vocab_size) / BATCH;
    free(prompts);
    free(la);
    free(lb);
    return kl;
}

/* Free-running greedy tokens of both backends (reported; at batch 1 on `small` the first
 * require_free steps must match) and teacher-forced agreement (asserted: only near-ties may
 * differ) at batch 1, 4 and 12 (12 exercises the cuBLAS decode path, and its 192-row prefill
 * the packed formats' dequantize + cuBLAS path of the fused family). */
static void compare_family_with_cpu(const char *name, int outliers, ec_precision p,
                                    ec_kernels kernels, double logit_tol, int require_free,
                                    double tie_tol, double max_bad_frac)
{
    ec_model *m = open_model_outliers(name, outliers);
    const ec_model_config *c = ec_model_config_of(m);
    int prompt_len = 16, gen = 33, max_seq = prompt_len + gen;
    ec_backend *cpu = open_backend("cpu", m, p, 12, max_seq);
    ec_backend *gpu = open_backend_k("cuda", m, p, kernels, 12, max_seq);
    printf("%s %s, %s kernels:\n", name, ec_precision_name(p), ec_kernels_name(kernels));
    static const int batches[] = {1, 4, 12};
    for (int i = 0; i < 3; i++) {
        int batch = batches[i];
        int *tc = generate(cpu, c, batch, prompt_len, gen), *tg = generate(gpu, c, batch, prompt_len, gen);
        int same = first_mismatch(tc, tg, batch * gen);
        printf("%s %s batch %d free-running: first %d of %d tokens equal to the CPU backend's\n",
               name, ec_precision_name(p), batch, same, batch * gen);
        if (batch == 1 && same < require_free)
            fail_msg("%s batch 1: step %d differs: cpu %d, cuda %d (need %d equal steps)", name,
                     same, tc[same], tg[same], require_free);
        free(tc);
        free(tg);
        double worst;
        int bad = forced_disagreements(cpu, gpu, c, batch, prompt_len, gen, tie_tol, &worst);
        printf("%s %s batch %d teacher-forced: %d of %d steps disagree beyond a %.3f logit tie "
               "(largest gap %.5f; at most %.0f%% allowed)\n", name, ec_precision_name(p), batch,
               bad, batch * gen, tie_tol, worst, 100 * max_bad_frac);
        assert_true(bad <= max_bad_frac * batch * gen);
    }
    if (p == EC_PREC_INT8 || p == EC_PREC_INT8_MIXED || p == EC_PREC_NF4 || p == EC_PREC_NF4_DQ ||
        p == EC_PREC_FP8) {
        /* Codes that differ in the last bit move int8 logits by whole steps, so the bound is
         * the format's own error: GPU vs CPU must stay well below CPU format vs float32. (The
         * weight-only formats decode identical bytes; their error is the 16-bit activations.) */
        ec_backend *f32 = open_backend("cpu", m, EC_PREC_F32, 12, max_seq);
        double impl = prefill_kl(cpu, gpu, c, prompt_len), fmt = prefill_kl(f32, cpu, c, prompt_len);
        printf("%s %s prefill KL: cuda vs cpu %.3g nats, cpu vs float32 %.3g nats\n", name,
               ec_precision_name(p), impl, fmt);
        assert_true(impl <= 0.5 * fmt);
        ec_backend_destroy(f32);
    } else {
        double gap = logits_gap(cpu, gpu, c, 4, prompt_len);
        printf("%s %s prefill logits: max gap %.4f of the largest logit (tolerance %.2f)\n", name,
               ec_precision_name(p), gap, logit_tol);
        assert_true(gap <= logit_tol);
    }
    ec_backend_destroy(cpu);
    ec_backend_destroy(gpu);
    ec_model_close(m);
}

static void compare_with_cpu(const char *name, ec_precision p, double logit_tol, int require_free,
                             double tie_tol)
{
    compare_family_with_cpu(name, 0, p, EC_KERNELS_FUSED, logit_tol, require_free, tie_tol, 0);
}

/* fp16 keeps 11 significant bits: logits of a few units carry ~1e-3 rounding per activation, so
 * 0.02 absolute is a tie at these model sizes; bf16 (8 bits) gets 0.1. */
static void test_tiny_fp16(void **state) { (void)state; compare_with_cpu("tiny", EC_PREC_FP16, 0.02, 0, 0.02); }
static void test_small_fp16(void **state) { (void)state; compare_with_cpu("small", EC_PREC_FP16, 0.02, 33, 0.02); }
/* Where the code that runs lacks bf16 (sm_75, or a compute_75 build on any GPU), the load is
 * refused with one line naming the GPU, its compute capability and what bf16 needs. */
static void test_tiny_bf16(void **state)
{
    (void)state;
    if (gpu_test_dtypes() > 1) {
        compare_with_cpu("tiny", EC_PREC_BF16, 0.05, 0, 0.1);
        return;
    }
    ec_model *m = open_model("tiny");
    ec_load_options o;
    ec_load_options_default(&o);
    o.precision = EC_PREC_BF16;
    ec_backend *b;
    assert_int_equal(ec_cuda_backend_create(&b, 0), 0);
    assert_int_equal(b->ops->load(b, m, &o), -1);
    printf("bf16 load without sm_80 code: %s\n", ec_last_error());
    assert_non_null(strstr(ec_last_error(), "compute capability"));
    assert_non_null(strstr(ec_last_error(), "precision bf16 needs bf16 arithmetic"));
    ec_backend_destroy(b);
    ec_model_close(m);
}

static void test_small_fp16_reference(void **state)
{
    (void)state;
    compare_family_with_cpu("small", 0, EC_PREC_FP16, EC_KERNELS_REFERENCE, 0.02, 33, 0.02, 0);
}

/* `small` with 4 injected outlier dims (synthetic "outlier features"), so int8-mixed takes its
 * 16-bit path in every layer. */
static void test_small_int8(void **state)
{
    (void)state;
    for (int k = 0; k < 2; k++) {
        ec_kernels kernels = k ? EC_KERNELS_REFERENCE : EC_KERNELS_FUSED;
        /* int8 rounds to 255 levels: a last-bit difference in an activation (GPU and CPU sum
         * in different orders) can move a code by one and a logit by ~0.1 at this size, so a
         * few teacher-forced steps may differ beyond a tie (eval shows the KL is the CPU's). */
        compare_family_with_cpu("small", 4, EC_PREC_INT8, kernels, 0.06, 0, 0.15, 0.1);
        compare_family_with_cpu("small", 4, EC_PREC_INT8_MIXED, kernels, 0.06, 0, 0.15, 0.1);
    }
}

/* The weight-only formats on `small` (no injected outliers: nothing here depends on them). */
static void test_small_nf4_fp8(void **state)
{
    (void)state;
    static const ec_precision formats[] = {EC_PREC_NF4, EC_PREC_NF4_DQ, EC_PREC_FP8};
    for (int k = 0; k < 2; k++) {
        ec_kernels kernels = k ? EC_KERNELS_REFERENCE : EC_KERNELS_FUSED;
        for (int f = 0; f < 3; f++)
            compare_family_with_cpu("small", 0, formats[f], kernels, 0.06, 0, 0.15, 0.1);
    }
}

/* A prefill longer than one chunk (the backend takes up to 8192 token rows per chunk, see
 * cuda_backend.c): 3 sequences of 3000 positions run as chunks of 2730 and 270 positions (more
 * on a device short of memory), each attending to the cache the ones before wrote; of 2731
 * positions, as 2730 and a last chunk of one position, which runs the decode attention. A wrong
 * position or cache offset past the first chunk moves the logits by whole units. */
static void test_prefill_in_chunks(void **state)
{
    (void)state;
    ec_model *m = open_model("tiny");
    const ec_model_config *c = ec_model_config_of(m);
    int batch = 3;
    static const int lens[] = {3000, 2731};
    static const ec_precision formats[] = {EC_PREC_FP16, EC_PREC_NF4};
    static const double tolerance[] = {0.02, 0.06};
    for (int i = 0; i < 2; i++)
        for (int f = 0; f < 2; f++) {
            int len = lens[i];
            ec_backend *cpu = open_backend("cpu", m, formats[f], batch, len);
            ec_backend *gpu = open_backend("cuda", m, formats[f], batch, len);
            double gap = logits_gap(cpu, gpu, c, batch, len);
            printf("tiny %s, %d x %d-token prefill: max logit gap %.4f of the largest (tolerance "
                   "%.2f)\n", ec_precision_name(formats[f]), batch, len, gap, tolerance[f]);
            assert_true(gap <= tolerance[f]);
            ec_backend_destroy(cpu);
            ec_backend_destroy(gpu);
        }
    ec_model_close(m);
}

/* Outlier-column statistics of one prefill (batch 4 x 16 tokens) on both backends. */
static void test_outlier_counts(void **state)
{
    (void)state;
    ec_model *m = open_model_outliers("small", 4);
    const ec_model_config *c = ec_model_config_of(m);
    int batch = 4, len = 16, next[4], *prompts = malloc((size_t)batch * len * sizeof(int));
    size_t n = (size_t)c->n_layers * EC_LINEAR_INPUTS;
    double *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
    ec_prompt_synthetic(3, c->vocab_size, batch, len, prompts);
    ec_backend *cpu = open_backend("cpu", m, EC_PREC_INT8_MIXED, batch, len);
    if (cpu->ops->forward(cpu, prompts, batch, len, 0, next, NULL) != 0 ||
        cpu->ops->outlier_stats(cpu, want) != 0)
        fail_msg("cpu: %s", ec_last_error());
    for (int k = 0; k < 2; k++) {
        ec_kernels kernels = k ? EC_KERNELS_REFERENCE : EC_KERNELS_FUSED;
        ec_backend *gpu = open_backend_k("cuda", m, EC_PREC_INT8_MIXED, kernels, batch, len);
        if (gpu->ops->forward(gpu, prompts, batch, len, 0, next, NULL) != 0 ||
            gpu->ops->outlier_stats(gpu, got) != 0)
            fail_msg("cuda: %s", ec_last_error());
        int same = 0, bad = 0;
        double total_cpu = 0, total_gpu = 0;
        for (size_t i = 0; i < n; i++) {
            same += got[i] == want[i];
            total_cpu += want[i];
            total_gpu += got[i];
            if (fabs(got[i] - want[i]) > 1.0 + 0.02 * want[i]) {
                printf("  layer %zu %s: cpu %.2f, cuda %.2f outlier columns\n", i / EC_LINEAR_INPUTS,
                       ec_linear_input_name((ec_linear_input)(i % EC_LINEAR_INPUTS)), want[i], got[i]);
                bad++;
            }
        }
        printf("outlier columns (%s kernels): %d of %zu layer inputs identical; total cpu %.1f, "
               "cuda %.1f\n", ec_kernels_name(kernels), same, n, total_cpu, total_gpu);
        assert_true(total_cpu > 0); /* the injected outlier dims do cross the threshold */
        assert_int_equal(bad, 0);
        ec_backend_destroy(gpu);
    }
    ec_backend_destroy(cpu);
    free(prompts);
    free(want);
    free(got);
    ec_model_close(m);
}

static void test_graph_matches_plain_launches(void **state)
{
    (void)state;
    ec_model *m = open_model("small");
    const ec_model_config *c = ec_model_config_of(m);
    ec_backend *graph = open_backend("cuda", m, EC_PREC_FP16, 12, 64);
    ec_backend *plain = open_backend("cuda", m, EC_PREC_FP16, 12, 64);
    ec_cuda_backend_set_graphs(plain, 0);
    /* 4 → 12 → 1: the graph is re-captured whenever the batch changes. */
    static const int batches[] = {4, 12, 1};
    for (int i = 0; i < 3; i++) {
        int *a = generate(graph, c, batches[i], 8, 40), *b = generate(plain, c, batches[i], 8, 40);
        assert_int_equal(first_mismatch(a, b, batches[i] * 40), batches[i] * 40);
        free(a);
        free(b);
    }
    ec_backend_destroy(graph);
    ec_backend_destroy(plain);
    ec_model_close(m);
}

/* ops->decode (each step's token fed on the device, the steps launched back to back) against
 * ec_decode_stepwise (each token back on the host before the next step): identical tokens in
 * fp16 and int8, with the graph and with plain launches, at batch 4, 12 and 1; a bad input
 * token is refused. */
static void test_decode_matches_stepwise(void **state)
{
    (void)state;
    enum { PROMPT = 8, GEN = 40, MAX_BATCH = 12 };
    ec_model *m = open_model("small");
    const ec_model_config *c = ec_model_config_of(m);
    static const ec_precision precs[] = {EC_PREC_FP16, EC_PREC_INT8};
    static const int batches[] = {4, 12, 1};
    int prompts[MAX_BATCH * PROMPT], stepwise[MAX_BATCH * GEN], next[MAX_BATCH];
    for (int pi = 0; pi < 2; pi++)
        for (int graphs = 1; graphs >= 0; graphs--) {
            ec_backend *gpu = open_backend("cuda", m, precs[pi], MAX_BATCH, PROMPT + GEN);
            ec_cuda_backend_set_graphs(gpu, graphs);
            for (int i = 0; i < 3; i++) {
                int batch = batches[i];
                int *fed = generate(gpu, c, batch, PROMPT, GEN);
                ec_prompt_synthetic(7, c->vocab_size, batch, PROMPT, prompts);
                if (gpu->ops->forward(gpu, prompts, batch, PROMPT, 0, next, NULL) != 0)
                    fail_msg("prefill: %s", ec_last_error());
                for (int b = 0; b < batch; b++)
                    stepwise[b * GEN] = next[b];
                if (ec_decode_stepwise(gpu, stepwise, GEN, batch, PROMPT, GEN - 1) != 0)
                    fail_msg("stepwise decode: %s", ec_last_error());
                int same = first_mismatch(fed, stepwise, batch * GEN);
                if (same != batch * GEN)
                    fail_msg("%s, graphs %d, batch %d: token %d fed on the device %d, stepwise %d",
                             ec_precision_name(precs[pi]), graphs, batch, same, fed[same],
                             stepwise[same]);
                free(fed);
            }
            stepwise[0] = c->vocab_size;
            assert_int_equal(gpu->ops->decode(gpu, stepwise, GEN, 1, PROMPT, 4), -1);
            assert_non_null(strstr(ec_last_error(), "outside the vocabulary"));
            ec_backend_destroy(gpu);
        }
    ec_model_close(m);
}

static ec_model *open_stories260k(void)
{
    char path[4096];
    return open_model(test_data_path(path, sizeof path, "models/stories260K.bin"));
}

/* m's greedy tokens got [255] on the GPU in precision `prec` against the CPU backend in
 * `cpu_prec`, from BOS over 255 steps (llama2.c's run; prompt length 1 is a decode-only run):
 * the matched prefix, at least `least` tokens. Returns the GPU backend. */
static ec_backend *greedy_against_cpu(ec_model *m, ec_precision cpu_prec, ec_precision prec,
                                      int least, int got[255])
{
    int bos = 1, gen = 255, ref[255];
    ec_backend *cpu = open_backend("cpu", m, cpu_prec, 1, 256);
    ec_backend *gpu = open_backend("cuda", m, prec, 1, 256);
    if (ec_generate(cpu, &bos, 1, 1, gen, ref, NULL, NULL) != 0 ||
        ec_generate(gpu, &bos, 1, 1, gen, got, NULL, NULL) != 0)
        fail_msg("generate: %s", ec_last_error());
    int same = first_mismatch(ref, got, gen);
    printf("stories260K %s on CUDA: %d of %d greedy tokens match the CPU's %s\n",
           ec_precision_name(prec), same, gen, ec_precision_name(cpu_prec));
    assert_true(same >= least);
    ec_backend_destroy(cpu);
    return gpu;
}

static void test_stories260k(void **state)
{
    (void)state;
    ec_model *m = open_stories260k();
    int got[255];
    ec_backend *gpu = greedy_against_cpu(m, EC_PREC_F32, EC_PREC_FP16, 200, got);
    /* The same prompt as a 2-token prefill (BOS + first token) must continue identically. */
    int two[2] = {1, got[0]}, next;
    if (gpu->ops->forward(gpu, two, 1, 2, 0, &next, NULL) != 0) fail_msg("%s", ec_last_error());
    assert_int_equal(next, got[1]);
    ec_backend_destroy(gpu);
    ec_model_close(m);
}

/* fp8 at batch 1 on a 64-wide model: its norms are launched, not carried, since the carried
 * norm's consumer reads whole 128-column chunks of its staged row (it read past a
 * 64-column row, an illegal address). All 255 tokens matched there; 200 as for fp16. */
static void test_stories260k_fp8(void **state)
{
    (void)state;
    ec_model *m = open_stories260k();
    int got[255];
    ec_backend_destroy(greedy_against_cpu(m, EC_PREC_FP8, EC_PREC_FP8, 200, got));
    ec_model_close(m);
}

static void test_clear_errors(void **state)
{
    (void)state;
    ec_model *m = open_model("tiny");
    ec_load_options o;
    ec_load_options_default(&o);
    ec_backend *b;
    assert_int_equal(ec_cuda_backend_create(&b, 0), 0);
    o.precision = EC_PREC_F32;
    assert_int_equal(b->ops->load(b, m, &o), -1);
    printf("f32 load: %s\n", ec_last_error());
    assert_non_null(strstr(ec_last_error(), "precision f32 is not supported by the CUDA backend"));
    o.precision = EC_PREC_FP16;
    o.max_batch = 1 << 20; /* a KV cache of ~ 2 TB */
    o.max_seq = 4096;
    assert_int_equal(b->ops->load(b, m, &o), -1);
    printf("oversized load: %s\n", ec_last_error());
    assert_non_null(strstr(ec_last_error(), "does not fit"));
    ec_backend_destroy(b);
    ec_model_close(m);
}

int main(void)
{
    gpu_test_require_device();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiny_fp16),
        cmocka_unit_test(test_small_fp16),
        cmocka_unit_test(test_tiny_bf16),
        cmocka_unit_test(test_small_fp16_reference),
        cmocka_unit_test(test_small_int8),
        cmocka_unit_test(test_small_nf4_fp8),
        cmocka_unit_test(test_prefill_in_chunks),
        cmocka_unit_test(test_outlier_counts),
        cmocka_unit_test(test_graph_matches_plain_launches),
        cmocka_unit_test(test_decode_matches_stepwise),
        cmocka_unit_test(test_stories260k),
        cmocka_unit_test(test_stories260k_fp8),
        cmocka_unit_test(test_clear_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
