/* st_writer.h — a minimal safetensors and config.json writer for the tests: builds Hugging Face
 * model directories for small Llama-family configs with known weight values. */
#ifndef EC_TEST_ST_WRITER_H
#define EC_TEST_ST_WRITER_H

#include <stdint.h>

#include "ecocompute/model.h"

/* The value every loader must return for element i of (kind, layer): multiples of 1/8 in [-1, 1],
 * exact in F32, F16 and BF16. */
float stw_value(ec_tensor_kind k, int layer, uint64_t i);

/* Layout variants of the model directory. */
enum {
    STW_FUSED = 1,      /* Phi-3: qkv_proj and gate_up_proj */
    STW_SHARDED = 2,    /* two shards + model.safetensors.index.json */
    STW_DROP_WK1 = 4,   /* omit layer 1's k_proj */
    STW_BAD_SHAPE = 8,  /* down_proj of layer 0 with its dims swapped */
};

/* Element i of tensor (kind, layer). */
typedef float (*stw_value_fn)(ec_tensor_kind k, int layer, uint64_t i);

/* Writes config.json (c's shapes, norm_eps, rope_theta, rope scaling, tie) and the weights of
 * config c, element i of (kind, layer) being value(kind, layer, i), in dtype ("F32", "F16",
 * "BF16", or any other name, written as 4-byte elements) into dir; model_type "llama",
 * "mistral", "qwen2" or "phi3". extra_json ("" or `"key": value` pairs without a leading comma)
 * is added to config.json. */
void stw_write_model_values(const char *dir, const ec_model_config *c, const char *model_type,
                            const char *dtype, int flags, stw_value_fn value,
                            const char *extra_json);
/* The same with stw_value and no extra fields. */
void stw_write_model(const char *dir, const ec_model_config *c, const char *model_type,
                     const char *dtype, int flags);
/* Writes a safetensors file from a raw header text and `data_len` zero bytes of data. */
void stw_write_raw(const char *path, const char *header, uint64_t data_len);

#endif
