/* llama2c.c — llama2.c checkpoints (Karpathy's run.c format), version 0 (legacy: 7 x int32
 * header, negative vocab_size = unshared classifier) and version 1 (256-byte header with magic
 * "ak42"), memory-mapped; tensors are fp32 in PyTorch [out][in] layout, grouped by kind with all
 * layers of a kind contiguous. */
#include "ecocompute/common.h"
#include "model_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define L2C_MAGIC 0x616b3432u /* "24ka" on disk, little-endian */
#define L2C_V1_HEADER 256
#define L2C_V0_HEADER 28
#define FREQ_CIS EC_T_COUNT /* v0 stores rotary tables after the final norm; skipped */

/* File order of the tensor groups; w1 = gate, w2 = down, w3 = up. */
static const ec_tensor_kind v0_order[] = {
    EC_T_TOK_EMB, EC_T_ATTN_NORM, EC_T_WQ, EC_T_WK, EC_T_WV, EC_T_WO, EC_T_FFN_NORM,
    EC_T_W_GATE, EC_T_W_DOWN, EC_T_W_UP, EC_T_FINAL_NORM, FREQ_CIS, EC_T_LM_HEAD};
static const ec_tensor_kind v1_order[] = {
    EC_T_ATTN_NORM, EC_T_FFN_NORM, EC_T_FINAL_NORM, EC_T_TOK_EMB, EC_T_WQ, EC_T_WK, EC_T_WV,
    EC_T_WO, EC_T_W_GATE, EC_T_W_DOWN, EC_T_W_UP, EC_T_LM_HEAD};

typedef struct {
    ec_mapped_file file;
    uint64_t offset[EC_T_COUNT]; /* byte offset of layer 0 of each kind */
} l2c_state;

static int32_t rd_i32(const unsigned char *p)
{
    uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    int32_t r;
    memcpy(&r, &v, sizeof r);
    return r;
}

static int l2c_read(const ec_model *m, ec_tensor_kind k, int layer, float *out)
{
    const l2c_state *s = m->impl;
    if (k == EC_T_LM_HEAD && m->cfg.tied_embeddings) k = EC_T_TOK_EMB;
    uint64_t n = ec_tensor_numel(&m->cfg, k);
    uint64_t off = s->offset[k] + (ec_tensor_is_per_layer(k) ? (uint64_t)layer * n * 4 : 0);
    memcpy(out, s->file.data + off, n * 4); /* bounds proven against the file size at open */
    return 0;
}

static void l2c_destroy(ec_model *m)
{
    l2c_state *s = m->impl;
    ec_unmap_file(&s->file);
    free(s);
}

/* Reads the header into cfg; returns the header size, or -1. */
static int parse_header(const ec_mapped_file *f, const char *path, ec_model_config *c,
                        int *version)
{
    const unsigned char *p = f->data;
    int32_t h[7];
    int header, shared;
    if (f->size >= 8 && (uint32_t)rd_i32(p) == L2C_MAGIC) {
        *version = rd_i32(p + 4);
        if (*version != 1)
            return ec_set_error("%s: llama2.c checkpoint version %d is not supported (only 0 and "
                                "1; version 2 is int8-quantized)", path, *version);
        if (f->size < L2C_V1_HEADER)
            return ec_set_error("%s: truncated: the version 1 header needs %d bytes, the file "
                                "has %zu", path, L2C_V1_HEADER, f->size);
        for (int i = 0; i < 7; i++) h[i] = rd_i32(p + 8 + 4 * i);
        shared = p[36];
        header = L2C_V1_HEADER;
    } else {
        *version = 0;
        if (f->size < L2C_V0_HEADER)
            return ec_set_error("%s: truncated: the llama2.c header needs %d bytes, the file has "
                                "%zu", path, L2C_V0_HEADER, f->size);
        for (int i = 0; i < 7; i++) h[i] = rd_i32(p + 4 * i);
        shared = h[5] > 0;
        header = L2C_V0_HEADER;
        if (h[5] < 0 && h[5] != INT32_MIN) h[5] = -h[5];
    }
    memset(c, 0, sizeof *c);
    const char *base = strrchr(path, '/');
    snprintf(c->name, sizeof c->name, "%s", base ? base + 1 : path);
    c->dim = h[0];
    c->hidden_dim = h[1];
    c->n_layers = h[2];
    c->n_heads = h[3];
    c->n_kv_heads = h[4];
    c->vocab_size = h[5];
    c->max_seq_len = h[6];
    c->head_dim = c->n_heads > 0 ? c->dim / c->n_heads : 0;
    c->norm_eps = 1e-5f;     /* run.c's rmsnorm */
    c->rope_theta = 10000.f; /* run.c's rotary base */
    c->tied_embeddings = shared;
    c->rope_interleaved = 1;
    char what[600];
    snprintf(what, sizeof what, "%s (llama2.c v%d header)", path, *version);
    if (ec_model_config_check(c, what)) return -1;
    if (c->dim % c->n_heads)
        return ec_set_error("%s: dim %d is not a multiple of n_heads %d", what, c->dim, c->n_heads);
    return header;
}

int ec_llama2c_open(ec_model *m, const char *path)
{
    l2c_state *s = calloc(1, sizeof *s);
    if (!s) return ec_set_error("%s: out of memory", path);
    if (ec_map_file(&s->file, path)) {
        free(s);
        return -1;
    }
    /* GGUF (llama.cpp's format) starts with its magic; without this check its bytes would be
     * read as a llama2.c header and fail later with a misleading size message. */
    if (s->file.size >= 4 && !memcmp(s->file.data, "GGUF", 4)) {
        ec_set_error("%s: a GGUF file (llama.cpp's format), which ecocompute does not load; give a "
                     "Hugging Face model directory (safetensors) or a llama2.c checkpoint",
                     path);
        goto fail;
    }
    int version;
    int header = parse_header(&s->file, path, &m->cfg, &version);
    if (header < 0) goto fail;
    const ec_model_config *c = &m->cfg;
    const ec_tensor_kind *order = version ? v1_order : v0_order;
    size_t n_order = version ? sizeof v1_order / sizeof *v1_order : sizeof v0_order / sizeof *v0_order;
    uint64_t off = (uint64_t)header;
    for (size_t i = 0; i < n_order; i++) {
        ec_tensor_kind k = order[i];
        if (k == EC_T_LM_HEAD && c->tied_embeddings) continue;
        uint64_t n = k == FREQ_CIS ? (uint64_t)c->max_seq_len * (uint64_t)c->head_dim
                                   : ec_tensor_numel(c, k);
        uint64_t reps = ec_tensor_is_per_layer(k) ? (uint64_t)c->n_layers : 1;
        /* Compared by division: n * reps * 4 can overflow 64 bits for a hostile header. */
        if (n > (s->file.size - off) / 4 / reps) {
            ec_set_error("%s: truncated: %s (%" PRIu64 " x %" PRIu64 " floats from byte %" PRIu64
                         ") extends past the end of the file (%zu bytes)", path,
                         k == FREQ_CIS ? "freq_cis" : ec_tensor_kind_name(k), reps, n, off,
                         s->file.size);
            goto fail;
        }
        n *= reps;
        if (k != FREQ_CIS) s->offset[k] = off;
        off += 4 * n;
    }
    if (off != s->file.size) {
        ec_set_error("%s: %zu bytes after the last tensor (header says dim %d, layers %d, vocab "
                     "%d, %s classifier); wrong header?", path, s->file.size - (size_t)off, c->dim,
                     c->n_layers, c->vocab_size, c->tied_embeddings ? "shared" : "separate");
        goto fail;
    }
    snprintf(m->source, sizeof m->source, "llama2c-v%d", version);
    m->read = l2c_read;
    m->destroy = l2c_destroy;
    m->impl = s;
    return 0;
fail:
    ec_unmap_file(&s->file);
    free(s);
    return -1;
}
