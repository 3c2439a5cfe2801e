/* hf.c — Hugging Face model directories: config.json (Llama, Mistral, Yi, TinyLlama, Qwen2,
 * Phi-3; rope_scaling, sliding windows, the fields the decoder cannot compute refused by name),
 * generation_config.json's end-of-sequence ids, and model.safetensors or the shards listed in
 * model.safetensors.index.json, memory-mapped. Every tensor the config implies is resolved and
 * shape-checked at open, so reads cannot fail; Phi-3's fused qkv_proj and gate_up_proj are split
 * by row ranges. */
#include "ecocompute/common.h"
#include "ecocompute/quant.h"
#include "model_internal.h"
#include "safetensors.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct {
    char path[PATH_MAX];
    ec_mapped_file map;
    ec_st_header hdr;
} st_file;

/* Where tensor (kind, layer) lives: rows [row0, row0 + rows) of a (possibly fused) tensor. */
typedef struct {
    const st_file *file;
    const ec_st_tensor *t;
    uint64_t row0;
} tensor_ref;

typedef struct {
    st_file *files;   /* [n_files] */
    int n_files;
    tensor_ref *refs; /* [EC_T_COUNT][n_layers]; global kinds at layer 0 */
} hf_state;

static int hf_read(const ec_model *m, ec_tensor_kind k, int layer, float *out)
{
    const hf_state *s = m->impl;
    if (k == EC_T_LM_HEAD && m->cfg.tied_embeddings) k = EC_T_TOK_EMB;
    if (!ec_tensor_is_per_layer(k)) layer = 0;
    const tensor_ref *r = &s->refs[(size_t)k * (size_t)m->cfg.n_layers + (size_t)layer];
    int rows, cols;
    ec_tensor_shape(&m->cfg, k, &rows, &cols);
    uint64_t n = (uint64_t)rows * (uint64_t)cols, first = r->row0 * (uint64_t)cols;
    size_t es = ec_st_dtype_size(r->t->dtype);
    const unsigned char *p = r->file->map.data + r->t->begin + first * es;
    if (r->t->dtype == EC_ST_F32) {
        memcpy(out, p, n * 4);
        return 0;
    }
    for (uint64_t i = 0; i < n; i++, p += 2) {
        uint16_t h = (uint16_t)(p[0] | p[1] << 8);
        out[i] = r->t->dtype == EC_ST_F16 ? ec_f16_to_f32(h) : ec_bf16_to_f32(h);
    }
    return 0;
}

static void hf_destroy(ec_model *m)
{
    hf_state *s = m->impl;
    for (int i = 0; i < s->n_files; i++) {
        ec_st_free(&s->files[i].hdr);
        ec_unmap_file(&s->files[i].map);
    }
    free(s->files);
    free(s->refs);
    free(s);
}

/* Parses a JSON file into *out; the caller deletes it. */
static int parse_json(const unsigned char *text, size_t len, const char *path, cJSON **out)
{
    *out = len ? cJSON_ParseWithLength((const char *)text, len) : NULL;
    if (!*out || !cJSON_IsObject(*out)) {
        cJSON_Delete(*out);
        return ec_set_error("%s: not a well-formed JSON object", path);
    }
    return 0;
}

static int read_json(const char *path, cJSON **out)
{
    ec_mapped_file f;
    if (ec_map_file(&f, path)) return -1;
    int rc = parse_json(f.data, f.size, path, out);
    ec_unmap_file(&f);
    return rc;
}

/* Integer field: required when def < 0. */
static int get_int(const cJSON *j, const char *key, int def, const char *path, int *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!v || cJSON_IsNull(v)) {
        if (def < 0) return ec_set_error("%s: required field '%s' is missing", path, key);
        *out = def;
        return 0;
    }
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 0 ||
        v->valuedouble > INT_MAX)
        return ec_set_error("%s: field '%s' is not a non-negative integer", path, key);
    *out = (int)v->valuedouble;
    return 0;
}

static int get_float(const cJSON *j, const char *key, float def, const char *path, float *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!v || cJSON_IsNull(v)) {
        *out = def;
        return 0;
    }
    /* Checked as the float it is stored as: 1e300 is a finite double but an infinite float. */
    float f = cJSON_IsNumber(v) ? (float)v->valuedouble : NAN;
    if (!isfinite(f)) return ec_set_error("%s: field '%s' is not a finite number", path, key);
    *out = f;
    return 0;
}

/* A number field of the rope scaling object `field`: required and positive. */
static int rope_number(const cJSON *rs, const char *field, const char *key, const char *path,
                       float *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(rs, key);
    /* As a float: 1e-50 is a positive double but rounds to 0, and 1e300 to infinity. */
    float f = cJSON_IsNumber(v) ? (float)v->valuedouble : NAN;
    if (!isfinite(f) || !(f > 0))
        return ec_set_error("%s: field '%s.%s' must be a positive number", path, field, key);
    *out = f;
    return 0;
}

/* rope_scaling (transformers 5 writes it as rope_parameters, with rope_theta inside): null or
 * rope_type "default" (none), "linear" (factor) or "llama3" (factor, low_freq_factor <
 * high_freq_factor, original_max_position_embeddings), as transformers requires them. Types
 * that change attention beyond the frequencies (longrope and yarn scale cos/sin, dynamic
 * rescales with the sequence length) are refused by name. */
static int parse_rope_scaling(const cJSON *j, const char *path, ec_model_config *c)
{
    const char *field = "rope_scaling";
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(j, field);
    c->rope_scaling = EC_ROPE_SCALING_NONE;
    if (!rs || cJSON_IsNull(rs))
        rs = cJSON_GetObjectItemCaseSensitive(j, field = "rope_parameters");
    if (!rs || cJSON_IsNull(rs)) return 0;
    if (!cJSON_IsObject(rs))
        return ec_set_error("%s: field '%s' is not an object or null", path, field);
    if (!strcmp(field, "rope_parameters") &&
        get_float(rs, "rope_theta", c->rope_theta, path, &c->rope_theta))
        return -1;
    const char *key = "rope_type";
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(rs, key);
    if (!type) type = cJSON_GetObjectItemCaseSensitive(rs, key = "type");
    if (!cJSON_IsString(type))
        return ec_set_error("%s: field '%s.rope_type' is missing or not a string", path, field);
    const char *t = type->valuestring;
    if (!strcmp(t, "default")) return 0;
    if (strcmp(t, "linear") && strcmp(t, "llama3"))
        return ec_set_error("%s: field '%s.%s' is '%s', which is not supported (default, "
                            "linear, llama3)", path, field, key, t);
    if (rope_number(rs, field, "factor", path, &c->rope_scaling_factor)) return -1;
    if (!strcmp(t, "linear")) {
        c->rope_scaling = EC_ROPE_SCALING_LINEAR;
        return 0;
    }
    c->rope_scaling = EC_ROPE_SCALING_LLAMA3;
    float orig = 0;
    if (rope_number(rs, field, "low_freq_factor", path, &c->rope_low_freq_factor) ||
        rope_number(rs, field, "high_freq_factor", path, &c->rope_high_freq_factor) ||
        rope_number(rs, field, "original_max_position_embeddings", path, &orig))
        return -1;
    /* 2^31 as a float: (float)INT_MAX rounds up to it, so `> (float)INT_MAX` let it through. */
    if (orig != floorf(orig) || orig >= 2147483648.0f)
        return ec_set_error("%s: field '%s.original_max_position_embeddings' is not an integer",
                            path, field);
    c->rope_original_max_pos = (int)orig;
    if (!(c->rope_high_freq_factor > c->rope_low_freq_factor))
        return ec_set_error("%s: field '%s.high_freq_factor' must exceed low_freq_factor", path,
                            field);
    return 0;
}

/* A boolean field that must not be true: a feature of the family the engine does not compute. */
static int refuse_true(const cJSON *j, const char *key, const char *why, const char *path)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    if (v && !cJSON_IsBool(v) && !cJSON_IsNull(v))
        return ec_set_error("%s: field '%s' is not a boolean", path, key);
    if (cJSON_IsTrue(v)) return ec_set_error("%s: field '%s' is true: %s", path, key, why);
    return 0;
}

/* Fields of the families that change the computation: refused unless their value is one the
 * decoder computes. A sliding window only matters past its length, so the context is capped
 * there (Mistral-7B-v0.1: 4096; Phi-3-mini-4k: 2047; Qwen2 unless use_sliding_window). */
static int parse_variants(const cJSON *j, const char *path, const char *mt, ec_model_config *c)
{
    float rotary = 1;
    if (refuse_true(j, "attention_bias", "biases on q/k/v/o are not supported (Qwen2's q/k/v "
                    "biases are, with model_type qwen2)", path) ||
        refuse_true(j, "mlp_bias", "MLP biases are not supported", path) ||
        get_float(j, "partial_rotary_factor", 1, path, &rotary))
        return -1;
    if (rotary != 1)
        return ec_set_error("%s: field 'partial_rotary_factor' is %g: only full rotary "
                            "embeddings (1.0) are supported", path, (double)rotary);
    const cJSON *use = cJSON_GetObjectItemCaseSensitive(j, "use_sliding_window");
    if (use && !cJSON_IsBool(use))
        return ec_set_error("%s: field 'use_sliding_window' is not a boolean", path);
    int window = 0;
    if (get_int(j, "sliding_window", 0, path, &window)) return -1;
    int applies = strcmp(mt, "qwen2") ? !cJSON_IsFalse(use) : cJSON_IsTrue(use);
    if (applies && window > 0 && window < c->max_seq_len) c->max_seq_len = window;
    return 0;
}

int ec_hf_config_parse(const unsigned char *text, size_t len, const char *path,
                       ec_model_config *c)
{
    memset(c, 0, sizeof *c);
    cJSON *j;
    if (parse_json(text, len, path, &j)) return -1;
    int rc = -1;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(j, "model_type");
    const char *mt = cJSON_IsString(type) ? type->valuestring : "";
    static const char *const families[] = {"llama", "mistral", "qwen2", "phi3"};
    size_t f = 0;
    while (f < 4 && strcmp(mt, families[f])) f++;
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(j, "hidden_act");
    const cJSON *tie = cJSON_GetObjectItemCaseSensitive(j, "tie_word_embeddings");
    if (f == 4)
        ec_set_error("%s: model_type '%s' is not a supported Llama-family decoder (llama, "
                     "mistral, qwen2, phi3)", path, mt);
    else if (act && (!cJSON_IsString(act) || strcmp(act->valuestring, "silu")))
        ec_set_error("%s: hidden_act must be silu (SwiGLU)", path);
    else if (tie && !cJSON_IsBool(tie))
        ec_set_error("%s: field 'tie_word_embeddings' is not a boolean", path);
    else if (!get_int(j, "hidden_size", -1, path, &c->dim) &&
             !get_int(j, "intermediate_size", -1, path, &c->hidden_dim) &&
             !get_int(j, "num_hidden_layers", -1, path, &c->n_layers) &&
             !get_int(j, "num_attention_heads", -1, path, &c->n_heads) &&
             !get_int(j, "num_key_value_heads", c->n_heads, path, &c->n_kv_heads) &&
             !get_int(j, "head_dim", c->n_heads ? c->dim / c->n_heads : 0, path, &c->head_dim) &&
             !get_int(j, "vocab_size", -1, path, &c->vocab_size) &&
             !get_int(j, "max_position_embeddings", 2048, path, &c->max_seq_len) &&
             !get_float(j, "rms_norm_eps", 1e-6f, path, &c->norm_eps) &&
             !get_float(j, "rope_theta", 10000.f, path, &c->rope_theta) &&
             !parse_rope_scaling(j, path, c) && !parse_variants(j, path, mt, c)) {
        c->tied_embeddings = cJSON_IsTrue(tie);
        c->qkv_bias = !strcmp(mt, "qwen2");
        c->rope_interleaved = 0;
        rc = ec_model_config_check(c, path);
    }
    cJSON_Delete(j);
    return rc;
}

static int parse_config(const char *dir, ec_model_config *c)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/config.json", dir);
    ec_mapped_file f;
    if (ec_map_file(&f, path)) return -1;
    int rc = ec_hf_config_parse(f.data, f.size, path, c);
    ec_unmap_file(&f);
    const char *base = strrchr(dir, '/');
    snprintf(c->name, sizeof c->name, "%s", base && base[1] ? base + 1 : dir);
    return rc;
}

/* Adds the ids of an eos_token_id field (one id or a list) to m->eos_ids. */
static int add_eos(ec_model *m, const cJSON *v, const char *path)
{
    int n = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 1;
    if (n > EC_MODEL_MAX_EOS)
        return ec_set_error("%s: field 'eos_token_id' lists %d ids (at most %d)", path, n,
                            EC_MODEL_MAX_EOS);
    const cJSON *e = cJSON_IsArray(v) ? v->child : v;
    for (; e && m->n_eos < n; e = cJSON_IsArray(v) ? e->next : NULL) {
        if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble) || e->valuedouble < 0)
            return ec_set_error("%s: field 'eos_token_id' must be a token id or a list of them",
                                path);
        if (e->valuedouble >= m->cfg.vocab_size)
            return ec_set_error("%s: field 'eos_token_id': id %.0f is outside the vocabulary "
                                "(%d tokens)", path, e->valuedouble, m->cfg.vocab_size);
        m->eos_ids[m->n_eos++] = (int)e->valuedouble;
    }
    return 0;
}

/* The ids that end generation: generation_config.json's eos_token_id, which is what
 * transformers' generate() stops at, else config.json's; none when neither has one. */
static int parse_eos(ec_model *m, const char *dir)
{
    static const char *const files[] = {"generation_config.json", "config.json"};
    m->n_eos = 0;
    for (int i = 0; i < 2; i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        struct stat st;
        if (stat(path, &st) != 0) continue;
        cJSON *j;
        if (read_json(path, &j)) return -1;
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "eos_token_id");
        int rc = v && !cJSON_IsNull(v) ? add_eos(m, v, path) : 0;
        int found = v && !cJSON_IsNull(v);
        cJSON_Delete(j);
        if (rc || found) return rc;
    }
    return 0;
}

static int open_st_file(st_file *f, const char *dir, const char *name)
{
    snprintf(f->path, sizeof f->path, "%s/%s", dir, name);
    if (ec_map_file(&f->map, f->path)) return -1;
    return ec_st_parse(f->map.data, f->map.size, f->path, &f->hdr);
}

/* Opens model.safetensors, or every shard the index names; `index` keeps the weight map. */
static int open_files(hf_state *s, const char *dir, cJSON **index, char *index_path)
{
    snprintf(index_path, PATH_MAX, "%s/model.safetensors.index.json", dir);
    struct stat st;
    if (stat(index_path, &st) != 0) {
        *index = NULL;
        s->files = calloc(1, sizeof *s->files);
        if (!s->files) return ec_set_error("%s: out of memory", dir);
        s->n_files = 1;
        return open_st_file(&s->files[0], dir, "model.safetensors");
    }
    if (read_json(index_path, index)) return -1;
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(*index, "weight_map");
    if (!cJSON_IsObject(map)) return ec_set_error("%s: no weight_map object", index_path);
    s->files = calloc((size_t)cJSON_GetArraySize(map) + 1, sizeof *s->files);
    if (!s->files) return ec_set_error("%s: out of memory", index_path);
    const cJSON *e;
    cJSON_ArrayForEach(e, map)
    {
        if (!cJSON_IsString(e) || strchr(e->valuestring, '/') || !e->valuestring[0])
            return ec_set_error("%s: tensor '%s': shard must be a file name in the directory",
                                index_path, e->string);
        int seen = 0;
        for (int i = 0; i < s->n_files && !seen; i++)
            seen = !strcmp(strrchr(s->files[i].path, '/') + 1, e->valuestring);
        if (seen) continue;
        st_file *f = &s->files[s->n_files++];
        snprintf(f->path, sizeof f->path, "%s/%s", dir, e->valuestring);
        struct stat shard;
        if (stat(f->path, &shard) != 0)
            return ec_set_error("%s: weight_map: shard '%s' of tensor '%s' is not in the "
                                "directory", index_path, e->valuestring, e->string);
        if (open_st_file(f, dir, e->valuestring)) return -1;
    }
    return 0;
}

/* Finds a tensor by name in the shard the index names, or in the single file. */
static const ec_st_tensor *find(const hf_state *s, const cJSON *index, const char *name,
                                const st_file **file)
{
    const st_file *f = &s->files[0];
    if (index) {
        const cJSON *shard = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(index, "weight_map"), name);
        if (!cJSON_IsString(shard)) return NULL;
        for (int i = 0; i < s->n_files; i++)
            if (!strcmp(strrchr(s->files[i].path, '/') + 1, shard->valuestring)) f = &s->files[i];
    }
    *file = f;
    return ec_st_find(&f->hdr, name);
}

/* HF names of a kind: the plain tensor, and the fused one it may be part of (Phi-3). */
static void hf_names(ec_tensor_kind k, int layer, char *plain, char *fused, size_t len)
{
    static const char *const plain_fmt[EC_T_COUNT] = {
        [EC_T_TOK_EMB] = "model.embed_tokens.weight",
        [EC_T_ATTN_NORM] = "model.layers.%d.input_layernorm.weight",
        [EC_T_WQ] = "model.layers.%d.self_attn.q_proj.weight",
        [EC_T_WK] = "model.layers.%d.self_attn.k_proj.weight",
        [EC_T_WV] = "model.layers.%d.self_attn.v_proj.weight",
        [EC_T_BQ] = "model.layers.%d.self_attn.q_proj.bias",
        [EC_T_BK] = "model.layers.%d.self_attn.k_proj.bias",
        [EC_T_BV] = "model.layers.%d.self_attn.v_proj.bias",
        [EC_T_WO] = "model.layers.%d.self_attn.o_proj.weight",
        [EC_T_FFN_NORM] = "model.layers.%d.post_attention_layernorm.weight",
        [EC_T_W_GATE] = "model.layers.%d.mlp.gate_proj.weight",
        [EC_T_W_UP] = "model.layers.%d.mlp.up_proj.weight",
        [EC_T_W_DOWN] = "model.layers.%d.mlp.down_proj.weight",
        [EC_T_FINAL_NORM] = "model.norm.weight",
        [EC_T_LM_HEAD] = "lm_head.weight",
    };
    const char *fz = k == EC_T_WQ || k == EC_T_WK || k == EC_T_WV
                         ? "model.layers.%d.self_attn.qkv_proj.weight"
                     : k == EC_T_W_GATE || k == EC_T_W_UP ? "model.layers.%d.mlp.gate_up_proj.weight"
                                                          : NULL;
    snprintf(plain, len, plain_fmt[k], layer);
    if (fz) snprintf(fused, len, fz, layer);
    else fused[0] = '\0';
}

/* Row offset of kind k inside its fused tensor, and that tensor's total rows. */
static void fused_rows(const ec_model_config *c, ec_tensor_kind k, uint64_t *row0, uint64_t *total)
{
    uint64_t q = (uint64_t)c->n_heads * (uint64_t)c->head_dim;
    uint64_t kv = (uint64_t)c->n_kv_heads * (uint64_t)c->head_dim;
    uint64_t h = (uint64_t)c->hidden_dim;
    *row0 = k == EC_T_WK ? q : k == EC_T_WV ? q + kv : k == EC_T_W_UP ? h : 0;
    *total = k == EC_T_W_GATE || k == EC_T_W_UP ? 2 * h : q + 2 * kv;
}

static int resolve(hf_state *s, const cJSON *index, const char *index_path,
                   const ec_model_config *c, ec_tensor_kind k, int layer)
{
    char plain[128], fused[128];
    hf_names(k, layer, plain, fused, sizeof plain);
    const st_file *f;
    const ec_st_tensor *t = find(s, index, plain, &f);
    const char *name = plain;
    uint64_t row0 = 0, total;
    int rows, cols;
    ec_tensor_shape(c, k, &rows, &cols);
    total = (uint64_t)rows;
    if (!t && fused[0] && (t = find(s, index, fused, &f))) {
        name = fused;
        fused_rows(c, k, &row0, &total);
    }
    if (!t)
        return ec_set_error("%s: tensor '%s' is missing", index ? index_path : f->path, plain);
    if (t->dtype != EC_ST_F32 && t->dtype != EC_ST_F16 && t->dtype != EC_ST_BF16)
        return ec_set_error("%s: tensor '%s': dtype %s is not supported (F32, F16, BF16)",
                            f->path, name, ec_st_dtype_name(t->dtype));
    int is_vector = rows == 1 && total == 1;
    int ok = is_vector ? t->ndim == 1 && t->shape[0] == (uint64_t)cols
                       : t->ndim == 2 && t->shape[0] == total && t->shape[1] == (uint64_t)cols;
    if (!ok) {
        char got[200] = "", want[64];
        for (int i = 0, w = 0; i < t->ndim && w < (int)sizeof got - 24; i++)
            w += snprintf(got + w, sizeof got - (size_t)w, "%s%" PRIu64, i ? ", " : "", t->shape[i]);
        if (is_vector) snprintf(want, sizeof want, "%d", cols);
        else snprintf(want, sizeof want, "%" PRIu64 ", %d", total, cols);
        return ec_set_error("%s: tensor '%s': shape [%s] but config.json implies [%s]", f->path,
                            name, got, want);
    }
    s->refs[(size_t)k * (size_t)c->n_layers + (size_t)layer] = (tensor_ref){f, t, row0};
    return 0;
}

int ec_hf_open(ec_model *m, const char *dir)
{
    if (parse_config(dir, &m->cfg) || parse_eos(m, dir)) return -1;
    const ec_model_config *c = &m->cfg;
    hf_state *s = calloc(1, sizeof *s);
    if (!s) return ec_set_error("%s: out of memory", dir);
    m->impl = s;
    cJSON *index = NULL;
    char index_path[PATH_MAX];
    int rc = open_files(s, dir, &index, index_path);
    if (!rc && !(s->refs = calloc((size_t)EC_T_COUNT * (size_t)c->n_layers, sizeof *s->refs)))
        rc = ec_set_error("%s: out of memory", dir);
    for (int k = 0; k < EC_T_COUNT && !rc; k++) {
        if ((k == EC_T_BQ || k == EC_T_BK || k == EC_T_BV) && !c->qkv_bias) continue;
        if (k == EC_T_LM_HEAD && c->tied_embeddings) continue;
        int layers = ec_tensor_is_per_layer((ec_tensor_kind)k) ? c->n_layers : 1;
        for (int l = 0; l < layers && !rc; l++)
            rc = resolve(s, index, index_path, c, (ec_tensor_kind)k, l);
    }
    cJSON_Delete(index);
    if (rc) {
        hf_destroy(m);
        m->impl = NULL;
        return -1;
    }
    snprintf(m->source, sizeof m->source, "safetensors");
    m->read = hf_read;
    m->destroy = hf_destroy;
    return 0;
}
