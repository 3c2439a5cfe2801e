/* catalog.c — the built-in models: exact shapes from each model's public config.json (hidden_size,
 * intermediate_size, layers, heads, KV heads, vocab, max_position_embeddings, rms_norm_eps,
 * rope_theta, rope_scaling, tie_word_embeddings), plus the test shapes `tiny` and `small`; and
 * which entry a source's model name ("mistralai/Mistral-7B-Instruct-v0.2") refers to. */
#include "ecocompute/model.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

/* name, dim, hidden, layers, heads, kv_heads, head_dim, vocab, max_seq, eps, theta,
 * rope scaling (factor, low, high, original max), qkv_bias, tied, rope_interleaved, rope scaling
 * type */
static const ec_model_config catalog[] = {
    /* Test shapes: vocab sizes of tok512.bin / tokenizer.bin so real tokenizers fit them. */
    {"tiny", 128, 384, 5, 4, 2, 32, 512, 4096, 1e-5f, 10000.f, 0, 0, 0, 0, 0, 1, 0, 0},
    {"small", 512, 1376, 5, 8, 4, 64, 32000, 4096, 1e-5f, 10000.f, 0, 0, 0, 0, 0, 1, 0, 0},
    {"Qwen2.5-0.5B", 896, 4864, 24, 14, 2, 64, 151936, 32768, 1e-6f, 1e6f, 0, 0, 0, 0, 1, 1, 0, 0},
    {"TinyLlama-1.1B", 2048, 5632, 22, 32, 4, 64, 32000, 2048, 1e-5f, 1e4f, 0, 0, 0, 0, 0, 0, 0, 0},
    {"Qwen2-1.5B", 1536, 8960, 28, 12, 2, 128, 151936, 131072, 1e-6f, 1e6f, 0, 0, 0, 0, 1, 1, 0, 0},
    {"Qwen2.5-3B", 2048, 11008, 36, 16, 2, 128, 151936, 32768, 1e-6f, 1e6f, 0, 0, 0, 0, 1, 1, 0, 0},
    {"Phi-3-mini-4k", 3072, 8192, 32, 32, 32, 96, 32064, 4096, 1e-5f, 1e4f, 0, 0, 0, 0, 0, 0, 0, 0},
    {"Yi-1.5-6B", 4096, 11008, 32, 32, 4, 128, 64000, 4096, 1e-6f, 5e6f, 0, 0, 0, 0, 0, 0, 0, 0},
    {"Mistral-7B-v0.2", 4096, 14336, 32, 32, 8, 128, 32000, 32768, 1e-5f, 1e6f, 0, 0, 0, 0, 0, 0,
     0, 0},
    {"Qwen2-7B", 3584, 18944, 28, 28, 4, 128, 152064, 131072, 1e-6f, 1e6f, 0, 0, 0, 0, 1, 0, 0, 0},
    {"Qwen2.5-7B", 3584, 18944, 28, 28, 4, 128, 152064, 131072, 1e-6f, 1e6f, 0, 0, 0, 0, 1, 0, 0,
     0},
    {"Llama-2-7B", 4096, 11008, 32, 32, 32, 128, 32000, 4096, 1e-5f, 1e4f, 0, 0, 0, 0, 0, 0, 0, 0},
    {"Llama-3.1-8B", 4096, 14336, 32, 32, 8, 128, 128256, 131072, 1e-5f, 5e5f, 8.f, 1.f, 4.f, 8192,
     0, 0, 0, EC_ROPE_SCALING_LLAMA3},
    {"Yi-1.5-9B", 4096, 11008, 48, 32, 4, 128, 64000, 4096, 1e-6f, 5e6f, 0, 0, 0, 0, 0, 0, 0, 0},
    {"Qwen2.5-14B", 5120, 13824, 48, 40, 8, 128, 152064, 131072, 1e-5f, 1e6f, 0, 0, 0, 0, 1, 0, 0,
     0},
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

/* Lowercased "family-size" key of a model name: the org prefix ("mistralai/") dropped and the
 * name cut after its size token ("7B", "1.5B"); the whole name when it has none. */
static void model_key(const char *name, char *key, size_t cap, int *has_size)
{
    if (cap == 0) return;
    const char *slash = strrchr(name, '/');
    const char *s = slash ? slash + 1 : name;
    size_t n = 0;
    *has_size = 0;
    while (*s && n + 1 < cap) {
        /* a token runs to the next '-', '_' or space */
        const char *t = s;
        while (*s && *s != '-' && *s != '_' && *s != ' ') s++;
        size_t tl = (size_t)(s - t);
        int size_tok = tl >= 2 && (t[tl - 1] == 'b' || t[tl - 1] == 'B');
        for (size_t i = 0; size_tok && i + 1 < tl; i++)
            if (!isdigit((unsigned char)t[i]) && t[i] != '.') size_tok = 0;
        if (n && n + 1 < cap) key[n++] = '-';
        for (size_t i = 0; i < tl && n + 1 < cap; i++) key[n++] = (char)tolower((unsigned char)t[i]);
        if (size_tok) {
            *has_size = 1;
            break;
        }
        if (*s) s++;
    }
    key[n] = '\0';
}

void ec_model_family_key(const char *name, char *key, size_t cap)
{
    int has_size;
    model_key(name ? name : "", key, cap, &has_size);
}

const ec_model_config *ec_catalog_match(const char *name)
{
    if (!name || !*name) return NULL;
    char want[96], have[96];
    int want_size, have_size;
    model_key(name, want, sizeof want, &want_size);
    for (size_t i = 0; i < ec_catalog_count(); i++) {
        const ec_model_config *c = ec_catalog_get(i);
        model_key(c->name, have, sizeof have, &have_size);
        if (want_size && have_size && !strcmp(want, have)) return c;
        if (!want_size && !have_size) {
            /* "Phi-3-mini" names "Phi-3-mini-4k" and "phi-3-mini-4k-instruct" names it too:
             * one key is the other's prefix, ending at a token boundary. */
            size_t a = strlen(want), b = strlen(have), m = a < b ? a : b;
            const char *longer = a > b ? want : have;
            if (m && !strncmp(want, have, m) && (a == b || longer[m] == '-')) return c;
        }
    }
    return NULL;
}
