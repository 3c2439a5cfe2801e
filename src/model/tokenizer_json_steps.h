/* tokenizer_json_steps.h — the text steps of a Hugging Face tokenizer.json around its model:
 * normalizers (NFC, Prepend, Replace), pre-tokenizers (Split by regex, ByteLevel, Metaspace),
 * the post-processor's added ids (TemplateProcessing) and decoders (ByteLevel, Replace,
 * ByteFallback, Fuse, Strip, Metaspace), each read from its JSON object and applied the way the
 * reference library applies it. */
#ifndef ECOCOMPUTE_TOKENIZER_JSON_STEPS_H
#define ECOCOMPUTE_TOKENIZER_JSON_STEPS_H

#include "tokenizer_internal.h"

#include <cjson/cJSON.h>
#include <stddef.h>

/* A piece of text (not NUL-terminated) the steps pass along. */
typedef struct {
    char *s;
    size_t len;
    int at_start; /* begins at byte 0 of the text being encoded (Metaspace's "first") */
} text_piece;

typedef struct {
    text_piece *v;
    size_t n, cap;
} piece_list;
int piece_list_push(piece_list *l, const char *s, size_t len, int at_start);
void piece_list_free(piece_list *l);

typedef struct json_steps json_steps;
/* Reads "normalizer", "pre_tokenizer", "post_processor" and "decoder" of the file's root; ids of
 * the post-processor's special tokens come from its own "special_tokens". Errors name `path`
 * and the field. */
int json_steps_load(json_steps **out, const cJSON *root, const char *path);
void json_steps_free(json_steps *s);

/* Normalizes text[0..len) into a malloc'd string (*out, *out_len). */
int json_steps_normalize(const json_steps *s, const char *text, size_t len, char **out,
                         size_t *out_len);
/* Splits one normalized piece into the words the model encodes (appended to words). */
int json_steps_pre_tokenize(const json_steps *s, const char *text, size_t len, int at_start,
                            piece_list *words);
/* The ids the post-processor puts before and after a single sequence. */
const ec_ids *json_steps_prefix(const json_steps *s);
const ec_ids *json_steps_suffix(const json_steps *s);
/* Decodes token pieces into one malloc'd string. */
char *json_steps_decode(const json_steps *s, const char *const *tokens, size_t n);

#endif
