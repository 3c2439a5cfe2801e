/* test_tokenizer.c — the llama2.c tokenizer: known encodings of run.c, encode/decode round trips
 * with tok512.bin and the Llama-2 tokenizer.bin, byte fallback, malformed files. */
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

static char tok512[512], tok32k[512], sample[512];

static int setup(void **state)
{
    (void)state;
    const char *dir = getenv("EC_SHARED_DIR");
    if (!dir) dir = "/work/shared";
    snprintf(tok512, sizeof tok512, "%s/models/tok512.bin", dir);
    snprintf(tok32k, sizeof tok32k, "%s/models/tokenizer.bin", dir);
    snprintf(sample, sizeof sample, "%s/models/tinystories_sample.txt", dir);
    return 0;
}

static ec_tokenizer *load(const char *path, int vocab)
{
    ec_tokenizer *t;
    if (ec_tokenizer_load(&t, path, vocab)) fail_msg("%s", ec_last_error());
    return t;
}

static void test_known_encoding(void **state)
{
    (void)state;
    ec_tokenizer *t = load(tok32k, 32000);
    int ids[64];
    int n = ec_tokenizer_encode(t, "Hello world", 1, ids);
    assert_int_equal(n, 3);
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[1], 15043);
    assert_int_equal(ids[2], 3186);
    n = ec_tokenizer_encode(t, "", 1, ids);
    assert_int_equal(n, 1);
    n = ec_tokenizer_encode(t, "", 0, ids);
    assert_int_equal(n, 0);
    /* A character missing from the vocabulary falls back to its UTF-8 bytes (<0xNN> = byte + 3). */
    n = ec_tokenizer_encode(t, "\xf0\x9f\x98\x80", 0, ids); /* U+1F600 */
    assert_int_equal(n, 5);
    assert_int_equal(ids[1], 0xf0 + 3);
    assert_int_equal(ids[4], 0x80 + 3);
    assert_string_equal(ec_tokenizer_decode(t, ids[0], ids[1]), "\xf0");
    /* Decoding after BOS strips the dummy-prefix space. */
    assert_string_equal(ec_tokenizer_decode(t, 1, 15043), "Hello");
    assert_string_equal(ec_tokenizer_decode(t, 15043, 3186), " world");
    assert_string_equal(ec_tokenizer_decode(t, 1, 32000), "");
    ec_tokenizer_free(t);
}

/* Encodes text, decodes it back and compares (the dummy prefix space is dropped after BOS). */
static void round_trip(const ec_tokenizer *t, const char *text)
{
    size_t len = strlen(text);
    int *ids = malloc((len + 3) * sizeof *ids);
    char *back = malloc(len * 4 + 16);
    int n = ec_tokenizer_encode(t, text, 1, ids);
    assert_true(n >= 1 && (size_t)n <= len + 3);
    back[0] = '\0';
    size_t w = 0;
    for (int i = 1; i < n; i++) {
        const char *p = ec_tokenizer_decode(t, ids[i - 1], ids[i]);
        size_t pl = strlen(p);
        if (pl == 0 && ids[i] >= 3 && ids[i] < 259) pl = 1; /* the <0x00> byte */
        assert_true(w + pl <= len * 4 + 8);
        memcpy(back + w, p, pl);
        w += pl;
    }
    back[w] = '\0';
    if (w != len || memcmp(back, text, len)) fail_msg("round trip differs:\n%s\n---\n%s", text, back);
    free(ids);
    free(back);
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *s = malloc((size_t)n + 1);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = '\0';
    fclose(f);
    return s;
}

static void test_round_trip(void **state)
{
    (void)state;
    ec_tokenizer *small = load(tok512, 512), *big = load(tok32k, 32000);
    char *text = read_text(sample);
    const char *cases[] = {"Once upon a time, there was a little girl named Lily.",
                           "Ünïcödé ★ and 日本語 text\twith\ttabs\nand newlines",
                           "  leading spaces and trailing  ", text};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        round_trip(small, cases[i]);
        round_trip(big, cases[i]);
    }
    /* Merging shrinks text a lot with a trained vocabulary. */
    int *ids = malloc((strlen(text) + 3) * sizeof *ids);
    int n = ec_tokenizer_encode(big, text, 1, ids);
    assert_true((size_t)n < strlen(text) / 3);
    free(ids);
    free(text);
    ec_tokenizer_free(small);
    ec_tokenizer_free(big);
}

static void test_bad_files(void **state)
{
    (void)state;
    ec_tokenizer *t = NULL;
    /* Wrong vocab size: the file has 512 tokens. */
    assert_int_equal(ec_tokenizer_load(&t, tok512, 600), -1);
    assert_non_null(strstr(ec_last_error(), "truncated"));
    assert_int_equal(ec_tokenizer_load(&t, tok512, 300), -1);
    assert_non_null(strstr(ec_last_error(), "vocab_size"));
    assert_int_equal(ec_tokenizer_load(&t, tok512, 100), -1);
    assert_int_equal(ec_tokenizer_load(&t, "/nonexistent/tok.bin", 512), -1);
    assert_non_null(strstr(ec_last_error(), "/nonexistent/tok.bin"));
    /* A token length pointing past the end of the file. */
    char tmp[] = "/tmp/ec_tok_XXXXXX";
    int fd = mkstemp(tmp);
    int32_t hdr[3] = {10, 0, 1000};
    assert_int_equal(write(fd, hdr, sizeof hdr), (ssize_t)sizeof hdr);
    close(fd);
    assert_int_equal(ec_tokenizer_load(&t, tmp, 512), -1);
    assert_non_null(strstr(ec_last_error(), "token 0"));
    unlink(tmp);
    assert_null(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_encoding),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_bad_files),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
