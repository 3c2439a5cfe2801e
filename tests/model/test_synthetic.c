/* test_synthetic.c — synthetic weights: determinism across seeds and thread counts, per-tensor
 * statistics, and injected outlier dimensions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ecocompute/common.h"
#include "ecocompute/model.h"

static float *read_all(const ec_model *m, ec_tensor_kind k, int layer, size_t *n)
{
    int r, c;
    ec_tensor_shape(ec_model_config_of(m), k, &r, &c);
    *n = (size_t)r * (size_t)c;
    float *w = malloc(*n * sizeof *w);
    assert_non_null(w);
    if (ec_model_read_tensor(m, k, layer, w)) fail_msg("%s", ec_last_error());
    return w;
}

static ec_model *open_synth(const char *name, uint64_t seed, int threads, int outliers, float mag)
{
    ec_model_options o;
    ec_model_options_default(&o);
    o.seed = seed;
    o.threads = threads;
    o.outliers = outliers;
    o.outlier_mag = mag;
    ec_model *m;
    if (ec_model_open(&m, name, &o)) fail_msg("%s", ec_last_error());
    return m;
}

static void test_determinism(void **state)
{
    (void)state;
    ec_model *a = open_synth("small", 7, 1, -1, 0), *b = open_synth("small", 7, 8, -1, 0);
    ec_model *c = open_synth("small", 8, 1, -1, 0);
    assert_string_equal(ec_model_source(a), "synthetic(seed=7)");
    /* tok_emb (16M elements) spans many work chunks, so 8 threads really split it. */
    const ec_tensor_kind kinds[] = {EC_T_TOK_EMB, EC_T_WQ, EC_T_W_DOWN, EC_T_ATTN_NORM};
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
        size_t n;
        float *wa = read_all(a, kinds[i], 3, &n), *wb = read_all(b, kinds[i], 3, &n);
        float *wc = read_all(c, kinds[i], 3, &n);
        assert_memory_equal(wa, wb, n * sizeof *wa);
        assert_memory_not_equal(wa, wc, n * sizeof *wa);
        free(wa);
        free(wb);
        free(wc);
    }
    /* Layers differ from each other, and the generator is the pure function the header names. */
    size_t n;
    float *l0 = read_all(a, EC_T_WQ, 0, &n), *l1 = read_all(a, EC_T_WQ, 1, &n);
    assert_memory_not_equal(l0, l1, n * sizeof *l0);
    float sd = 1.f / sqrtf(512.f);
    assert_true(l1[12345] == sd * ec_synth_normal(7, EC_T_WQ, 1, 12345));
    free(l0);
    free(l1);
    ec_model_close(a);
    ec_model_close(b);
    ec_model_close(c);
}

static void stats(const float *w, size_t n, double *mean, double *sd)
{
    double s = 0, s2 = 0;
    for (size_t i = 0; i < n; i++) s += w[i];
    *mean = s / (double)n;
    for (size_t i = 0; i < n; i++) s2 += (w[i] - *mean) * (w[i] - *mean);
    *sd = sqrt(s2 / (double)n);
}

static void check_stats(const ec_model *m, ec_tensor_kind k, double want_mean, double want_sd)
{
    size_t n;
    float *w = read_all(m, k, 2, &n);
    double mean, sd;
    stats(w, n, &mean, &sd);
    free(w);
    if (fabs(sd - want_sd) > 0.05 * want_sd || fabs(mean - want_mean) > 0.05 * want_sd)
        fail_msg("%s: mean %g sd %g, want mean %g sd %g", ec_tensor_kind_name(k), mean, sd,
                 want_mean, want_sd);
}

static void test_statistics(void **state)
{
    (void)state;
    ec_model *m = open_synth("small", 1, 0, 0, 0);
    const ec_model_config *c = ec_model_config_of(m);
    check_stats(m, EC_T_TOK_EMB, 0, 0.02);
    check_stats(m, EC_T_WQ, 0, 1 / sqrt(c->dim));
    check_stats(m, EC_T_W_UP, 0, 1 / sqrt(c->dim));
    check_stats(m, EC_T_WO, 0, 1 / sqrt(c->n_heads * c->head_dim * 2.0 * c->n_layers));
    check_stats(m, EC_T_W_DOWN, 0, 1 / sqrt(c->hidden_dim * 2.0 * c->n_layers));
    check_stats(m, EC_T_ATTN_NORM, 1, 0.02);
    /* Tied head: the embedding itself. */
    size_t n;
    float *e = read_all(m, EC_T_TOK_EMB, 0, &n), *h = read_all(m, EC_T_LM_HEAD, 0, &n);
    assert_memory_equal(e, h, n * sizeof *e);
    free(e);
    free(h);
    ec_model_close(m);
}

static int count_outliers(const ec_model *m, ec_tensor_kind k, int layer, float mag, int *dims)
{
    size_t n;
    float *w = read_all(m, k, layer, &n);
    int count = 0;
    for (size_t i = 0; i < n; i++)
        if (fabsf(w[i] - mag) < 1e-6f * mag) dims[count++] = (int)i;
        else assert_true(fabsf(w[i] - 1.f) < 0.1f);
    free(w);
    return count;
}

static void test_outliers(void **state)
{
    (void)state;
    ec_model *m = open_synth("tiny", 3, 0, 4, 25.f);
    int d0[128], d1[128];
    assert_int_equal(count_outliers(m, EC_T_ATTN_NORM, 0, 25.f, d0), 4);
    assert_int_equal(count_outliers(m, EC_T_FFN_NORM, 4, 25.f, d1), 4);
    assert_memory_equal(d0, d1, 4 * sizeof *d0); /* the same dims in every norm */
    ec_model_close(m);
    /* Defaults: none below 6B parameters, six of magnitude 40 from 6B up. */
    m = open_synth("tiny", 3, 0, -1, 0);
    assert_int_equal(count_outliers(m, EC_T_ATTN_NORM, 0, 40.f, d0), 0);
    ec_model_close(m);
    m = open_synth("Llama-2-7B", 3, 0, -1, 0);
    float *w = malloc(4096 * sizeof *w);
    assert_int_equal(ec_model_read_tensor(m, EC_T_FFN_NORM, 31, w), 0);
    int big = 0;
    for (int i = 0; i < 4096; i++) big += w[i] == 40.f;
    assert_int_equal(big, 6);
    free(w);
    ec_model_close(m);
    /* Another seed picks other dims. */
    m = open_synth("tiny", 4, 0, 4, 25.f);
    assert_int_equal(count_outliers(m, EC_T_ATTN_NORM, 0, 25.f, d1), 4);
    assert_memory_not_equal(d0, d1, 4 * sizeof *d0);
    ec_model_close(m);
}

/* The projections that read the normed hidden state (q/k/v, gate/up) carry the outlier dims'
 * columns scaled by 1/MAG; everything else is the model without outliers, value for value.
 * Qwen2.5-0.5B's rows of 896 make the fill's chunks of 2^18 elements start inside a row, and 8
 * threads take them out of order, so the column bookkeeping is checked from such starts. */
static void test_outlier_weights(void **state)
{
    (void)state;
    ec_model *with = open_synth("Qwen2.5-0.5B", 5, 8, 4, 25.f);
    ec_model *without = open_synth("Qwen2.5-0.5B", 5, 1, 0, 0);
    int dims[128];
    assert_int_equal(count_outliers(with, EC_T_FFN_NORM, 1, 25.f, dims), 4);
    const ec_tensor_kind scaled[] = {EC_T_WQ, EC_T_WK, EC_T_WV, EC_T_W_GATE, EC_T_W_UP};
    const ec_tensor_kind kept[] = {EC_T_WO, EC_T_W_DOWN};
    for (size_t t = 0; t < sizeof scaled / sizeof *scaled; t++) {
        int rows, cols;
        ec_tensor_shape(ec_model_config_of(with), scaled[t], &rows, &cols);
        size_t n;
        float *a = read_all(with, scaled[t], 1, &n), *b = read_all(without, scaled[t], 1, &n);
        size_t changed = 0;
        for (size_t i = 0; i < n; i++) {
            int c = (int)(i % (size_t)cols), is_dim = 0;
            for (int d = 0; d < 4; d++) is_dim |= c == dims[d];
            if (is_dim) {
                assert_float_equal(a[i], b[i] / 25.f, 0);
                changed += a[i] != b[i];
            } else {
                assert_true(a[i] == b[i]);
            }
        }
        assert_true(changed > (size_t)rows * 4 * 9 / 10); /* not just zeros that stayed zero */
        free(a);
        free(b);
    }
    for (size_t t = 0; t < sizeof kept / sizeof *kept; t++) {
        size_t n;
        float *a = read_all(with, kept[t], 1, &n), *b = read_all(without, kept[t], 1, &n);
        assert_memory_equal(a, b, n * sizeof *a);
        free(a);
        free(b);
    }
    ec_model_close(with);
    ec_model_close(without);
}

static void test_bad_requests(void **state)
{
    (void)state;
    ec_model *m = open_synth("tiny", 1, 1, 0, 0);
    float buf[128];
    assert_int_equal(ec_model_read_tensor(m, EC_T_ATTN_NORM, 5, buf), -1);
    assert_non_null(strstr(ec_last_error(), "layer 5"));
    assert_int_equal(ec_model_read_tensor(m, EC_T_BQ, 0, buf), -1);
    assert_non_null(strstr(ec_last_error(), "bias"));
    ec_model_close(m);
    ec_model_options o;
    ec_model_options_default(&o);
    o.outliers = 129;
    assert_int_equal(ec_model_open(&m, "tiny", &o), -1);
    assert_non_null(strstr(ec_last_error(), "outliers"));
    assert_int_equal(ec_model_open(&m, "no-such-model", NULL), -1);
    assert_non_null(strstr(ec_last_error(), "no-such-model"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_statistics),
        cmocka_unit_test(test_outliers),
        cmocka_unit_test(test_outlier_weights),
        cmocka_unit_test(test_bad_requests),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
