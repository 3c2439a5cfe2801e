/* st_writer.c — the test-side safetensors writer (see st_writer.h). */
#include "st_writer.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ecocompute/quant.h"


float stw_value(ec_tensor_kind k, int layer, uint64_t i)
{
    return (float)((int)((i * 7 + (uint64_t)k * 3 + (uint64_t)layer * 5) % 17) - 8) / 8.f;
}

typedef struct {
    char name[96];
    uint64_t rows, cols; /* rows = 0: a vector of cols */
    ec_tensor_kind kinds[3]; /* concatenated by rows (fused tensors); EC_T_COUNT ends the list */
    int layer;
} stw_tensor;

typedef struct {
    stw_tensor t[256];
    int n;
} stw_list;

static void add(stw_list *l, const ec_model_config *c, const char *name, int layer,
                ec_tensor_kind k0, ec_tensor_kind k1, ec_tensor_kind k2)
{
    stw_tensor *t = &l->t[l->n++];
    snprintf(t->name, sizeof t->name, name, layer);
    t->kinds[0] = k0, t->kinds[1] = k1, t->kinds[2] = k2;
    t->layer = layer;
    int r, n;
    t->rows = 0;
    for (int i = 0; i < 3 && t->kinds[i] != EC_T_COUNT; i++) {
        ec_tensor_shape(c, t->kinds[i], &r, &n);
        t->rows += (uint64_t)r;
    }
    t->cols = (uint64_t)n;
    if (k0 == EC_T_ATTN_NORM || k0 == EC_T_FFN_NORM || k0 == EC_T_FINAL_NORM || k0 == EC_T_BQ ||
        k0 == EC_T_BK || k0 == EC_T_BV)
        t->rows = 0;
}

static size_t elem_size(const char *dtype)
{
    return strcmp(dtype, "F16") && strcmp(dtype, "BF16") ? 4 : 2;
}

static void put(FILE *f, const char *dtype, float v)
{
    if (!strcmp(dtype, "F16") || !strcmp(dtype, "BF16")) {
        uint16_t h = !strcmp(dtype, "F16") ? ec_f32_to_f16(v) : ec_f32_to_bf16(v);
        fwrite(&h, 2, 1, f);
    } else {
        fwrite(&v, 4, 1, f);
    }
}

static void write_file(const char *path, const stw_list *l, int lo, int hi, const char *dtype,
                       const ec_model_config *c, stw_value_fn value)
{
    char *hdr = malloc(65536);
    size_t w = (size_t)sprintf(hdr, "{\"__metadata__\":{\"format\":\"pt\"}");
    uint64_t off = 0, es = elem_size(dtype);
    for (int i = lo; i < hi; i++) {
        const stw_tensor *t = &l->t[i];
        uint64_t n = (t->rows ? t->rows : 1) * t->cols;
        if (t->rows)
            w += (size_t)sprintf(hdr + w, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%llu,%llu],"
                                 "\"data_offsets\":[%llu,%llu]}", t->name, dtype,
                                 (unsigned long long)t->rows, (unsigned long long)t->cols,
                                 (unsigned long long)off, (unsigned long long)(off + n * es));
        else
            w += (size_t)sprintf(hdr + w, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%llu],"
                                 "\"data_offsets\":[%llu,%llu]}", t->name, dtype,
                                 (unsigned long long)t->cols, (unsigned long long)off,
                                 (unsigned long long)(off + n * es));
        off += n * es;
    }
    w += (size_t)sprintf(hdr + w, "}");
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    uint64_t len = w;
    fwrite(&len, 8, 1, f);
    fwrite(hdr, 1, w, f);
    for (int i = lo; i < hi; i++) {
        const stw_tensor *t = &l->t[i];
        for (int p = 0; p < 3 && t->kinds[p] != EC_T_COUNT; p++) {
            uint64_t n = ec_tensor_numel(c, t->kinds[p]);
            for (uint64_t e = 0; e < n; e++) put(f, dtype, value(t->kinds[p], t->layer, e));
        }
    }
    fclose(f);
    free(hdr);
}

/* config.json's rope_scaling value for c. */
static void rope_scaling_json(const ec_model_config *c, char *buf, size_t len)
{
    if (c->rope_scaling == EC_ROPE_SCALING_LLAMA3)
        snprintf(buf, len, "{\"rope_type\":\"llama3\",\"factor\":%.9g,\"low_freq_factor\":%.9g,"
                 "\"high_freq_factor\":%.9g,\"original_max_position_embeddings\":%d}",
                 (double)c->rope_scaling_factor, (double)c->rope_low_freq_factor,
                 (double)c->rope_high_freq_factor, c->rope_original_max_pos);
    else if (c->rope_scaling == EC_ROPE_SCALING_LINEAR)
        snprintf(buf, len, "{\"type\":\"linear\",\"factor\":%.9g}",
                 (double)c->rope_scaling_factor);
    else
        snprintf(buf, len, "null");
}

void stw_write_model(const char *dir, const ec_model_config *c, const char *model_type,
                     const char *dtype, int flags)
{
    stw_write_model_values(dir, c, model_type, dtype, flags, stw_value, "");
}

void stw_write_model_values(const char *dir, const ec_model_config *c, const char *model_type,
                            const char *dtype, int flags, stw_value_fn value,
                            const char *extra_json)
{
    char path[512], rope[256];
    snprintf(path, sizeof path, "%s/config.json", dir);
    rope_scaling_json(c, rope, sizeof rope);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "{\"model_type\":\"%s\",\"hidden_act\":\"silu\",\"hidden_size\":%d,"
               "\"intermediate_size\":%d,\"num_hidden_layers\":%d,\"num_attention_heads\":%d,"
               "\"num_key_value_heads\":%d,\"vocab_size\":%d,\"max_position_embeddings\":%d,"
               "\"rms_norm_eps\":%.9g,\"rope_theta\":%.9g,\"tie_word_embeddings\":%s,"
               "\"rope_scaling\":%s%s%s}\n", model_type, c->dim, c->hidden_dim, c->n_layers,
            c->n_heads, c->n_kv_heads, c->vocab_size, c->max_seq_len, (double)c->norm_eps,
            (double)c->rope_theta, c->tied_embeddings ? "true" : "false", rope,
            extra_json[0] ? "," : "", extra_json);
    fclose(f);
    const ec_tensor_kind E = EC_T_COUNT;
    stw_list *l = calloc(1, sizeof *l);
    add(l, c, "model.embed_tokens.weight", 0, EC_T_TOK_EMB, E, E);
    for (int i = 0; i < c->n_layers; i++) {
        add(l, c, "model.layers.%d.input_layernorm.weight", i, EC_T_ATTN_NORM, E, E);
        add(l, c, "model.layers.%d.post_attention_layernorm.weight", i, EC_T_FFN_NORM, E, E);
        if (flags & STW_FUSED) {
            add(l, c, "model.layers.%d.self_attn.qkv_proj.weight", i, EC_T_WQ, EC_T_WK, EC_T_WV);
            add(l, c, "model.layers.%d.mlp.gate_up_proj.weight", i, EC_T_W_GATE, EC_T_W_UP, E);
        } else {
            add(l, c, "model.layers.%d.self_attn.q_proj.weight", i, EC_T_WQ, E, E);
            if (!(flags & STW_DROP_WK1) || i != 1)
                add(l, c, "model.layers.%d.self_attn.k_proj.weight", i, EC_T_WK, E, E);
            add(l, c, "model.layers.%d.self_attn.v_proj.weight", i, EC_T_WV, E, E);
            add(l, c, "model.layers.%d.mlp.gate_proj.weight", i, EC_T_W_GATE, E, E);
            add(l, c, "model.layers.%d.mlp.up_proj.weight", i, EC_T_W_UP, E, E);
        }
        if (c->qkv_bias) {
            add(l, c, "model.layers.%d.self_attn.q_proj.bias", i, EC_T_BQ, E, E);
            add(l, c, "model.layers.%d.self_attn.k_proj.bias", i, EC_T_BK, E, E);
            add(l, c, "model.layers.%d.self_attn.v_proj.bias", i, EC_T_BV, E, E);
        }
        add(l, c, "model.layers.%d.self_attn.o_proj.weight", i, EC_T_WO, E, E);
        add(l, c, "model.layers.%d.mlp.down_proj.weight", i, EC_T_W_DOWN, E, E);
        if ((flags & STW_BAD_SHAPE) && i == 0) {
            stw_tensor *t = &l->t[l->n - 1];
            uint64_t r = t->rows;
            t->rows = t->cols, t->cols = r;
        }
    }
    add(l, c, "model.norm.weight", 0, EC_T_FINAL_NORM, E, E);
    if (!c->tied_embeddings) add(l, c, "lm_head.weight", 0, EC_T_LM_HEAD, E, E);
    if (flags & STW_SHARDED) {
        int half = l->n / 2;
        snprintf(path, sizeof path, "%s/model-00001-of-00002.safetensors", dir);
        write_file(path, l, 0, half, dtype, c, value);
        snprintf(path, sizeof path, "%s/model-00002-of-00002.safetensors", dir);
        write_file(path, l, half, l->n, dtype, c, value);
        snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
        f = fopen(path, "w");
        fprintf(f, "{\"metadata\":{\"total_size\":0},\"weight_map\":{");
        for (int i = 0; i < l->n; i++)
            fprintf(f, "%s\"%s\":\"model-0000%d-of-00002.safetensors\"", i ? "," : "",
                    l->t[i].name, i < half ? 1 : 2);
        fprintf(f, "}}\n");
        fclose(f);
    } else {
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        write_file(path, l, 0, l->n, dtype, c, value);
    }
    free(l);
}

void stw_write_raw(const char *path, const char *header, uint64_t data_len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    uint64_t len = strlen(header);
    fwrite(&len, 8, 1, f);
    fwrite(header, 1, (size_t)len, f);
    for (uint64_t i = 0; i < data_len; i++) fputc(0, f);
    fclose(f);
}
