/* test_hf_config.c — the config.json fields of the seed architectures that change the
 * computation: rope_scaling (default, linear, llama3 read; longrope, yarn, dynamic refused),
 * sliding windows (cap the context; Qwen2 only with use_sliding_window), fields the decoder
 * cannot compute (attention_bias, mlp_bias, partial_rotary_factor), generation_config.json's
 * end-of-sequence ids, and a shard the index names but the directory lacks: every refusal is one
 * message naming the file and the field. */
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

/* dim 16, hidden 40, 2 layers, 4 heads of 4, 2 KV heads, vocab 24, 128 positions. */
static const ec_model_config base = {"test", 16, 40, 2, 4, 2, 4, 24, 128, 1e-6f, 5e5f,
                                     0, 0, 0, 0, 0, 0, 0, 0};

static char dir[64];

static void make_dir(void)
{
    strcpy(dir, "/tmp/ec_hfc_XXXXXX");
    assert_non_null(mkdtemp(dir));
}

static void remove_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* A fresh directory holding c (as model_type mt; Qwen2 with its biases) with extra config.json
 * fields. */
static void write_dir(const char *mt, const ec_model_config *c, const char *extra)
{
    ec_model_config w = *c;
    w.qkv_bias = !strcmp(mt, "qwen2");
    make_dir();
    stw_write_model_values(dir, &w, mt, "F32", 0, stw_value, extra);
}

static void write_text(const char *name, const char *text)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static ec_model *open_ok(void)
{
    ec_model *m;
    if (ec_model_open(&m, dir, NULL)) fail_msg("%s", ec_last_error());
    return m;
}

/* Opening dir fails with one line holding every needle. */
static void expect_refused(const char *a, const char *b, const char *c)
{
    ec_model *m = NULL;
    if (ec_model_open(&m, dir, NULL) == 0) fail_msg("accepted; expected '%s'", a);
    const char *e = ec_last_error();
    if (strchr(e, '\n') || !strstr(e, a) || (b && !strstr(e, b)) || (c && !strstr(e, c)))
        fail_msg("message '%s' lacks '%s' / '%s' / '%s'", e, a, b ? b : "", c ? c : "");
}

static void rope_scaling_types_read(void **state)
{
    (void)state;
    ec_model_config c = base;
    c.rope_scaling = EC_ROPE_SCALING_LLAMA3;
    c.rope_scaling_factor = 8, c.rope_low_freq_factor = 1, c.rope_high_freq_factor = 4;
    c.rope_original_max_pos = 8192;
    write_dir("llama", &c, "");
    ec_model *m = open_ok();
    const ec_model_config *got = ec_model_config_of(m);
    assert_int_equal(got->rope_scaling, EC_ROPE_SCALING_LLAMA3);
    assert_true(got->rope_scaling_factor == 8 && got->rope_low_freq_factor == 1 &&
                got->rope_high_freq_factor == 4 && got->rope_original_max_pos == 8192);
    ec_model_close(m);
    remove_dir();

    c.rope_scaling = EC_ROPE_SCALING_LINEAR;
    c.rope_scaling_factor = 2;
    write_dir("llama", &c, "");
    m = open_ok();
    assert_int_equal(ec_model_config_of(m)->rope_scaling, EC_ROPE_SCALING_LINEAR);
    assert_true(ec_model_config_of(m)->rope_scaling_factor == 2);
    ec_model_close(m);
    remove_dir();

    /* rope_type "default" is what newer transformers write for none. */
    write_dir("qwen2", &base, "");
    write_text("config.json", "{\"model_type\":\"qwen2\",\"hidden_size\":16,\"intermediate_size\":"
               "40,\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,"
               "\"vocab_size\":24,\"rope_scaling\":{\"rope_type\":\"default\"}}");
    m = open_ok();
    assert_int_equal(ec_model_config_of(m)->rope_scaling, EC_ROPE_SCALING_NONE);
    ec_model_close(m);
    remove_dir();

    /* transformers 5 writes rope_parameters, rope_theta inside. */
    write_dir("llama", &base, "");
    write_text("config.json", "{\"model_type\":\"llama\",\"hidden_size\":16,\"intermediate_size\":"
               "40,\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,"
               "\"vocab_size\":24,\"rope_parameters\":{\"rope_type\":\"llama3\",\"rope_theta\":"
               "500000.0,\"factor\":8.0,\"low_freq_factor\":1.0,\"high_freq_factor\":4.0,"
               "\"original_max_position_embeddings\":8192}}");
    m = open_ok();
    assert_int_equal(ec_model_config_of(m)->rope_scaling, EC_ROPE_SCALING_LLAMA3);
    assert_true(ec_model_config_of(m)->rope_theta == 5e5f);
    ec_model_close(m);
    remove_dir();
}

static void rope_scaling_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *rope, *needle, *field;
    } cases[] = {
        /* Phi-3-mini-128k / Phi-3.5 */
        {"{\"type\":\"longrope\",\"short_factor\":[1],\"long_factor\":[2]}", "'longrope'",
         "'rope_scaling.type'"},
        {"{\"rope_type\":\"yarn\",\"factor\":4.0,\"original_max_position_embeddings\":32768}",
         "'yarn'", "'rope_scaling.rope_type'"},
        {"{\"type\":\"dynamic\",\"factor\":2.0}", "'dynamic'", "not supported"},
        {"{\"rope_type\":\"llama3\",\"factor\":8.0,\"high_freq_factor\":4.0,"
         "\"original_max_position_embeddings\":8192}", "'rope_scaling.low_freq_factor'",
         "positive number"},
        {"{\"rope_type\":\"llama3\",\"factor\":8.0,\"low_freq_factor\":4.0,\"high_freq_factor\":"
         "1.0,\"original_max_position_embeddings\":8192}", "'rope_scaling.high_freq_factor'",
         "exceed"},
        {"{\"rope_type\":\"linear\",\"factor\":0}", "'rope_scaling.factor'", "positive"},
        /* Positive or finite as a double, 0 or infinite as the float the engine keeps. */
        {"{\"rope_type\":\"linear\",\"factor\":1e-50}", "'rope_scaling.factor'", "positive"},
        {"{\"rope_type\":\"linear\",\"factor\":1e300}", "'rope_scaling.factor'", "positive"},
        {"{\"rope_type\":\"llama3\",\"factor\":8.0,\"low_freq_factor\":1.0,\"high_freq_factor\":"
         "4.0,\"original_max_position_embeddings\":1e-50}",
         "'rope_scaling.original_max_position_embeddings'", "positive"},
        {"{\"rope_type\":\"llama3\",\"factor\":8.0,\"low_freq_factor\":1.0,\"high_freq_factor\":"
         "4.0,\"original_max_position_embeddings\":2147483648}",
         "'rope_scaling.original_max_position_embeddings'", "not an integer"},
        {"{\"factor\":2.0}", "'rope_scaling.rope_type'", "missing"},
        {"[1]", "'rope_scaling'", "not an object"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char extra[512];
        write_dir("llama", &base, "");
        snprintf(extra, sizeof extra,
                 "{\"model_type\":\"phi3\",\"hidden_size\":16,\"intermediate_size\":40,"
                 "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,"
                 "\"vocab_size\":24,\"rope_scaling\":%s}", cases[i].rope);
        write_text("config.json", extra);
        expect_refused("config.json", cases[i].needle, cases[i].field);
        remove_dir();
    }
}

static void sliding_window_caps_context(void **state)
{
    (void)state;
    static const struct {
        const char *mt, *extra;
        int max_seq;
    } cases[] = {
        {"mistral", "\"sliding_window\":32", 32},      /* Mistral-7B-v0.1 style */
        {"phi3", "\"sliding_window\":47", 47},         /* Phi-3-mini-4k: 2047 of 4096 */
        {"mistral", "\"sliding_window\":null", 128},   /* Mistral-7B-v0.2 */
        {"mistral", "\"sliding_window\":4096", 128},   /* wider than the context */
        {"qwen2", "\"sliding_window\":32,\"use_sliding_window\":false", 128},
        {"qwen2", "\"sliding_window\":32", 128},
        {"qwen2", "\"sliding_window\":32,\"use_sliding_window\":true", 32},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        write_dir(cases[i].mt, &base, cases[i].extra);
        ec_model *m = open_ok();
        if (ec_model_config_of(m)->max_seq_len != cases[i].max_seq)
            fail_msg("%s %s: max_seq_len %d, want %d", cases[i].mt, cases[i].extra,
                     ec_model_config_of(m)->max_seq_len, cases[i].max_seq);
        ec_model_close(m);
        remove_dir();
    }
}

static void uncomputable_fields_refused(void **state)
{
    (void)state;
    write_dir("llama", &base, "\"attention_bias\":true");
    expect_refused("config.json", "'attention_bias' is true", "not supported");
    remove_dir();
    write_dir("llama", &base, "\"attention_bias\":false,\"mlp_bias\":false");
    ec_model_close(open_ok());
    remove_dir();
    write_dir("llama", &base, "\"mlp_bias\":true");
    expect_refused("config.json", "'mlp_bias'", NULL);
    remove_dir();
    write_dir("phi3", &base, "\"partial_rotary_factor\":0.75");
    expect_refused("config.json", "'partial_rotary_factor' is 0.75", NULL);
    remove_dir();
    write_dir("llama", &base, "\"sliding_window\":\"wide\"");
    expect_refused("config.json", "'sliding_window'", "integer");
    remove_dir();
}

static void generation_config_eos(void **state)
{
    (void)state;
    const int *ids;
    /* Llama-3.1-Instruct: a list in generation_config.json wins over config.json's one id. */
    write_dir("llama", &base, "\"eos_token_id\":5");
    write_text("generation_config.json", "{\"bos_token_id\":1,\"eos_token_id\":[2,7,9]}");
    ec_model *m = open_ok();
    assert_int_equal(ec_model_eos_ids(m, &ids), 3);
    assert_true(ids[0] == 2 && ids[1] == 7 && ids[2] == 9);
    ec_model_close(m);
    remove_dir();
    /* No generation_config.json: config.json's. */
    write_dir("llama", &base, "\"eos_token_id\":5");
    m = open_ok();
    assert_int_equal(ec_model_eos_ids(m, &ids), 1);
    assert_int_equal(ids[0], 5);
    ec_model_close(m);
    remove_dir();
    /* A generation_config.json without one: config.json's. */
    write_dir("llama", &base, "\"eos_token_id\":5");
    write_text("generation_config.json", "{\"do_sample\":true}");
    m = open_ok();
    assert_int_equal(ec_model_eos_ids(m, &ids), 1);
    ec_model_close(m);
    remove_dir();
    write_dir("llama", &base, "");
    m = open_ok();
    assert_int_equal(ec_model_eos_ids(m, &ids), 0);
    ec_model_close(m);
    remove_dir();

    static const struct {
        const char *text, *needle;
    } bad[] = {
        {"{\"eos_token_id\":\"</s>\"}", "must be a token id"},
        {"{\"eos_token_id\":[2,-1]}", "must be a token id"},
        {"{\"eos_token_id\":24}", "id 24 is outside the vocabulary (24 tokens)"},
        {"{\"eos_token_id\":[1,2,3,4,5,6,7,8,9]}", "lists 9 ids"},
        {"{\"eos_token_id\":2", "not a well-formed JSON object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        write_dir("llama", &base, "");
        write_text("generation_config.json", bad[i].text);
        expect_refused("generation_config.json", bad[i].needle, NULL);
        remove_dir();
    }
}

static void index_errors(void **state)
{
    (void)state;
    char path[128];
    make_dir();
    stw_write_model(dir, &base, "mistral", "F32", STW_SHARDED);
    snprintf(path, sizeof path, "%s/model-00002-of-00002.safetensors", dir);
    assert_int_equal(unlink(path), 0);
    expect_refused("model.safetensors.index.json", "shard 'model-00002-of-00002.safetensors'",
                   "not in the directory");
    remove_dir();

    static const struct {
        const char *index, *needle;
    } bad[] = {
        {"{\"weight_map\":[]}", "no weight_map object"},
        {"{\"weight_map\":{\"model.norm.weight\":\"../x.safetensors\"}}", "shard must be a file"},
        {"{\"weight_map\":{\"model.norm.weight\":7}}", "'model.norm.weight'"},
        {"{\"weight_map\":{}}", "is missing"},
        {"{\"weight_map\":", "not a well-formed JSON object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        make_dir();
        stw_write_model(dir, &base, "mistral", "F32", STW_SHARDED);
        write_text("model.safetensors.index.json", bad[i].index);
        expect_refused("model.safetensors.index.json", bad[i].needle, NULL);
        remove_dir();
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rope_scaling_types_read),
        cmocka_unit_test(rope_scaling_refusals),
        cmocka_unit_test(sliding_window_caps_context),
        cmocka_unit_test(uncomputable_fields_refused),
        cmocka_unit_test(generation_config_eos),
        cmocka_unit_test(index_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
