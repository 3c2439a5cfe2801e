/* test_tokenizer.c — the llama2.c tokenizer format through the tokenizer interface: known
 * encodings of run.c, encode/decode round trips with tok512.bin and the Llama-2 tokenizer.bin,
 * byte fallback, malformed files. */
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
#include "ecocompute/tokenizer.h"
#include "test_data.h"

static char tok512[512], tok32k[512], sample[512];

static int setup(void **state)
{
    (void)state;
    test_data_path(tok512, sizeof tok512, "models/tok512.bin");
    test_data_path(tok32k, sizeof tok32k, "models/tokenizer.bin");
    test_data_path(sample, sizeof sample, "models/tinystories_sample.txt");
    return 0;
}

static ec_tokenizer *load(const char *path, int vocab)
{
    ec_tokenizer *t;
    if (ec_tokenizer_open(&t, path, vocab)) fail_msg("%s", ec_last_error());
    return t;
}

/* Encodes into a caller's buffer, as the tests below were written. */
static int encode(const ec_tokenizer *t, const char *text, int bos, int *out)
{
    int *ids, n = ec_tokenizer_encode(t, text, bos, &ids);
    assert_true(n >= 0);
    memcpy(out, ids, (size_t)n * sizeof *ids);
    free(ids);
    return n;
}

/* Decodes ids and checks the text. */
static void assert_decodes(const ec_tokenizer *t, const int *ids, int n, const char *want)
{
    char *text = ec_tokenizer_decode(t, ids, n, 1);
    assert_non_null(text);
    assert_string_equal(text, want);
    free(text);
}

static void test_known_encoding(void **state)
{
    (void)state;
    ec_tokenizer *t = load(tok32k, 32000);
    int ids[64];
    int n = encode(t, "Hello world", 1, ids);
    assert_int_equal(n, 3);
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[1], 15043);
    assert_int_equal(ids[2], 3186);
    n = encode(t, "", 1, ids);
    assert_int_equal(n, 1);
    n = encode(t, "", 0, ids);
    assert_int_equal(n, 0);
    /* A character missing from the vocabulary falls back to its UTF-8 bytes (<0xNN> = byte + 3). */
    n = encode(t, "\xf0\x9f\x98\x80", 0, ids); /* U+1F600 */
    assert_int_equal(n, 5);
    assert_int_equal(ids[1], 0xf0 + 3);
    assert_int_equal(ids[4], 0x80 + 3);
    assert_decodes(t, ids, n, " \xf0\x9f\x98\x80");
    /* A lone byte that is no character reads as U+FFFD. */
    assert_decodes(t, ids + 1, 1, "\xef\xbf\xbd");
    /* Decoding after BOS strips the dummy-prefix space; BOS itself is special. */
    assert_decodes(t, (const int[]){1, 15043, 3186}, 3, "Hello world");
    assert_decodes(t, (const int[]){15043, 3186}, 2, " Hello world");
    assert_null(ec_tokenizer_decode(t, (const int[]){1, 32000}, 2, 1));
    assert_non_null(strstr(ec_last_error(), "32000"));
    assert_int_equal(ec_tokenizer_vocab_size(t), 32000);
    /* Without the model's vocabulary size, every entry of the file. */
    ec_tokenizer *counted = load(tok512, 0);
    assert_int_equal(ec_tokenizer_vocab_size(counted), 512);
    ec_tokenizer_free(counted);
    assert_int_equal(ec_tokenizer_bos(t), 1);
    assert_int_equal(ec_tokenizer_eos(t), 2);
    assert_true(ec_tokenizer_is_special(t, 1) && !ec_tokenizer_is_special(t, 15043));
    /* "<s>" written in the text is the BOS token, as in chat prompts. */
    n = encode(t, "<s>Hello", 0, ids);
    assert_int_equal(n, 2);
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[1], 15043);
    ec_tokenizer_free(t);
}

/* Encodes text, decodes it back and compares (the dummy prefix space is dropped after BOS). */
static void round_trip(const ec_tokenizer *t, const char *text)
{
    size_t len = strlen(text);
    int *ids = malloc((len + 3) * sizeof *ids);
    char *back = malloc(len * 4 + 16);
    int n = encode(t, text, 1, ids);
    assert_true(n >= 1 && (size_t)n <= len + 3);
    free(back);
    back = ec_tokenizer_decode(t, ids, n, 1);
    assert_non_null(back);
    if (strcmp(back, text)) fail_msg("round trip differs:\n%s\n---\n%s", text, back);
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
    int n = encode(big, text, 1, ids);
    assert_true((size_t)n < strlen(text) / 3);
    free(ids);
    free(text);
    ec_tokenizer_free(small);
    ec_tokenizer_free(big);
}

/* The vocabulary straight from the file, independent of the loader under test. */
typedef struct {
    char *str[512];
    float score[512];
} raw_vocab;

static void read_raw_vocab(const char *path, raw_vocab *v)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    int32_t maxlen, len;
    assert_int_equal(fread(&maxlen, 4, 1, f), 1);
    for (int i = 0; i < 512; i++) {
        assert_int_equal(fread(&v->score[i], 4, 1, f), 1);
        assert_int_equal(fread(&len, 4, 1, f), 1);
        v->str[i] = calloc((size_t)len + 1, 1);
        assert_int_equal(fread(v->str[i], 1, (size_t)len, f), (size_t)len);
    }
    fclose(f);
}

static int raw_lookup(const raw_vocab *v, const char *s)
{
    for (int id = 0; id < 512; id++)
        if (!strcmp(s, v->str[id])) return id;
    return -1;
}

/* run.c's encoder for ASCII text, as written there: one token per character, then rescan for the
 * best-scoring adjacent pair (leftmost on ties), merge, repeat. The fast encoder must match it. */
static int reference_encode(const raw_vocab *v, const char *text, int *tok)
{
    int n = 0;
    tok[n++] = 1;
    tok[n++] = raw_lookup(v, " ");
    for (const char *c = text; *c; c++) {
        char one[2] = {*c, 0};
        int id = raw_lookup(v, one);
        tok[n++] = id >= 0 ? id : (unsigned char)*c + 3;
    }
    char buf[256];
    for (;;) {
        float best = -1e10f;
        int best_id = -1, best_i = -1;
        for (int i = 0; i + 1 < n; i++) {
            snprintf(buf, sizeof buf, "%s%s", v->str[tok[i]], v->str[tok[i + 1]]);
            int id = raw_lookup(v, buf);
            if (id >= 0 && v->score[id] > best) best = v->score[id], best_id = id, best_i = i;
        }
        if (best_i < 0) return n;
        tok[best_i] = best_id;
        memmove(tok + best_i + 1, tok + best_i + 2, (size_t)(n - best_i - 2) * sizeof *tok);
        n--;
    }
}

static void test_matches_reference(void **state)
{
    (void)state;
    ec_tokenizer *t = load(tok512, 512);
    raw_vocab v;
    read_raw_vocab(tok512, &v);
    char *text = read_text(sample);
    if (strlen(text) > 1500) text[1500] = '\0'; /* the reference is slow */
    for (char *c = text; *c; c++)
        if ((unsigned char)*c >= 0x80) *c = '?';
    size_t len = strlen(text);
    int *fast = malloc((len + 3) * sizeof *fast), *ref = malloc((len + 3) * sizeof *ref);
    int n = encode(t, text, 1, fast);
    int m = reference_encode(&v, text, ref);
    assert_true(m < (int)len * 3 / 4); /* merges really happened */
    assert_int_equal(n, m);
    assert_memory_equal(fast, ref, (size_t)n * sizeof *fast);
    for (int i = 0; i < 512; i++) free(v.str[i]);
    free(fast);
    free(ref);
    free(text);
    ec_tokenizer_free(t);
}

static void test_bad_files(void **state)
{
    (void)state;
    ec_tokenizer *t = NULL;
    /* Wrong vocab size: the file has 512 tokens. */
    assert_int_equal(ec_tokenizer_open(&t, tok512, 600), -1);
    assert_non_null(strstr(ec_last_error(), "truncated"));
    assert_int_equal(ec_tokenizer_open(&t, tok512, 300), -1);
    assert_non_null(strstr(ec_last_error(), "vocab_size"));
    assert_int_equal(ec_tokenizer_open(&t, tok512, 100), -1);
    assert_int_equal(ec_tokenizer_open(&t, "/nonexistent/tok.bin", 512), -1);
    assert_non_null(strstr(ec_last_error(), "/nonexistent/tok.bin"));
    /* A token length pointing past the end of the file. */
    char tmp[] = "/tmp/ec_tok_XXXXXX";
    int fd = mkstemp(tmp);
    int32_t hdr[3] = {10, 0, 1000};
    assert_int_equal(write(fd, hdr, sizeof hdr), (ssize_t)sizeof hdr);
    close(fd);
    assert_int_equal(ec_tokenizer_open(&t, tmp, 512), -1);
    assert_non_null(strstr(ec_last_error(), "token 0"));
    unlink(tmp);
    assert_null(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_encoding),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_matches_reference),
        cmocka_unit_test(test_bad_files),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
