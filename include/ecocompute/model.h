/* ecocompute/model.h — Llama-family model definitions, the built-in catalog, and weight sources
 * (synthetic, Hugging Face safetensors, llama2.c checkpoints). Tokenizers: ecocompute/tokenizer.h.
 *
 * A model is a config plus a source that yields any tensor as float32 on demand, so a backend
 * uploads tensor by tensor in its own format without the whole model ever existing in float32.
 * Tensor shapes follow PyTorch nn.Linear: [out_features][in_features], row-major. */
#ifndef ECOCOMPUTE_MODEL_H
#define ECOCOMPUTE_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "ecocompute/quant.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How rotary frequencies are rescaled for long contexts (config.json's rope_scaling). */
typedef enum {
    EC_ROPE_SCALING_NONE = 0,
    EC_ROPE_SCALING_LLAMA3, /* Llama-3.1: long wavelengths / factor, short kept, the band between
                             * blended */
    EC_ROPE_SCALING_LINEAR, /* position interpolation: every frequency / factor */
} ec_rope_scaling;

typedef struct {
    char name[64];
    int dim;          /* hidden size */
    int hidden_dim;   /* MLP intermediate size */
    int n_layers;
    int n_heads;
    int n_kv_heads;   /* grouped-query attention: n_heads % n_kv_heads == 0 */
    int head_dim;     /* usually dim / n_heads */
    int vocab_size;
    int max_seq_len;
    float norm_eps;   /* RMSNorm epsilon */
    float rope_theta;
    /* Rope scaling parameters (rope_scaling says which apply): factor for llama3 and linear;
     * low/high frequency factors and the original context (positions) for llama3 only. */
    float rope_scaling_factor, rope_low_freq_factor, rope_high_freq_factor;
    int rope_original_max_pos;
    int qkv_bias;         /* Qwen2: q/k/v projections carry a bias */
    int tied_embeddings;  /* output head shares the token embedding */
    /* Rotary convention. 1: llama2.c/Meta, rotate adjacent pairs (2i, 2i+1) of each head.
     * 0: Hugging Face rotate-half, pairs (i, i + head_dim/2); HF permutes the rows of wq/wk so
     * both give the same model. Synthetic models use 0. */
    int rope_interleaved;
    ec_rope_scaling rope_scaling; /* EC_ROPE_SCALING_NONE: the factors above are unused */
} ec_model_config;

/* The tensors of a decoder; per-layer kinds take a layer index, the others ignore it. */
typedef enum {
    EC_T_TOK_EMB = 0, /* [vocab][dim] */
    EC_T_ATTN_NORM,   /* [dim] per layer */
    EC_T_WQ,          /* [n_heads*head_dim][dim] */
    EC_T_WK,          /* [n_kv_heads*head_dim][dim] */
    EC_T_WV,          /* [n_kv_heads*head_dim][dim] */
    EC_T_BQ,          /* [n_heads*head_dim] (qkv_bias only) */
    EC_T_BK,          /* [n_kv_heads*head_dim] (qkv_bias only) */
    EC_T_BV,          /* [n_kv_heads*head_dim] (qkv_bias only) */
    EC_T_WO,          /* [dim][n_heads*head_dim] */
    EC_T_FFN_NORM,    /* [dim] per layer */
    EC_T_W_GATE,      /* [hidden_dim][dim] (w1) */
    EC_T_W_UP,        /* [hidden_dim][dim] (w3) */
    EC_T_W_DOWN,      /* [dim][hidden_dim] (w2) */
    EC_T_FINAL_NORM,  /* [dim] */
    EC_T_LM_HEAD,     /* [vocab][dim] (the embedding when tied) */
    EC_T_COUNT
} ec_tensor_kind;

const char *ec_tensor_kind_name(ec_tensor_kind k);
/* Shape of a tensor: 2-D tensors give rows x cols, 1-D give rows = 1, cols = length. */
void ec_tensor_shape(const ec_model_config *c, ec_tensor_kind k, int *rows, int *cols);
int ec_tensor_is_linear(ec_tensor_kind k); /* quantizable projection (q,k,v,o,gate,up,down) */
int ec_tensor_is_per_layer(ec_tensor_kind k); /* one per layer (norms, projections, biases) */
uint64_t ec_tensor_numel(const ec_model_config *c, ec_tensor_kind k); /* rows * cols */
uint64_t ec_model_param_count(const ec_model_config *c);
/* Bytes of all weights when linear layers are stored in `prec` and everything else (embedding,
 * head, norms, biases) in 16-bit, the engine's default; a tied head is counted once. */
uint64_t ec_model_weight_bytes(const ec_model_config *c, ec_precision prec);

/* Built-in catalog: exact shapes from each model's public config.json, plus `tiny` and `small`. */
size_t ec_catalog_count(void);
const ec_model_config *ec_catalog_get(size_t i);
const ec_model_config *ec_catalog_find(const char *name); /* case-insensitive; NULL if absent */
/* The catalog model a source's name refers to ("mistralai/Mistral-7B-Instruct-v0.2",
 * "Qwen2.5-3B"...): org prefix dropped, matched on the name up to its size token ("7B"); NULL if
 * none. */
const ec_model_config *ec_catalog_match(const char *name);
/* The lowercased "family-size" key of a model name used for that match ("mistral-7b"). */
void ec_model_family_key(const char *name, char *key, size_t cap);

typedef struct {
    uint64_t seed;       /* synthetic weights: same seed → bit-identical weights */
    int outliers;        /* synthetic: hidden dims carrying outlier activations; -1 = default */
    float outlier_mag;   /* magnitude of those activations after normalisation; 0 = default */
    int threads;         /* synthetic generation threads; 0 = all cores (result is identical) */
} ec_model_options;
void ec_model_options_default(ec_model_options *o);

typedef struct ec_model ec_model;
/* Opens a model: a catalog name (synthetic weights), a Hugging Face directory (config.json +
 * model.safetensors[.index.json]) or a llama2.c checkpoint file (.bin, version 0 or 1).
 * Returns 0, or -1 with ec_last_error() naming the file, the tensor and what is wrong. */
int ec_model_open(ec_model **out, const char *name_or_path, const ec_model_options *opts);
const ec_model_config *ec_model_config_of(const ec_model *m);
const char *ec_model_source(const ec_model *m); /* "synthetic(seed=…)", "safetensors", "llama2c-v1" */
/* The token ids that end generation: a Hugging Face directory's generation_config.json
 * `eos_token_id` (one id or a list), else config.json's; *ids points into the model. Returns
 * the count, 0 when the source names none (catalog models, llama2.c: the tokenizer's EOS). */
int ec_model_eos_ids(const ec_model *m, const int **ids);
/* Writes tensor (kind, layer) as float32 into out (rows*cols floats). Thread-safe. */
int ec_model_read_tensor(const ec_model *m, ec_tensor_kind k, int layer, float *out);
void ec_model_close(ec_model *m);

/* ---- tensor parallelism (src/model/shard.c) ----
 * Rank r of `world` holds 1/world of the query heads, kv heads and MLP width: q, k, v (and their
 * biases), gate and up keep their output rows of those, o and down their input columns, so o and
 * down yield partial sums that add up, over the ranks, to the full model's; the embedding, the
 * norms and the head are whole on every rank. */
/* 0 when `c` splits over `world` ranks (kv heads and MLP width divisible), else -1 naming why. */
int ec_model_shardable(const ec_model_config *c, int world);
/* The config of one rank's share (checked by ec_model_shardable first). */
void ec_model_shard_config(const ec_model_config *c, int world, ec_model_config *out);
/* A view of rank `rank`'s share of `full`, which must outlive it; close it with
 * ec_model_close. Returns 0 or -1 (ec_last_error). */
int ec_model_shard(ec_model **out, const ec_model *full, int rank, int world);

/* Counter-based synthetic generator: element i of tensor (kind, layer) is a pure function of
 * (seed, kind, layer, i), so any slice can be produced on any thread or on the GPU. Returns a
 * standard-normal-like value; the model scales it per tensor. */
float ec_synth_normal(uint64_t seed, ec_tensor_kind k, int layer, uint64_t i);

#ifdef __cplusplus
}
#endif
#endif
