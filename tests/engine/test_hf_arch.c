/* test_hf_arch.c — Hugging Face checkpoints of every architecture the seeds measured, through the
 * CPU engine in float32:
 *   - each layout, written here with random weights (Llama-2 MHA, Llama-3 GQA, Llama-3.1 llama3
 *     rope scaling, linear rope scaling, Mistral sharded, Qwen2 biases + tied head, Phi-3 fused
 *     qkv_proj / gate_up_proj, Yi theta), against an independent double-precision forward pass
 *     written from the same weights (HF semantics: rotate-half rotary, GQA, q/k/v biases);
 *   - the fused, sharded, tied and (zero-)biased layouts against the plain Llama layout written
 *     from the same weights: the same logits bit for bit;
 *   - rope frequencies of llama3 and linear scaling against their closed form;
 *   - tests/data/hf-tiny/ (tiny models saved and run by transformers, make_goldens.py) when
 *     present: logits within 1e-3 and the greedy continuation;
 *   - the 260K TinyStories model converted to the HF layout (wq/wk rows permuted to rotate-half)
 *     writes llama2.c's greedy text byte for byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine/cpu/cpu_ops.h"
#include "engine/engine_test_util.h"
#include "ecocompute/tokenizer.h"
#include "model/st_writer.h"
#include "test_data.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { N_TOK = 12 };
static const int tokens[N_TOK] = {1, 7, 33, 2, 19, 5, 39, 0, 12, 25, 8, 30};

/* dim 32, hidden 48, 2 layers, 4 heads of 8, 2 KV heads, vocab 40, 64 positions. */
static const ec_model_config base = {"hf-arch", 32, 48, 2, 4, 2, 8, 40, 64, 1e-5f, 1e4f,
                                     0, 0, 0, 0, 0, 0, 0, 0};

/* ---- random weights: a pure function of (seed, kind, layer, i) ---- */
static const ec_model_config *g_cfg;
static uint64_t g_seed = 7;

static int is_norm(ec_tensor_kind k)
{
    return k == EC_T_ATTN_NORM || k == EC_T_FFN_NORM || k == EC_T_FINAL_NORM;
}

static int is_bias(ec_tensor_kind k)
{
    return k == EC_T_BQ || k == EC_T_BK || k == EC_T_BV;
}

/* Norm gains 1 ± 0.25, biases ± 0.5, matrices of std 1/sqrt(in): logits of std ~1. */
static float rnd_value(ec_tensor_kind k, int layer, uint64_t i)
{
    float z = ec_synth_normal(g_seed, k, layer, i);
    if (is_norm(k)) return 1.0f + 0.25f * z;
    if (is_bias(k)) return 0.5f * z;
    int rows, cols;
    ec_tensor_shape(g_cfg, k, &rows, &cols);
    return z / sqrtf((float)cols);
}

/* The untied twin of a tied model: the head is the embedding. */
static float head_is_embedding(ec_tensor_kind k, int layer, uint64_t i)
{
    return rnd_value(k == EC_T_LM_HEAD ? EC_T_TOK_EMB : k, layer, i);
}

/* Qwen2's layout with zero biases: the plain Llama model. */
static float zero_biases(ec_tensor_kind k, int layer, uint64_t i)
{
    return is_bias(k) ? 0.0f : head_is_embedding(k, layer, i);
}

/* ---- the reference forward pass, double precision ---- */
static double ref_inv_freq(const ec_model_config *c, int j)
{
    double inv = pow(c->rope_theta, -2.0 * j / c->head_dim);
    if (c->rope_scaling == EC_ROPE_SCALING_LINEAR) return inv / c->rope_scaling_factor;
    if (c->rope_scaling != EC_ROPE_SCALING_LLAMA3) return inv;
    double old = c->rope_original_max_pos, wavelen = 2 * 3.14159265358979323846 / inv;
    double lo = c->rope_low_freq_factor, hi = c->rope_high_freq_factor;
    if (wavelen < old / hi) return inv;
    if (wavelen > old / lo) return inv / c->rope_scaling_factor;
    double smooth = (old / wavelen - lo) / (hi - lo);
    return (1 - smooth) * inv / c->rope_scaling_factor + smooth * inv;
}

static void ref_matvec(const ec_model_config *c, stw_value_fn w, ec_tensor_kind k, int layer,
                       const double *x, double *out)
{
    int rows, cols;
    ec_tensor_shape(c, k, &rows, &cols);
    for (int r = 0; r < rows; r++) {
        double s = 0;
        for (int i = 0; i < cols; i++) s += w(k, layer, (uint64_t)r * cols + i) * x[i];
        out[r] = s;
    }
}

static void ref_rmsnorm(const ec_model_config *c, stw_value_fn w, ec_tensor_kind k, int layer,
                        const double *x, double *out)
{
    double ss = 0;
    for (int i = 0; i < c->dim; i++) ss += x[i] * x[i];
    double inv = 1 / sqrt(ss / c->dim + c->norm_eps);
    for (int i = 0; i < c->dim; i++) out[i] = x[i] * inv * w(k, layer, i);
}

/* Rotate-half rotary embedding of n heads at position pos. */
static void ref_rope(const ec_model_config *c, double *v, int n, int pos)
{
    int half = c->head_dim / 2;
    for (int h = 0; h < n; h++)
        for (int j = 0; j < half; j++) {
            double a = v[h * c->head_dim + j], b = v[h * c->head_dim + j + half];
            double ang = pos * ref_inv_freq(c, j);
            v[h * c->head_dim + j] = a * cos(ang) - b * sin(ang);
            v[h * c->head_dim + j + half] = a * sin(ang) + b * cos(ang);
        }
}

/* logits [n][vocab] of every position of toks. */
static void ref_forward(const ec_model_config *c, stw_value_fn w, const int *toks, int n,
                        double *logits)
{
    int d = c->dim, hd = c->head_dim, qd = c->n_heads * hd, kvd = c->n_kv_heads * hd;
    int group = c->n_heads / c->n_kv_heads;
    double *x = calloc((size_t)d, sizeof *x), *h = calloc((size_t)d, sizeof *h);
    double *q = calloc((size_t)qd, sizeof *q), *att = calloc((size_t)qd, sizeof *att);
    double *kc = calloc((size_t)c->n_layers * n * kvd, sizeof *kc);
    double *vc = calloc((size_t)c->n_layers * n * kvd, sizeof *vc);
    double *g = calloc((size_t)c->hidden_dim, sizeof *g);
    double *u = calloc((size_t)c->hidden_dim, sizeof *u);
    double *o = calloc((size_t)d, sizeof *o), *p = calloc((size_t)n, sizeof *p);
    for (int t = 0; t < n; t++) {
        for (int i = 0; i < d; i++) x[i] = w(EC_T_TOK_EMB, 0, (uint64_t)toks[t] * d + i);
        for (int l = 0; l < c->n_layers; l++) {
            double *k = kc + ((size_t)l * n + t) * kvd, *v = vc + ((size_t)l * n + t) * kvd;
            ref_rmsnorm(c, w, EC_T_ATTN_NORM, l, x, h);
            ref_matvec(c, w, EC_T_WQ, l, h, q);
            ref_matvec(c, w, EC_T_WK, l, h, k);
            ref_matvec(c, w, EC_T_WV, l, h, v);
            if (c->qkv_bias) {
                for (int i = 0; i < qd; i++) q[i] += w(EC_T_BQ, l, i);
                for (int i = 0; i < kvd; i++) k[i] += w(EC_T_BK, l, i), v[i] += w(EC_T_BV, l, i);
            }
            ref_rope(c, q, c->n_heads, t);
            ref_rope(c, k, c->n_kv_heads, t);
            for (int hh = 0; hh < c->n_heads; hh++) {
                const double *qh = q + hh * hd;
                size_t off = (size_t)(hh / group) * hd;
                double max = -INFINITY, sum = 0;
                for (int s = 0; s <= t; s++) {
                    const double *ks = kc + ((size_t)l * n + s) * kvd + off;
                    double dot = 0;
                    for (int i = 0; i < hd; i++) dot += qh[i] * ks[i];
                    p[s] = dot / sqrt(hd);
                    max = fmax(max, p[s]);
                }
                for (int s = 0; s <= t; s++) sum += p[s] = exp(p[s] - max);
                for (int i = 0; i < hd; i++) {
                    double a = 0;
                    for (int s = 0; s <= t; s++)
                        a += p[s] * vc[((size_t)l * n + s) * kvd + off + i];
                    att[hh * hd + i] = a / sum;
                }
            }
            ref_matvec(c, w, EC_T_WO, l, att, o);
            for (int i = 0; i < d; i++) x[i] += o[i];
            ref_rmsnorm(c, w, EC_T_FFN_NORM, l, x, h);
            ref_matvec(c, w, EC_T_W_GATE, l, h, g);
            ref_matvec(c, w, EC_T_W_UP, l, h, u);
            for (int i = 0; i < c->hidden_dim; i++) g[i] = g[i] / (1 + exp(-g[i])) * u[i];
            ref_matvec(c, w, EC_T_W_DOWN, l, g, o);
            for (int i = 0; i < d; i++) x[i] += o[i];
        }
        ref_rmsnorm(c, w, EC_T_FINAL_NORM, 0, x, h);
        ref_matvec(c, w, c->tied_embeddings ? EC_T_TOK_EMB : EC_T_LM_HEAD, 0, h,
                   logits + (size_t)t * c->vocab_size);
    }
    free(x), free(h), free(q), free(att), free(kc), free(vc), free(g), free(u), free(o), free(p);
}

/* ---- the engine ---- */
static char dir[64];

static void make_dir(void)
{
    strcpy(dir, "/tmp/ec_hfa_XXXXXX");
    assert_non_null(mkdtemp(dir));
}

static void remove_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* Engine logits [n][vocab] of the model in `path`, one position per forward call; the prefill
 * of all n positions must give the last row's logits too. */
static float *engine_logits(const char *path, const int *toks, int n)
{
    ec_model *m = test_open_model(path, 0);
    int vocab = ec_model_config_of(m)->vocab_size, next;
    float *out = malloc((size_t)(n + 1) * vocab * sizeof *out);
    ec_backend *b = test_load(m, EC_PREC_F32, 1, n, 1);
    for (int t = 0; t < n; t++)
        assert_int_equal(b->ops->forward(b, toks + t, 1, 1, t, &next, out + (size_t)t * vocab), 0);
    assert_int_equal(b->ops->forward(b, toks, 1, n, 0, &next, out + (size_t)n * vocab), 0);
    for (int i = 0; i < vocab; i++)
        if (fabsf(out[(size_t)n * vocab + i] - out[(size_t)(n - 1) * vocab + i]) > 1e-5f)
            fail_msg("%s: prefill logit %d is %g, stepwise %g", path, i,
                     out[(size_t)n * vocab + i], out[(size_t)(n - 1) * vocab + i]);
    ec_backend_destroy(b);
    ec_model_close(m);
    return out;
}

typedef struct {
    const char *what, *model_type;
    int flags;     /* STW_FUSED, STW_SHARDED */
    int n_kv_heads, qkv_bias, tied;
    ec_rope_scaling rope;
    float theta;
    stw_value_fn twin; /* the plain Llama layout of the same model, NULL when there is none */
} arch_case;

static const arch_case archs[] = {
    {"Llama-2 (MHA)", "llama", 0, 4, 0, 0, EC_ROPE_SCALING_NONE, 1e4f, NULL},
    {"Llama-3 (GQA, theta 5e5)", "llama", 0, 2, 0, 0, EC_ROPE_SCALING_NONE, 5e5f, NULL},
    {"Llama-3.1 (llama3 rope scaling)", "llama", 0, 2, 0, 0, EC_ROPE_SCALING_LLAMA3, 1e4f, NULL},
    {"linear rope scaling", "llama", 0, 2, 0, 0, EC_ROPE_SCALING_LINEAR, 1e4f, NULL},
    {"Yi (llama layout, theta 5e6)", "llama", 0, 2, 0, 0, EC_ROPE_SCALING_NONE, 5e6f, NULL},
    {"Mistral (sharded)", "mistral", STW_SHARDED, 2, 0, 0, EC_ROPE_SCALING_NONE, 1e6f, rnd_value},
    {"Phi-3 (fused qkv_proj, gate_up_proj)", "phi3", STW_FUSED, 2, 0, 0, EC_ROPE_SCALING_NONE,
     1e4f, rnd_value},
    {"tied head", "llama", 0, 2, 0, 1, EC_ROPE_SCALING_NONE, 1e4f, head_is_embedding},
    {"Qwen2 (q/k/v biases, tied head)", "qwen2", 0, 2, 1, 1, EC_ROPE_SCALING_NONE, 1e6f, NULL},
};

static ec_model_config arch_config(const arch_case *a)
{
    ec_model_config c = base;
    c.n_kv_heads = a->n_kv_heads;
    c.qkv_bias = a->qkv_bias;
    c.tied_embeddings = a->tied;
    c.rope_theta = a->theta;
    c.rope_scaling = a->rope;
    /* Scaled bands that matter within N_TOK positions: wavelengths 6, 63, 628, 6283 against
     * an original context of 64 (kept below 16, divided above 64, blended between). */
    c.rope_scaling_factor = a->rope == EC_ROPE_SCALING_NONE ? 0 : 4;
    c.rope_low_freq_factor = a->rope == EC_ROPE_SCALING_LLAMA3 ? 1 : 0;
    c.rope_high_freq_factor = a->rope == EC_ROPE_SCALING_LLAMA3 ? 4 : 0;
    c.rope_original_max_pos = a->rope == EC_ROPE_SCALING_LLAMA3 ? 64 : 0;
    return c;
}

static void layouts_match_the_reference_forward(void **state)
{
    (void)state;
    for (size_t a = 0; a < sizeof archs / sizeof *archs; a++) {
        ec_model_config c = arch_config(&archs[a]);
        g_cfg = &c;
        make_dir();
        stw_write_model_values(dir, &c, archs[a].model_type, "F32", archs[a].flags, rnd_value, "");
        float *got = engine_logits(dir, tokens, N_TOK);
        remove_dir();
        double *want = malloc((size_t)N_TOK * c.vocab_size * sizeof *want), worst = 0;
        ref_forward(&c, rnd_value, tokens, N_TOK, want);
        for (int i = 0; i < N_TOK * c.vocab_size; i++) worst = fmax(worst, fabs(got[i] - want[i]));
        printf("%-40s max |engine - reference| = %.2e over %d logits\n", archs[a].what, worst,
               N_TOK * c.vocab_size);
        if (!(worst < 1e-4)) fail_msg("%s: logits differ from the reference by %g", archs[a].what,
                                      worst);
        free(want);
        free(got);
    }
}

/* The plain Llama layout of a model: untied, no biases (they are zero), unfused, one file. */
static float *plain_twin_logits(const ec_model_config *c, stw_value_fn w)
{
    ec_model_config plain = *c;
    plain.qkv_bias = 0;
    plain.tied_embeddings = 0;
    make_dir();
    stw_write_model_values(dir, &plain, "llama", "F32", 0, w, "");
    float *out = engine_logits(dir, tokens, N_TOK);
    remove_dir();
    return out;
}

static void layouts_equal_their_plain_llama_twin(void **state)
{
    (void)state;
    for (size_t a = 0; a < sizeof archs / sizeof *archs; a++) {
        if (!archs[a].twin) continue;
        ec_model_config c = arch_config(&archs[a]);
        g_cfg = &c;
        make_dir();
        stw_write_model_values(dir, &c, archs[a].model_type, "F32", archs[a].flags, rnd_value, "");
        float *got = engine_logits(dir, tokens, N_TOK);
        remove_dir();
        float *twin = plain_twin_logits(&c, archs[a].twin);
        if (memcmp(got, twin, (size_t)N_TOK * c.vocab_size * sizeof *got))
            fail_msg("%s: logits differ from the plain Llama layout", archs[a].what);
        free(twin);
        free(got);
    }
    /* Qwen2 with zero biases is the tied Llama model. */
    ec_model_config c = arch_config(&archs[sizeof archs / sizeof *archs - 1]);
    g_cfg = &c;
    make_dir();
    stw_write_model_values(dir, &c, "qwen2", "F32", 0, zero_biases, "");
    float *got = engine_logits(dir, tokens, N_TOK);
    remove_dir();
    float *twin = plain_twin_logits(&c, zero_biases);
    assert_memory_equal(got, twin, (size_t)N_TOK * c.vocab_size * sizeof *got);
    /* ... and the biases matter: with them the logits move. */
    make_dir();
    stw_write_model_values(dir, &c, "qwen2", "F32", 0, rnd_value, "");
    float *biased = engine_logits(dir, tokens, N_TOK);
    remove_dir();
    assert_memory_not_equal(got, biased, (size_t)N_TOK * c.vocab_size * sizeof *got);
    free(biased);
    free(twin);
    free(got);
}

static void rope_frequencies_follow_the_closed_form(void **state)
{
    (void)state;
    /* Llama-3.1-8B's own parameters, and a linear scaling of them. */
    ec_model_config c = *ec_catalog_find("Llama-3.1-8B");
    for (int pass = 0; pass < 2; pass++) {
        if (pass) c.rope_scaling = EC_ROPE_SCALING_LINEAR, c.rope_scaling_factor = 4;
        float got[64];
        cpu_rope_inv_freq(&c, got);
        for (int j = 0; j < c.head_dim / 2; j++) {
            double want = ref_inv_freq(&c, j);
            if (fabs(got[j] - want) > 2e-6 * want)
                fail_msg("pass %d: inv_freq[%d] = %.9g, closed form %.9g", pass, j, got[j], want);
        }
        /* The fastest frequency: kept by llama3 (wavelength 2 pi < 8192 / 4), scaled by linear. */
        assert_true(fabsf(got[0] - (pass ? 0.25f : 1.0f)) < 1e-7f);
        /* The slowest: divided by the factor either way. */
        double slowest = pow(500000.0, -126.0 / 128) / c.rope_scaling_factor;
        assert_true(fabs(got[63] - slowest) < 2e-6 * slowest);
    }
}

/* ---- transformers' goldens (tests/data/hf-tiny, make_goldens.py) ---- */
static const char *const golden_models[] = {"llama2", "llama31", "mistral", "qwen2", "phi3", "yi"};

static cJSON *read_json_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("%s: cannot open", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    text[n] = 0;
    cJSON *j = cJSON_Parse(text);
    free(text);
    if (!j) fail_msg("%s: not JSON", path);
    return j;
}

static int int_array(const cJSON *a, int *out, int cap)
{
    int n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, a)
    {
        assert_true(n < cap);
        out[n++] = e->valueint;
    }
    return n;
}

/* transformers' logits [n][vocab] (float32 little-endian, as this machine's floats). */
static float *read_logits(const char *path, size_t count)
{
    float *v = malloc(count * sizeof *v);
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("%s: cannot open", path);
    if (fread(v, sizeof *v, count, f) != count || fgetc(f) != EOF)
        fail_msg("%s: not %zu float32 values", path, count);
    fclose(f);
    return v;
}

/* Within 1e-4 of transformers' float32 logits: both compute in float32 from the same BF16
 * weights, and summation order and libm leave them ~4e-6 apart (transformers 5.17); rotary
 * frequencies rounded to BF16 already move them by 2e-3, a misread tensor or a wrong rotary
 * convention by 0.1 and more. */
static void engine_matches_transformers_goldens(void **state)
{
    (void)state;
    char root[4096], path[4200];
    test_data_path(root, sizeof root, "hf-tiny");
    snprintf(path, sizeof path, "%s/SHA256SUMS", root);
    if (access(path, R_OK) != 0) {
        printf("skipped: %s is absent: run tests/data/hf-tiny/make_goldens.py where transformers "
               "is installed and unpack its hf-tiny.tar into tests/data\n", path);
        skip();
    }
    for (size_t g = 0; g < sizeof golden_models / sizeof *golden_models; g++) {
        snprintf(path, sizeof path, "%s/%s/goldens.json", root, golden_models[g]);
        cJSON *j = read_json_file(path);
        int toks[64], greedy[64], eos[8], shape[2];
        int n = int_array(cJSON_GetObjectItem(j, "tokens"), toks, 64);
        int n_greedy = int_array(cJSON_GetObjectItem(j, "greedy"), greedy, 64);
        int want_eos = int_array(cJSON_GetObjectItem(j, "eos_token_id"), eos, 8);
        assert_int_equal(int_array(cJSON_GetObjectItem(j, "logits_shape"), shape, 2), 2);
        const cJSON *gaps = cJSON_GetObjectItem(j, "greedy_gaps");
        assert_int_equal(cJSON_GetArraySize(gaps), n_greedy);
        snprintf(path, sizeof path, "%s/%s", root, golden_models[g]);
        ec_model *m = test_open_model(path, 0);
        int vocab = ec_model_config_of(m)->vocab_size;
        assert_true(shape[0] == n && shape[1] == vocab);
        float *got = engine_logits(path, toks, n);
        snprintf(path, sizeof path, "%s/%s/logits.f32", root, golden_models[g]);
        float *want = read_logits(path, (size_t)n * vocab);
        double worst = 0;
        for (int i = 0; i < n * vocab; i++) worst = fmax(worst, fabs(got[i] - want[i]));
        printf("%-8s max |engine - transformers| = %.2e over %d logits\n", golden_models[g],
               worst, n * vocab);
        if (!(worst < 1e-4)) fail_msg("%s: logits differ from transformers by %g", path, worst);
        const int *ids;
        assert_int_equal(ec_model_eos_ids(m, &ids), want_eos);
        assert_memory_equal(ids, eos, (size_t)want_eos * sizeof *ids);
        /* Greedy tokens agree up to the first step whose top two logits transformers found
         * within twice the tolerance of each other (a near-tie may break either way). */
        int *out = malloc((size_t)n_greedy * sizeof *out);
        ec_backend *b = test_load(m, EC_PREC_F32, 1, n + n_greedy, 1);
        assert_int_equal(ec_generate(b, toks, 1, n, n_greedy, out, NULL, NULL), 0);
        for (int s = 0; s < n_greedy && cJSON_GetArrayItem(gaps, s)->valuedouble > 2e-3; s++)
            if (out[s] != greedy[s])
                fail_msg("%s: greedy token %d is %d, transformers %d", golden_models[g], s,
                         out[s], greedy[s]);
        free(out);
        ec_backend_destroy(b);
        ec_model_close(m);
        free(want);
        free(got);
        cJSON_Delete(j);
    }
}

/* ---- the 260K TinyStories model in Hugging Face layout ---- */
static float *story[EC_T_COUNT][8]; /* the llama2.c tensors [kind][layer] */
static const ec_model_config *story_cfg;

/* llama2.c rotates adjacent pairs; the HF conversion permutes wq/wk rows so that rotate-half
 * gives the same model: new row h*hd + p*hd/2 + i holds old row h*hd + 2i + p. */
static float story_value(ec_tensor_kind k, int layer, uint64_t e)
{
    int l = ec_tensor_is_per_layer(k) ? layer : 0;
    if (k != EC_T_WQ && k != EC_T_WK) return story[k][l][e];
    uint64_t dim = (uint64_t)story_cfg->dim, row = e / dim, col = e % dim;
    uint64_t hd = (uint64_t)story_cfg->head_dim, h = row / hd, r = row % hd;
    uint64_t p = r / (hd / 2), i = r % (hd / 2);
    return story[k][l][(h * hd + 2 * i + p) * dim + col];
}

static void stories260k_in_hf_layout_writes_the_golden_text(void **state)
{
    (void)state;
    enum { GEN = 256 };
    ec_model *src = test_open_model(test_data_file("models/stories260K.bin"), 0);
    ec_model_config c = *ec_model_config_of(src);
    assert_true(c.n_layers <= 8 && c.rope_interleaved && c.tied_embeddings);
    story_cfg = &c;
    for (int k = 0; k < EC_T_COUNT; k++)
        for (int l = 0; l < c.n_layers; l++) {
            if (is_bias((ec_tensor_kind)k) || k == EC_T_LM_HEAD) continue;
            story[k][l] = malloc(ec_tensor_numel(&c, (ec_tensor_kind)k) * sizeof(float));
            assert_int_equal(ec_model_read_tensor(src, (ec_tensor_kind)k, l, story[k][l]), 0);
        }
    ec_model_close(src);
    c.rope_interleaved = 0;
    make_dir();
    stw_write_model_values(dir, &c, "llama", "F32", 0, story_value, "");
    ec_model *m = test_open_model(dir, 0);
    assert_int_equal(ec_model_config_of(m)->rope_interleaved, 0);
    ec_backend *b = test_load(m, EC_PREC_F32, 1, GEN, 1);
    int seq[GEN + 1] = {1}; /* BOS, then the greedy tokens */
    assert_int_equal(ec_generate(b, seq, 1, 1, GEN, seq + 1, NULL, NULL), 0);
    ec_backend_destroy(b);
    ec_model_close(m);
    remove_dir();
    for (int k = 0; k < EC_T_COUNT; k++)
        for (int l = 0; l < 8; l++) free(story[k][l]), story[k][l] = NULL;

    ec_tokenizer *tok;
    assert_int_equal(ec_tokenizer_open(&tok, test_data_file("models/tok512.bin"), c.vocab_size), 0);
    int end = 1; /* llama2.c's run stops at BOS or EOS */
    while (end <= GEN && seq[end] != ec_tokenizer_bos(tok) && seq[end] != ec_tokenizer_eos(tok))
        end++;
    char *text = ec_tokenizer_decode(tok, seq, end, 1);
    assert_non_null(text);
    ec_tokenizer_free(tok);
    FILE *f = fopen(test_data_file("models/stories260K_expected_greedy.txt"), "rb");
    char golden[4096];
    size_t n = fread(golden, 1, sizeof golden - 1, f);
    fclose(f);
    golden[n] = 0;
    const char *want = strchr(golden, '\n') + 1; /* the first line is the reference command */
    size_t len = strlen(text);
    if (strncmp(text, want, len) || strcmp(want + len, "\n"))
        fail_msg("HF-layout text differs from llama2.c's:\n%s\n---\n%s", text, want);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(layouts_match_the_reference_forward),
        cmocka_unit_test(layouts_equal_their_plain_llama_twin),
        cmocka_unit_test(rope_frequencies_follow_the_closed_form),
        cmocka_unit_test(stories260k_in_hf_layout_writes_the_golden_text),
        cmocka_unit_test(engine_matches_transformers_goldens),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
