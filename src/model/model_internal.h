/* model_internal.h — what the weight sources of the model layer share: the ec_model object with
 * its per-source operations, read-only file mappings, and each source's constructor. */
#ifndef ECOCOMPUTE_MODEL_INTERNAL_H
#define ECOCOMPUTE_MODEL_INTERNAL_H

#include "ecocompute/model.h"

enum { EC_MODEL_MAX_EOS = 8 }; /* Llama-3.1 lists 3 */

/* A source fills in cfg, source and its operations; model.c checks arguments before `read`. */
struct ec_model {
    ec_model_config cfg;
    char source[64];
    int (*read)(const ec_model *m, ec_tensor_kind k, int layer, float *out);
    void (*destroy)(ec_model *m); /* frees the source's state, not the ec_model itself */
    void *impl;
    int eos_ids[EC_MODEL_MAX_EOS]; /* [n_eos] ids that end generation (generation_config.json) */
    int n_eos;
};

/* A whole file mapped read-only (size 0 gives data = NULL). */
typedef struct {
    const unsigned char *data;
    size_t size;
} ec_mapped_file;
int ec_map_file(ec_mapped_file *f, const char *path);
void ec_unmap_file(ec_mapped_file *f);

/* Rejects configs whose shapes cannot describe a decoder (zero sizes, heads not dividing,
 * overflowing tensor sizes); `what` names the source in the message. */
int ec_model_config_check(const ec_model_config *c, const char *what);

int ec_synthetic_open(ec_model *m, const ec_model_config *c, const ec_model_options *o);
int ec_llama2c_open(ec_model *m, const char *path);
int ec_hf_open(ec_model *m, const char *dir);
/* Parses a Hugging Face config.json image text[0..len) into c (all but its name); `path` names
 * the file in errors. From memory so that the fuzzer needs no files. */
int ec_hf_config_parse(const unsigned char *text, size_t len, const char *path,
                       ec_model_config *c);

#endif
