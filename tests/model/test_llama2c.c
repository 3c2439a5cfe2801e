/* test_llama2c.c — llama2.c checkpoints: the 260K TinyStories model in versions 0 and 1 gives the
 * expected config and bit-identical tensors; truncated or inconsistent files are rejected. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "ecocompute/common.h"
#include "ecocompute/model.h"
#include "test_data.h"

static char v0[512], v1[512];

static int setup(void **state)
{
    (void)state;
    test_data_path(v0, sizeof v0, "models/stories260K.bin");
    test_data_path(v1, sizeof v1, "models/stories260K_v1.bin");
    return 0;
}

static ec_model *open_ok(const char *path)
{
    ec_model *m;
    if (ec_model_open(&m, path, NULL)) fail_msg("%s", ec_last_error());
    return m;
}

static void test_config(void **state)
{
    (void)state;
    ec_model *m = open_ok(v0);
    const ec_model_config *c = ec_model_config_of(m);
    assert_int_equal(c->dim, 64);
    assert_int_equal(c->hidden_dim, 172);
    assert_int_equal(c->n_layers, 5);
    assert_int_equal(c->n_heads, 8);
    assert_int_equal(c->n_kv_heads, 4);
    assert_int_equal(c->head_dim, 8);
    assert_int_equal(c->vocab_size, 512);
    assert_int_equal(c->max_seq_len, 512);
    assert_true(c->tied_embeddings);
    assert_true(c->rope_interleaved);
    assert_false(c->qkv_bias);
    assert_true(c->norm_eps == 1e-5f && c->rope_theta == 10000.f);
    assert_int_equal(ec_model_param_count(c), 260032);
    assert_string_equal(ec_model_source(m), "llama2c-v0");
    ec_model_close(m);
}

static void test_v0_equals_v1(void **state)
{
    (void)state;
    ec_model *a = open_ok(v0), *b = open_ok(v1);
    assert_string_equal(ec_model_source(b), "llama2c-v1");
    const ec_model_config *c = ec_model_config_of(a);
    float *x = malloc(512 * 64 * sizeof *x), *y = malloc(512 * 64 * sizeof *y);
    for (int k = 0; k < EC_T_COUNT; k++) {
        if (k == EC_T_BQ || k == EC_T_BK || k == EC_T_BV) continue;
        for (int l = 0; l < c->n_layers; l++) {
            int r, n;
            ec_tensor_shape(c, (ec_tensor_kind)k, &r, &n);
            assert_int_equal(ec_model_read_tensor(a, (ec_tensor_kind)k, l, x), 0);
            assert_int_equal(ec_model_read_tensor(b, (ec_tensor_kind)k, l, y), 0);
            assert_memory_equal(x, y, (size_t)r * (size_t)n * sizeof *x);
        }
    }
    /* Known values: RMSNorm gains are trained away from 1 but stay O(1); the embedding is not 0. */
    assert_int_equal(ec_model_read_tensor(a, EC_T_FINAL_NORM, 0, x), 0);
    for (int i = 0; i < 64; i++) assert_true(x[i] > 0.01f && x[i] < 20.f);
    free(x);
    free(y);
    ec_model_close(a);
    ec_model_close(b);
}

/* Writes the first `len` bytes of src (then `extra` zero bytes) to a temporary file. */
static void write_prefix(const char *src, long len, long extra, char *tmp)
{
    FILE *in = fopen(src, "rb");
    assert_non_null(in);
    strcpy(tmp, "/tmp/ec_l2c_XXXXXX");
    int fd = mkstemp(tmp);
    assert_true(fd >= 0);
    FILE *out = fdopen(fd, "wb");
    for (long i = 0; i < len; i++) fputc(fgetc(in), out);
    for (long i = 0; i < extra; i++) fputc(0, out);
    fclose(in);
    fclose(out);
}

static void expect_reject(const char *src, long len, long extra, const char *what)
{
    char tmp[64];
    write_prefix(src, len, extra, tmp);
    ec_model *m = NULL;
    int rc = ec_model_open(&m, tmp, NULL);
    unlink(tmp);
    if (rc == 0) fail_msg("%s (%ld bytes + %ld) was accepted", src, len, extra);
    assert_null(m);
    if (!strstr(ec_last_error(), what) || !strstr(ec_last_error(), tmp))
        fail_msg("message '%s' lacks '%s' or the file name", ec_last_error(), what);
}

static void test_truncated(void **state)
{
    (void)state;
    expect_reject(v0, 1056540 - 4, 0, "truncated: freq_cis");
    expect_reject(v0, 200000, 0, "truncated: wq");
    expect_reject(v0, 50000, 0, "truncated: tok_emb");
    expect_reject(v0, 20, 0, "truncated");
    expect_reject(v1, 1040384 - 1, 0, "truncated: w_up");
    expect_reject(v1, 200, 0, "truncated");
    expect_reject(v1, 1040384, 8, "bytes after the last tensor");
    expect_reject(v0, 0, 0, "truncated");
}

static void test_bad_header(void **state)
{
    (void)state;
    /* v0 header claiming 3 heads for dim 64 and 2 KV heads. */
    char tmp[] = "/tmp/ec_l2c_XXXXXX";
    int fd = mkstemp(tmp);
    int32_t h[7] = {64, 172, 5, 3, 2, 512, 512};
    assert_int_equal(write(fd, h, sizeof h), (ssize_t)sizeof h);
    close(fd);
    ec_model *m;
    assert_int_equal(ec_model_open(&m, tmp, NULL), -1);
    assert_non_null(strstr(ec_last_error(), "n_kv_heads"));
    /* Hostile sizes must not overflow the size computation. */
    int32_t big[7] = {1 << 20, 1 << 30, 1 << 30, 1, 1, 1 << 20, 2};
    fd = open(tmp, O_WRONLY | O_TRUNC);
    assert_int_equal(write(fd, big, sizeof big), (ssize_t)sizeof big);
    close(fd);
    assert_int_equal(ec_model_open(&m, tmp, NULL), -1);
    unlink(tmp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_v0_equals_v1),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_bad_header),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
