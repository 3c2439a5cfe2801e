/* test_tp.c — tensor parallelism on the CPU backend: device lists, the shards' tensors tiling the
 * model's, and the tensor-parallel step equal to the one-device step (same greedy tokens, logits
 * within the rounding of the reordered sums) over 2 and 4 CPU ranks in float32, fp16 and int8
 * (whose scales a column split changes); refusals, and recovery after a bad call. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine/engine_test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void device_lists(void **state)
{
    (void)state;
    int idx[8];
    assert_int_equal(ec_device_list("cuda:0,1,3", 0, idx, 8), 3);
    assert_int_equal(idx[0], 0);
    assert_int_equal(idx[2], 3);
    assert_int_equal(ec_device_list("cuda:2", 2, idx, 8), 2);
    assert_int_equal(idx[0], 2);
    assert_int_equal(idx[1], 3);
    assert_int_equal(ec_device_list("cuda", 4, idx, 8), 4);
    assert_int_equal(idx[3], 3);
    assert_int_equal(ec_device_list("cpu", 2, idx, 8), 2);
    assert_int_equal(idx[1], -1);
    assert_int_equal(ec_device_list("cuda:1", 0, idx, 8), 1);
    static const struct {
        const char *device;
        int tp;
        const char *needle;
    } bad[] = {
        {"cuda:0,1", 4, "4 tensor-parallel ranks"},
        {"cuda:0,0", 0, "listed twice"},
        {"cuda:0,x", 0, "'x' is not a GPU index"},
        {"cuda:0,", 0, "'' is not a GPU index"},
        {"cpu,cpu", 0, "lists are of GPUs"},
        {"cuda", 9, "at most 8"},
        {"cuda:0,1,2,3,4,5,6,7,8", 0, "more than 8"},
        {"gpu", 2, "unknown device"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(ec_device_list(bad[i].device, bad[i].tp, idx, 8), -1);
        if (!strstr(ec_last_error(), bad[i].needle)) fail_msg("%s: %s", bad[i].device, ec_last_error());
    }
}

static float *read_all(const ec_model *m, ec_tensor_kind k, int layer)
{
    int rows, cols;
    ec_tensor_shape(ec_model_config_of(m), k, &rows, &cols);
    float *t = malloc((size_t)rows * cols * sizeof *t);
    assert_non_null(t);
    assert_int_equal(ec_model_read_tensor(m, k, layer, t), 0);
    return t;
}

/* Rank r's q rows, o columns, gate rows and down columns are the model's, in rank order. */
static void shards_tile_the_model(void **state)
{
    (void)state;
    enum { W = 2, LAYER = 3 };
    ec_model *m = test_open_model("tiny", 5), *sh[W];
    const ec_model_config *c = ec_model_config_of(m);
    for (int r = 0; r < W; r++)
        assert_int_equal(ec_model_shard(&sh[r], m, r, W), 0);
    const ec_model_config *sc = ec_model_config_of(sh[1]);
    assert_int_equal(sc->n_heads, c->n_heads / W);
    assert_int_equal(sc->n_kv_heads, c->n_kv_heads / W);
    assert_int_equal(sc->hidden_dim, c->hidden_dim / W);
    assert_int_equal(sc->dim, c->dim);
    assert_int_equal(sc->head_dim, c->head_dim);
    static const ec_tensor_kind rows_split[] = {EC_T_WQ, EC_T_WK, EC_T_WV, EC_T_W_GATE, EC_T_W_UP};
    static const ec_tensor_kind cols_split[] = {EC_T_WO, EC_T_W_DOWN};
    for (size_t i = 0; i < 5; i++) {
        float *whole = read_all(m, rows_split[i], LAYER);
        int rows, cols;
        ec_tensor_shape(sc, rows_split[i], &rows, &cols);
        for (int r = 0; r < W; r++) {
            float *part = read_all(sh[r], rows_split[i], LAYER);
            assert_memory_equal(part, whole + (size_t)r * rows * cols, sizeof *part * rows * cols);
            free(part);
        }
        free(whole);
    }
    for (size_t i = 0; i < 2; i++) {
        int rows, cols, full_rows, full_cols;
        ec_tensor_shape(sc, cols_split[i], &rows, &cols);
        ec_tensor_shape(c, cols_split[i], &full_rows, &full_cols);
        assert_int_equal(rows, full_rows);
        assert_int_equal(cols * W, full_cols);
        float *whole = read_all(m, cols_split[i], LAYER);
        for (int r = 0; r < W; r++) {
            float *part = read_all(sh[r], cols_split[i], LAYER);
            for (int y = 0; y < rows; y++)
                assert_memory_equal(part + (size_t)y * cols,
                                    whole + (size_t)y * full_cols + (size_t)r * cols,
                                    sizeof *part * cols);
            free(part);
        }
        free(whole);
    }
    float *emb = read_all(m, EC_T_TOK_EMB, 0), *emb1 = read_all(sh[1], EC_T_TOK_EMB, 0);
    assert_memory_equal(emb, emb1, sizeof *emb * c->vocab_size * c->dim);
    free(emb);
    free(emb1);
    for (int r = 0; r < W; r++)
        ec_model_close(sh[r]);
    ec_model_close(m);
}

enum { B = 2, L = 6, GEN = 8 };

/* Greedy tokens and the prefill's logits of the same prompts on `device` with `tp` ranks. */
static void run_on(const ec_model *m, const char *device, int tp, ec_precision p, int *tokens,
                   float *logits)
{
    const ec_model_config *c = ec_model_config_of(m);
    ec_load_options o;
    ec_load_options_default(&o);
    o.precision = p;
    o.max_batch = B;
    o.max_seq = L + GEN;
    o.threads = 2;
    o.tp = tp;
    ec_backend *b;
    if (ec_backend_open(&b, device, m, &o) != 0) fail_msg("%s", ec_last_error());
    int prompts[B * L], next[B];
    ec_prompt_synthetic(11, c->vocab_size, B, L, prompts);
    assert_int_equal(b->ops->forward(b, prompts, B, L, 0, next, logits), 0);
    /* A fresh cache for the generation: prefill again from position 0. */
    assert_int_equal(ec_generate(b, prompts, B, L, GEN, tokens, NULL, NULL), 0);
    ec_backend_destroy(b);
}

static void tp_matches_one_device(const char *model, int world, ec_precision p, double tol,
                                  int same_tokens)
{
    ec_model *m = test_open_model(model, 9);
    int vocab = ec_model_config_of(m)->vocab_size;
    int one[B * GEN], many[B * GEN];
    float *lg1 = malloc(sizeof(float) * B * vocab), *lgn = malloc(sizeof(float) * B * vocab);
    run_on(m, "cpu", 0, p, one, lg1);
    run_on(m, "cpu", world, p, many, lgn);
    double worst = 0, scale = 0;
    for (int i = 0; i < B * vocab; i++) {
        worst = fmax(worst, fabs(lg1[i] - lgn[i]));
        scale = fmax(scale, fabs(lg1[i]));
    }
    if (!(worst <= tol * scale))
        fail_msg("%s over %d ranks (%s): logits differ by %g (largest logit %g)", model, world,
                 ec_precision_name(p), worst, scale);
    if (same_tokens) assert_memory_equal(one, many, sizeof one);
    free(lg1);
    free(lgn);
    ec_model_close(m);
}

/* float32: only the order of the partial sums differs. */
static void tp2_f32(void **state)
{
    (void)state;
    tp_matches_one_device("tiny", 2, EC_PREC_F32, 1e-5, 1);
    tp_matches_one_device("small", 4, EC_PREC_F32, 1e-5, 1);
}

/* fp16 rounds every linear's input to 16 bits: a sum that lands on the other side of a rounding
 * boundary moves that value by up to 2^-11 of itself. */
static void tp4_fp16(void **state)
{
    (void)state;
    tp_matches_one_device("small", 4, EC_PREC_FP16, 3e-3, 1);
}

/* int8 scales each weight row and each token's activations by their absmax: over half a row of
 * o and down (a rank's columns) the scales are finer, so the result is close, not equal. */
static void tp2_int8(void **state)
{
    (void)state;
    tp_matches_one_device("tiny", 2, EC_PREC_INT8, 0.1, 0); /* near-flat logits: argmax flips */
}

static void refusals_and_recovery(void **state)
{
    (void)state;
    ec_model *m = test_open_model("tiny", 9); /* 2 kv heads */
    ec_load_options o;
    ec_load_options_default(&o);
    o.tp = 4;
    ec_backend *b = NULL;
    assert_int_equal(ec_backend_open(&b, "cpu", m, &o), -1);
    assert_null(b);
    assert_non_null(strstr(ec_last_error(), "cannot be split over 4 ranks"));
    o.tp = 2;
    o.max_seq = 16;
    assert_int_equal(ec_backend_open(&b, "cpu", m, &o), 0);
    int bad[1] = {100000}, good[1] = {5}, next[1];
    assert_int_equal(b->ops->forward(b, bad, 1, 1, 0, next, NULL), -1);
    assert_non_null(strstr(ec_last_error(), "tensor-parallel rank"));
    assert_non_null(strstr(ec_last_error(), "outside the vocabulary"));
    assert_int_equal(b->ops->forward(b, good, 1, 1, 0, next, NULL), 0);
    assert_int_equal(b->ops->forward(b, good, 2, 1, 0, next, NULL), -1); /* batch > max_batch */
    assert_int_equal(b->ops->forward(b, good, 1, 1, 1, next, NULL), 0);
    ec_backend_destroy(b);
    ec_model_close(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(device_lists),
        cmocka_unit_test(shards_tile_the_model),
        cmocka_unit_test(tp2_f32),
        cmocka_unit_test(tp4_fp16),
        cmocka_unit_test(tp2_int8),
        cmocka_unit_test(refusals_and_recovery),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
