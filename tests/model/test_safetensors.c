/* test_safetensors.c — Hugging Face directories: F32/F16/BF16 weights load with the right values
 * and shapes, Qwen2 biases and tied heads, Phi-3 fused projections split, sharded indexes; every
 * malformed file is rejected with a message naming the file and the tensor. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ecocompute/common.h"
#include "ecocompute/model.h"
#include "st_writer.h"

/* dim 16, hidden 40, 2 layers, 4 heads of 4, 2 KV heads, vocab 24. */
static const ec_model_config base = {"test", 16, 40, 2, 4, 2, 4, 24, 128, 1e-6f, 5e5f,
                                     0, 0, 0, 0, 0, 0, 0, 0};

static char dir[64];

static int make_dir(void **state)
{
    (void)state;
    strcpy(dir, "/tmp/ec_st_XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Opens dir and checks every tensor against stw_value. */
static void check_model(const ec_model_config *want)
{
    ec_model *m;
    if (ec_model_open(&m, dir, NULL)) fail_msg("%s", ec_last_error());
    const ec_model_config *c = ec_model_config_of(m);
    assert_string_equal(ec_model_source(m), "safetensors");
    assert_int_equal(c->dim, want->dim);
    assert_int_equal(c->hidden_dim, want->hidden_dim);
    assert_int_equal(c->n_kv_heads, want->n_kv_heads);
    assert_int_equal(c->head_dim, 4);
    assert_int_equal(c->qkv_bias, want->qkv_bias);
    assert_int_equal(c->tied_embeddings, want->tied_embeddings);
    assert_int_equal(c->rope_interleaved, 0);
    assert_true(c->rope_theta == 5e5f && c->norm_eps == 1e-6f);
    float *buf = malloc(24 * 40 * sizeof *buf);
    for (int k = 0; k < EC_T_COUNT; k++) {
        if ((k == EC_T_BQ || k == EC_T_BK || k == EC_T_BV) && !c->qkv_bias) continue;
        for (int l = 0; l < c->n_layers; l++) {
            assert_int_equal(ec_model_read_tensor(m, (ec_tensor_kind)k, l, buf), 0);
            ec_tensor_kind src = k == EC_T_LM_HEAD && c->tied_embeddings ? EC_T_TOK_EMB
                                                                         : (ec_tensor_kind)k;
            int lay = k == EC_T_TOK_EMB || k == EC_T_LM_HEAD || k == EC_T_FINAL_NORM ? 0 : l;
            uint64_t n = ec_tensor_numel(c, (ec_tensor_kind)k);
            for (uint64_t i = 0; i < n; i++)
                if (buf[i] != stw_value(src, lay, i))
                    fail_msg("%s layer %d [%llu]: %g, want %g", ec_tensor_kind_name(k), l,
                             (unsigned long long)i, buf[i], stw_value(src, lay, i));
        }
    }
    free(buf);
    ec_model_close(m);
}

static void test_dtypes(void **state)
{
    const char *dtypes[] = {"F32", "F16", "BF16"};
    for (int i = 0; i < 3; i++) {
        make_dir(state);
        stw_write_model(dir, &base, "llama", dtypes[i], 0);
        check_model(&base);
        remove_dir(state);
    }
}

static void test_qwen2_bias_tied(void **state)
{
    ec_model_config c = base;
    c.qkv_bias = 1;
    c.tied_embeddings = 1;
    make_dir(state);
    stw_write_model(dir, &c, "qwen2", "BF16", 0);
    check_model(&c);
    remove_dir(state);
}

static void test_phi3_fused(void **state)
{
    make_dir(state);
    stw_write_model(dir, &base, "phi3", "F16", STW_FUSED);
    check_model(&base); /* q, k, v and gate, up each come back as their own rows */
    remove_dir(state);
}

static void test_sharded(void **state)
{
    make_dir(state);
    stw_write_model(dir, &base, "mistral", "F32", STW_SHARDED);
    check_model(&base);
    remove_dir(state);
}

/* Opening dir must fail with a message containing every needle. */
static void expect_error(const char *a, const char *b, const char *c)
{
    ec_model *m = NULL;
    if (ec_model_open(&m, dir, NULL) == 0) fail_msg("accepted; expected '%s'", a);
    const char *e = ec_last_error();
    if (!strstr(e, a) || (b && !strstr(e, b)) || (c && !strstr(e, c)))
        fail_msg("message '%s' lacks '%s' / '%s' / '%s'", e, a, b ? b : "", c ? c : "");
}

static void test_model_errors(void **state)
{
    make_dir(state);
    stw_write_model(dir, &base, "llama", "F32", STW_DROP_WK1);
    expect_error("model.safetensors", "model.layers.1.self_attn.k_proj.weight", "missing");
    remove_dir(state);

    make_dir(state);
    stw_write_model(dir, &base, "llama", "F32", STW_BAD_SHAPE);
    expect_error("model.layers.0.mlp.down_proj.weight", "shape [40, 16] but config.json implies "
                 "[16, 40]", "model.safetensors");
    remove_dir(state);

    make_dir(state);
    stw_write_model(dir, &base, "llama", "I32", 0);
    expect_error("model.embed_tokens.weight", "dtype I32 is not supported", "model.safetensors");
    remove_dir(state);

    make_dir(state);
    stw_write_model(dir, &base, "llama", "F33", 0);
    expect_error("model.safetensors", "dtype is missing or unknown (F33)", "tensor '");
    remove_dir(state);

    make_dir(state);
    stw_write_model(dir, &base, "gpt2", "F32", 0);
    expect_error("config.json", "gpt2", NULL);
    remove_dir(state);

    make_dir(state);
    stw_write_model(dir, &base, "llama", "F32", STW_SHARDED | STW_DROP_WK1);
    expect_error("model.safetensors.index.json", "model.layers.1.self_attn.k_proj.weight",
                 "missing");
    remove_dir(state);

    make_dir(state);
    expect_error("config.json", "cannot open", NULL);
    remove_dir(state);
}

/* A directory whose model.safetensors is a raw header; the config is `base`. */
static void expect_raw(const char *header, uint64_t data_len, const char *a, const char *b)
{
    stw_write_model(dir, &base, "llama", "F32", 0);
    char path[128];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    stw_write_raw(path, header, data_len);
    expect_error(a, b, path);
}

static void test_file_errors(void **state)
{
    make_dir(state);
    expect_raw("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12,
               "overlaps", "'a'");
    expect_raw("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 8,
               "tensor 'a'", "out of bounds");
    expect_raw("{\"w\":{\"dtype\":\"F32\",\"shape\":[3,3],\"data_offsets\":[0,32]}}", 32,
               "tensor 'w'", "36 bytes but data_offsets span 32");
    expect_raw("{\"w\":{\"dtype\":\"F32\",\"shape\":[-3],\"data_offsets\":[0,12]}}", 12,
               "tensor 'w'", "shape[0]");
    expect_raw("{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],"
               "\"data_offsets\":[0,12]}}", 12, "tensor 'w'", "overflows");
    expect_raw("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]", 8,
               "not well-formed JSON", NULL);
    expect_raw("{}", 0, "model.embed_tokens.weight", "missing");
    /* Truncated: a valid file cut short. */
    stw_write_model(dir, &base, "llama", "F32", 0);
    char path[128];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    assert_int_equal(truncate(path, 2000), 0);
    expect_error(path, "truncated", NULL);
    assert_int_equal(truncate(path, 5), 0);
    expect_error(path, "truncated", NULL);
    /* Header length over the 100 MB limit, and past the end of the file. */
    FILE *f = fopen(path, "wb");
    uint64_t big = 200000000;
    fwrite(&big, 8, 1, f);
    fputs("{}", f);
    fclose(f);
    expect_error(path, "exceeds the 100 MB limit", NULL);
    f = fopen(path, "wb");
    big = 5000;
    fwrite(&big, 8, 1, f);
    fputs("{}", f);
    fclose(f);
    expect_error(path, "truncated: header length 5000", NULL);
    remove_dir(state);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dtypes),
        cmocka_unit_test(test_qwen2_bias_tied),
        cmocka_unit_test(test_phi3_fused),
        cmocka_unit_test(test_sharded),
        cmocka_unit_test(test_model_errors),
        cmocka_unit_test(test_file_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
