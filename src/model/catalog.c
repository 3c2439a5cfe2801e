/* catalog.c — the built-in models: exact shapes from each model's public config.json (hidden_size,
 * intermediate_size, layers, heads, KV heads, vocab, max_position_embeddings, rms_norm_eps,
 * rope_theta, rope_scaling, tie_word_embeddings), plus the test shapes `tiny` and `small`. */
#include "ecocompute/model.h"

#include <strings.h>

/* name, dim, hidden, layers, heads, kv_heads, head_dim, vocab, max_seq, eps, theta,
 * rope scaling (factor, low, high, original max), qkv_bias, tied, rope_interleaved */
static const ec_model_config catalog[] = {
    /* Test shapes: vocab sizes of tok512.bin / tokenizer.bin so real tokenizers fit them. */
    {"tiny", 128, 384, 5, 4, 2, 32, 512, 4096, 1e-5f, 10000.f, 0, 0, 0, 0, 0, 1, 0},
    {"small", 512, 1376, 5, 8, 4, 64, 32000, 4096, 1e-5f, 10000.f, 0, 0, 0, 0, 0, 1, 0},
    {"Qwen2.5-0.5B", 896, 4864, 24, 14, 2, 64, 151936, 32768, 1e-6f, 1e6f, 0, 0, 0, 0, 1, 1, 0},
    {"TinyLlama-1.1B", 2048, 5632, 22, 32, 4, 64, 32000, 2048, 1e-5f, 1e4f, 0, 0, 0, 0, 0, 0, 0},
    {"Qwen2-1.5B", 1536, 8960, 28, 12, 2, 128, 151936, 131072, 1e-6f, 1e6f, 0, 0, 0, 0, 1, 1, 0},
    {"Qwen2.5-3B", 2048, 11008, 36, 16, 2, 128, 151936, 32768, 1e-6f, 1e6f, 0, 0, 0, 0, 1, 1, 0},
    {"Phi-3-mini-4k", 3072, 8192, 32, 32, 32, 96, 32064, 4096, 1e-5f, 1e4f, 0, 0, 0, 0, 0, 0, 0},
    {"Yi-1.5-6B", 4096, 11008, 32, 32, 4, 128, 64000, 4096, 1e-6f, 5e6f, 0, 0, 0, 0, 0, 0, 0},
    {"Mistral-7B-v0.2", 4096, 14336, 32, 32, 8, 128, 32000, 32768, 1e-5f, 1e6f, 0, 0, 0, 0, 0, 0,
     0},
    {"Qwen2-7B", 3584, 18944, 28, 28, 4, 128, 152064, 131072, 1e-6f, 1e6f, 0, 0, 0, 0, 1, 0, 0},
    {"Qwen2.5-7B", 3584, 18944, 28, 28, 4, 128, 152064, 131072, 1e-6f, 1e6f, 0, 0, 0, 0, 1, 0, 0},
    {"Llama-2-7B", 4096, 11008, 32, 32, 32, 128, 32000, 4096, 1e-5f, 1e4f, 0, 0, 0, 0, 0, 0, 0},
    {"Llama-3.1-8B", 4096, 14336, 32, 32, 8, 128, 128256, 131072, 1e-5f, 5e5f, 8.f, 1.f, 4.f, 8192,
     0, 0, 0},
    {"Yi-1.5-9B", 4096, 11008, 48, 32, 4, 128, 64000, 4096, 1e-6f, 5e6f, 0, 0, 0, 0, 0, 0, 0},
    {"Qwen2.5-14B", 5120, 13824, 48, 40, 8, 128, 152064, 131072, 1e-5f, 1e6f, 0, 0, 0, 0, 1, 0, 0},
};

size_t ec_catalog_count(void)
{
    return sizeof catalog / sizeof catalog[0];
}

const ec_model_config *ec_catalog_get(size_t i)
{
    return i < ec_catalog_count() ? &catalog[i] : NULL;
}

const ec_model_config *ec_catalog_find(const char *name)
{
    for (size_t i = 0; name && i < ec_catalog_count(); i++)
        if (!strcasecmp(catalog[i].name, name)) return &catalog[i];
    return NULL;
}
