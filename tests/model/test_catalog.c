/* test_catalog.c — the built-in catalog: published parameter counts, lookups, tensor shapes and
 * weight bytes per precision. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ecocompute/model.h"

/* Published sizes (model cards / HF safetensors metadata), in parameters. */
static const struct {
    const char *name;
    double params;
    double tol; /* relative */
} published[] = {
    {"Qwen2.5-0.5B", 0.494e9, 0.005},  {"TinyLlama-1.1B", 1.100e9, 0.005},
    {"Qwen2-1.5B", 1.544e9, 0.005},    {"Qwen2.5-3B", 3.086e9, 0.005},
    {"Phi-3-mini-4k", 3.821e9, 0.005}, {"Yi-1.5-6B", 6.061e9, 0.005},
    {"Mistral-7B-v0.2", 7.242e9, 0.005}, {"Qwen2-7B", 7.616e9, 0.005},
    {"Qwen2.5-7B", 7.616e9, 0.005},    {"Llama-2-7B", 6.738e9, 0.005},
    {"Llama-3.1-8B", 8.030e9, 0.005},  {"Yi-1.5-9B", 8.829e9, 0.005},
    {"Qwen2.5-14B", 14.770e9, 0.005},  {"tiny", 1.0e6, 0.1},
    {"small", 30e6, 0.1},
};

static void test_param_counts(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof published / sizeof *published; i++) {
        const ec_model_config *c = ec_catalog_find(published[i].name);
        assert_non_null(c);
        double p = (double)ec_model_param_count(c);
        double rel = (p - published[i].params) / published[i].params;
        if (rel < -published[i].tol || rel > published[i].tol)
            fail_msg("%s: %.0f parameters, published %.0f", published[i].name, p,
                     published[i].params);
    }
    /* Exact figures for the two most quoted models. */
    assert_int_equal(ec_model_param_count(ec_catalog_find("Llama-2-7B")), 6738415616ULL);
    assert_int_equal(ec_model_param_count(ec_catalog_find("Qwen2.5-0.5B")), 494032768ULL);
    assert_int_equal(ec_model_param_count(ec_catalog_find("Llama-3.1-8B")), 8030261248ULL);
}

static void test_find(void **state)
{
    (void)state;
    assert_ptr_equal(ec_catalog_find("llama-2-7b"), ec_catalog_find("LLAMA-2-7B"));
    assert_non_null(ec_catalog_find("TINY"));
    assert_null(ec_catalog_find("Llama-2-7"));
    assert_null(ec_catalog_find(""));
    assert_null(ec_catalog_get(ec_catalog_count()));
    assert_true(ec_catalog_count() >= 15);
    const ec_model_config *t = ec_catalog_find("tiny");
    assert_true(t->max_seq_len >= 2048);
    assert_true(ec_catalog_find("small")->max_seq_len >= 2048);
}

static void test_shapes_consistent(void **state)
{
    (void)state;
    for (size_t i = 0; i < ec_catalog_count(); i++) {
        const ec_model_config *c = ec_catalog_get(i);
        assert_int_equal(c->n_heads % c->n_kv_heads, 0);
        assert_int_equal(c->head_dim % 2, 0);
        assert_int_equal(c->rope_interleaved, 0);
        int r, n;
        ec_tensor_shape(c, EC_T_WK, &r, &n);
        assert_int_equal(r, c->n_kv_heads * c->head_dim);
        assert_int_equal(n, c->dim);
        ec_tensor_shape(c, EC_T_W_DOWN, &r, &n);
        assert_int_equal(r, c->dim);
        assert_int_equal(n, c->hidden_dim);
        ec_tensor_shape(c, EC_T_FFN_NORM, &r, &n);
        assert_int_equal(r, 1);
        assert_int_equal(n, c->dim);
    }
    const ec_model_config *l3 = ec_catalog_find("Llama-3.1-8B");
    assert_true(l3->rope_scaling == EC_ROPE_SCALING_LLAMA3 && l3->rope_scaling_factor == 8.f &&
                l3->rope_original_max_pos == 8192);
    assert_true(ec_catalog_find("Qwen2-7B")->qkv_bias);
    assert_false(ec_catalog_find("Mistral-7B-v0.2")->qkv_bias);
    assert_true(ec_tensor_is_linear(EC_T_W_UP));
    assert_false(ec_tensor_is_linear(EC_T_TOK_EMB));
    assert_string_equal(ec_tensor_kind_name(EC_T_W_GATE), "w_gate");
}

static void test_weight_bytes(void **state)
{
    (void)state;
    const ec_model_config *c = ec_catalog_find("Llama-2-7B");
    uint64_t p = ec_model_param_count(c);
    /* 16-bit: exactly two bytes per parameter. */
    assert_int_equal(ec_model_weight_bytes(c, EC_PREC_FP16), 2 * p);
    uint64_t int8 = ec_model_weight_bytes(c, EC_PREC_INT8);
    uint64_t nf4 = ec_model_weight_bytes(c, EC_PREC_NF4);
    uint64_t dq = ec_model_weight_bytes(c, EC_PREC_NF4_DQ);
    assert_true(int8 < 2 * p && nf4 < int8 && dq < nf4);
    /* Embedding and head stay 16-bit: 2 x 32000 x 4096 x 2 bytes = 524 MB on top of ~6.5 GB. */
    assert_true(int8 > p && int8 < p + 600000000ULL);
    assert_int_equal(ec_model_weight_bytes(c, EC_PREC_FP8), int8);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_param_counts),
        cmocka_unit_test(test_find),
        cmocka_unit_test(test_shapes_consistent),
        cmocka_unit_test(test_weight_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
