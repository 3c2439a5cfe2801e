/* sentencepiece_shim.h — a C interface to the parts of libsentencepiece's C++ processor that the
 * tokenizer uses (sentencepiece_shim.cpp; built only when the library is found). */
#ifndef ECOCOMPUTE_SENTENCEPIECE_SHIM_H
#define ECOCOMPUTE_SENTENCEPIECE_SHIM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ec_sp ec_sp;
/* Loads a tokenizer.model; NULL with the library's message in err. */
ec_sp *ec_sp_open(const char *path, char *err, size_t err_len);
void ec_sp_free(ec_sp *sp);
/* The ids of text[0..len) into *ids (malloc'd); the count, or -1. */
int ec_sp_encode(const ec_sp *sp, const char *text, size_t len, int **ids);
/* The text of ids, malloc'd; control tokens (BOS, EOS) decode to nothing. NULL on failure. */
char *ec_sp_decode(const ec_sp *sp, const int *ids, int n);
const char *ec_sp_piece(const ec_sp *sp, int id); /* stays valid while sp is open */
int ec_sp_find(const ec_sp *sp, const char *piece); /* -1 when absent (or the unknown id) */
int ec_sp_size(const ec_sp *sp);
int ec_sp_bos(const ec_sp *sp);
int ec_sp_eos(const ec_sp *sp);
int ec_sp_is_control(const ec_sp *sp, int id); /* BOS, EOS and other control tokens, unknown */

#ifdef __cplusplus
}
#endif
#endif
