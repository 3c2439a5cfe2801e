/* cpu_backend.h — the CPU backend's private structures: weights in their stored formats, the
 * KV cache and the activation scratch, shared by cpu_weights.c, cpu_linear.c and
 * cpu_backend.c. The public face is ec_cpu_backend_ops (an ec_backend_ops). */
#ifndef EC_ENGINE_CPU_BACKEND_H
#define EC_ENGINE_CPU_BACKEND_H

#include "ecocompute/engine.h"
#include "engine/cpu/threadpool.h"

extern const ec_backend_ops ec_cpu_backend_ops;

typedef struct {
    float *attn_norm;        /* [dim] */
    ec_qmatrix wq;           /* [n_heads*head_dim][dim] */
    ec_qmatrix wk, wv;       /* [kv_dim][dim] */
    float *bq;               /* [n_heads*head_dim], NULL without qkv_bias */
    float *bk, *bv;          /* [kv_dim], NULL without qkv_bias */
    ec_qmatrix wo;           /* [dim][n_heads*head_dim] */
    float *ffn_norm;         /* [dim] */
    ec_qmatrix w_gate, w_up; /* [hidden_dim][dim] */
    ec_qmatrix w_down;       /* [dim][hidden_dim] */
} cpu_layer;

typedef struct {
    ec_qmatrix tok_emb; /* [vocab][dim], 16-bit (f32 for the f32 precision) */
    ec_qmatrix lm_head; /* [vocab][dim]; unused when head_is_emb */
    int head_is_emb;    /* tied and not quantized: the head reads tok_emb (stored once) */
    float *final_norm;  /* [dim] */
    cpu_layer *layers;  /* [n_layers] */
    int n_layers;
} cpu_weights;

/* Reads the model tensor by tensor and stores each in its format (policy in docs/engine.md). */
int cpu_weights_load(cpu_weights *w, const ec_model *m, const ec_load_options *o);
void cpu_weights_free(cpu_weights *w);
const ec_qmatrix *cpu_weights_head(const cpu_weights *w);

/* y [rows][m->rows] = x [rows][m->cols] · mᵀ (+ bias [m->rows] when not NULL), with the output
 * features split across the pool's threads. For int8-mixed with a threshold, stat (may be NULL)
 * gets stat[0] += outlier columns, stat[1] += 1. Returns 0, or -1 (ec_last_error). */
int cpu_linear(ec_pool *pool, const ec_qmatrix *m, const float *x, int rows, const float *bias,
               float *y, long *stat);

#endif
