/* bpe.h — the BPE model of Hugging Face tokenizer.json files: a vocabulary of pieces, ranked
 * merges, byte fallback and unknown-token handling, applied to one pre-tokenized word. */
#ifndef ECOCOMPUTE_BPE_H
#define ECOCOMPUTE_BPE_H

#include "tokenizer_internal.h"

#include <cjson/cJSON.h>
#include <stddef.h>

typedef struct bpe_model bpe_model;

/* Reads tokenizer.json's "model" object (type BPE). Errors name `path` and the field. */
int bpe_load(bpe_model **out, const cJSON *model, const char *path);
void bpe_free(bpe_model *m);
/* Appends the ids of word[0..len) (the merges applied lowest rank first, leftmost first on
 * ties, as Hugging Face's BPE does). */
int bpe_encode_word(const bpe_model *m, const char *word, size_t len, ec_ids *out);
int bpe_find(const bpe_model *m, const char *piece, size_t len); /* id, or -1 */
const char *bpe_piece(const bpe_model *m, int id);               /* NULL when unused */
int bpe_size(const bpe_model *m);                                /* largest id + 1 */

#endif
