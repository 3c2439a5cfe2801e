/* shard.c — one rank's share of a model for Megatron-style tensor parallelism: a view whose
 * config has 1/world of the attention heads, the kv heads and the MLP width, and whose tensors
 * are slices of the full model's. Column-parallel projections (q, k, v and their biases, gate,
 * up) keep the rank's output rows; row-parallel ones (o, down) keep its input columns, so each
 * rank's o and down produce a partial sum that an all-reduce completes. Embedding, norms and
 * head are whole on every rank. Rank r owns query heads [r*H/W, (r+1)*H/W) and kv heads
 * [r*KV/W, (r+1)*KV/W): with H/KV query heads per kv head, the grouping stays within a rank. */
#include "ecocompute/common.h"
#include "model_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const ec_model *full;
    int rank, world;
} shard_state;

/* Which way a tensor is split: by its output features (rows; a 1-D bias's elements), by its
 * input features (columns), or not at all. */
typedef enum { SPLIT_NONE, SPLIT_ROWS, SPLIT_COLS } split_axis;

static split_axis split_of(ec_tensor_kind k)
{
    switch (k) {
    case EC_T_WQ: case EC_T_WK: case EC_T_WV: case EC_T_BQ: case EC_T_BK: case EC_T_BV:
    case EC_T_W_GATE: case EC_T_W_UP:
        return SPLIT_ROWS;
    case EC_T_WO: case EC_T_W_DOWN:
        return SPLIT_COLS;
    default:
        return SPLIT_NONE;
    }
}

static int shard_read(const ec_model *m, ec_tensor_kind k, int layer, float *out)
{
    const shard_state *s = m->impl;
    split_axis axis = split_of(k);
    if (axis == SPLIT_NONE) return ec_model_read_tensor(s->full, k, layer, out);
    int rows, cols, part_rows, part_cols;
    ec_tensor_shape(ec_model_config_of(s->full), k, &rows, &cols);
    ec_tensor_shape(&m->cfg, k, &part_rows, &part_cols);
    float *whole = malloc((size_t)rows * (size_t)cols * sizeof *whole);
    if (!whole) return ec_set_error("%s: out of memory for %s (%d x %d) of a shard", m->cfg.name,
                                    ec_tensor_kind_name(k), rows, cols);
    int rc = ec_model_read_tensor(s->full, k, layer, whole);
    if (rc == 0 && (axis == SPLIT_COLS || rows == 1)) { /* 1-D: the elements are the columns */
        size_t c0 = (size_t)s->rank * (size_t)part_cols;
        for (size_t r = 0; r < (size_t)rows; r++)
            memcpy(out + r * (size_t)part_cols, whole + r * (size_t)cols + c0,
                   (size_t)part_cols * sizeof *out);
    } else if (rc == 0) {
        memcpy(out, whole + (size_t)s->rank * (size_t)part_rows * (size_t)cols,
               (size_t)part_rows * (size_t)cols * sizeof *out);
    }
    free(whole);
    return rc;
}

static void shard_destroy(ec_model *m)
{
    free(m->impl);
    m->impl = NULL;
}

int ec_model_shardable(const ec_model_config *c, int world)
{
    if (world < 1) return ec_set_error("tensor parallelism over %d ranks: need at least 1", world);
    if (c->n_kv_heads % world || c->hidden_dim % world)
        return ec_set_error("model %s cannot be split over %d ranks: its %d kv heads and MLP "
                            "width %d must both be multiples of %d",
                            c->name, world, c->n_kv_heads, c->hidden_dim, world);
    return 0;
}

void ec_model_shard_config(const ec_model_config *c, int world, ec_model_config *out)
{
    *out = *c;
    out->n_heads = c->n_heads / world;
    out->n_kv_heads = c->n_kv_heads / world;
    out->hidden_dim = c->hidden_dim / world;
}

int ec_model_shard(ec_model **out, const ec_model *full, int rank, int world)
{
    *out = NULL;
    const ec_model_config *c = ec_model_config_of(full);
    if (ec_model_shardable(c, world)) return -1;
    if (rank < 0 || rank >= world)
        return ec_set_error("model %s: shard %d of %d does not exist", c->name, rank, world);
    ec_model *m = calloc(1, sizeof *m);
    shard_state *s = calloc(1, sizeof *s);
    if (!m || !s) {
        free(m);
        free(s);
        return ec_set_error("out of memory for shard %d of %s", rank, c->name);
    }
    *s = (shard_state){full, rank, world};
    ec_model_shard_config(c, world, &m->cfg);
    memcpy(m->source, full->source, sizeof m->source);
    m->read = shard_read;
    m->destroy = shard_destroy;
    m->impl = s;
    memcpy(m->eos_ids, full->eos_ids, sizeof m->eos_ids);
    m->n_eos = full->n_eos;
    *out = m;
    return 0;
}
