/* tokenizer_internal.h — what the tokenizer formats share: the ec_tokenizer object with its
 * per-format operations, a growable id list, and each format's constructor. */
#ifndef ECOCOMPUTE_TOKENIZER_INTERNAL_H
#define ECOCOMPUTE_TOKENIZER_INTERNAL_H

#include "ecocompute/tokenizer.h"

#include <stddef.h>

/* A growable list of token ids. */
typedef struct {
    int *v;
    size_t n, cap;
} ec_ids;
int ec_ids_push(ec_ids *l, int id); /* 0, or -1 (error set) when out of memory */

typedef struct {
    /* Appends the ids of text[0..len) (no NUL needed) to out; add_special as in
     * ec_tokenizer_encode. */
    int (*encode)(const void *impl, const char *text, size_t len, int add_special, ec_ids *out);
    /* The text of ids (all valid), malloc'd. */
    char *(*decode)(const void *impl, const int *ids, int n, int skip_special);
    const char *(*piece)(const void *impl, int id);
    int (*find)(const void *impl, const char *piece);
    int (*is_special)(const void *impl, int id);
    void (*destroy)(void *impl);
} ec_tokenizer_ops;

/* A format's constructor fills these in; tokenizer.c owns the object. */
struct ec_tokenizer {
    ec_tokenizer_format format;
    const ec_tokenizer_ops *ops;
    void *impl;
    char *path;
    int vocab_size;
    int bos, eos;
    /* Formats that do not find special tokens inside text themselves (llama2.c, SentencePiece)
     * get their BOS/EOS pieces split out before encoding, so chat prompts work everywhere. */
    int split_specials;
};

int ec_tokenizer_json_open(ec_tokenizer *t, const char *path);
/* The tokenizer.json text[0..len) (named path in messages), without the tokenizer_config.json
 * that ec_tokenizer_json_open also reads: what the fuzz target drives. */
int ec_tokenizer_json_parse(ec_tokenizer *t, const char *text, size_t len, const char *path);
int ec_tokenizer_llama2c_open(ec_tokenizer *t, const char *path, int vocab_size);
int ec_tokenizer_sentencepiece_open(ec_tokenizer *t, const char *path);

/* The whole file (gunzipped when it is gzip) as a malloc'd NUL-terminated string of *len bytes;
 * NULL with ec_last_error() naming the file. */
char *ec_read_whole_file(const char *path, size_t *len);

/* Lossy UTF-8: bytes[0..n) with every maximal invalid subsequence replaced by U+FFFD, as
 * Rust's String::from_utf8_lossy and SentencePiece do; appended to a malloc'd string *out of
 * length *len (both updated). Returns 0 or -1 when out of memory. */
int ec_utf8_lossy_append(char **out, size_t *len, const unsigned char *bytes, size_t n);

#endif
