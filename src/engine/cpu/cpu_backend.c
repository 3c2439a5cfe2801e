/* cpu_backend.c — the CPU backend: the Llama-family forward pass in float32 over weights kept
 * in their stored format, multithreaded by output features and attention heads. This is the
 * numerical reference every other backend is tested against. As a rank of a tensor-parallel
 * group it holds one shard and sums the partial outputs of o and down over the group before
 * adding them to the residual stream: the reference for the sharding arithmetic. */
#include "engine/cpu/cpu_backend.h"

#include "engine/cpu/cpu_ops.h"
#include "engine/tp.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    ec_model_config cfg;
    int max_batch, max_seq;
    cpu_weights w;
    ec_pool *pool;
    float *inv_freq;            /* [head_dim/2] rotary frequencies */
    float *rope_cos, *rope_sin; /* [head_dim/2] angles of the position being rotated */
    float *k_cache;             /* [layers][max_batch][max_seq][kv_dim] */
    float *v_cache;             /* [layers][max_batch][max_seq][kv_dim] */
    float *scores;              /* [threads][max_seq] attention weights, one row per thread */
    float *last;                /* [max_batch][dim] final hidden state of each sequence */
    float *head_out;            /* [max_batch][vocab] logits */
    /* Activations of one call, rows = batch * n, grown to the largest call seen. */
    int cap_rows;
    float *x;         /* [rows][dim] residual stream */
    float *xb;        /* [rows][dim] normed input / projection output */
    float *q;         /* [rows][n_heads*head_dim] */
    float *k, *v;     /* [rows][kv_dim] */
    float *att;       /* [rows][n_heads*head_dim] attention output */
    float *gate, *up; /* [rows][hidden_dim] */
    long *stats;      /* [n_layers][EC_LINEAR_INPUTS][2]: int8-mixed outlier columns, calls */
    ec_tp_group *tp;  /* NULL unless this is a rank of a tensor-parallel group */
    int tp_rank;
} cpu_state;

static int kv_dim(const ec_model_config *c)
{
    return c->n_kv_heads * c->head_dim;
}
static int q_dim(const ec_model_config *c)
{
    return c->n_heads * c->head_dim;
}

static float *alloc_floats(size_t n)
{
    return malloc((n ? n : 1) * sizeof(float));
}

static void free_activations(cpu_state *s)
{
    float **bufs[] = {&s->x, &s->xb, &s->q, &s->k, &s->v, &s->att, &s->gate, &s->up};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        free(*bufs[i]);
        *bufs[i] = NULL;
    }
    s->cap_rows = 0;
}

static int reserve_activations(cpu_state *s, int rows)
{
    if (rows <= s->cap_rows) return 0;
    const ec_model_config *c = &s->cfg;
    free_activations(s);
    size_t r = (size_t)rows;
    s->x = alloc_floats(r * c->dim);
    s->xb = alloc_floats(r * c->dim);
    s->q = alloc_floats(r * q_dim(c));
    s->k = alloc_floats(r * kv_dim(c));
    s->v = alloc_floats(r * kv_dim(c));
    s->att = alloc_floats(r * q_dim(c));
    s->gate = alloc_floats(r * c->hidden_dim);
    s->up = alloc_floats(r * c->hidden_dim);
    if (!s->x || !s->xb || !s->q || !s->k || !s->v || !s->att || !s->gate || !s->up) {
        free_activations(s);
        return ec_set_error("cpu backend: out of memory for %d activation rows", rows);
    }
    s->cap_rows = rows;
    return 0;
}

static void cpu_destroy(ec_backend *b)
{
    cpu_state *s = b->impl;
    if (!s) return;
    cpu_weights_free(&s->w);
    ec_pool_destroy(s->pool);
    free_activations(s);
    float *bufs[] = {s->inv_freq, s->rope_cos, s->rope_sin, s->k_cache,
                     s->v_cache,  s->scores,   s->last,     s->head_out};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        free(bufs[i]);
    free(s->stats);
    free(s);
    b->impl = NULL;
}

static int cpu_load(ec_backend *b, const ec_model *m, const ec_load_options *o)
{
    const ec_model_config *c = ec_model_config_of(m);
    if (b->impl) return ec_set_error("cpu backend: a model is already loaded");
    int max_seq = o->max_seq > 0 ? o->max_seq : c->max_seq_len;
    if (o->max_batch < 1) return ec_set_error("cpu backend: max_batch must be >= 1");
    if (max_seq > c->max_seq_len)
        return ec_set_error("cpu backend: %d positions exceed %s's max_seq_len %d", max_seq,
                            c->name, c->max_seq_len);
    int threads = o->threads > 0 ? o->threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (threads < 1) threads = 1;
    cpu_state *s = calloc(1, sizeof *s);
    if (!s) return ec_set_error("cpu backend: out of memory");
    b->impl = s;
    s->cfg = *c;
    s->max_batch = o->max_batch;
    s->max_seq = max_seq;
    s->tp = o->tp_group;
    s->tp_rank = o->tp_rank;
    size_t cache = (size_t)c->n_layers * o->max_batch * max_seq * kv_dim(c);
    int half = c->head_dim / 2;
    s->inv_freq = alloc_floats((size_t)half);
    s->rope_cos = alloc_floats((size_t)half);
    s->rope_sin = alloc_floats((size_t)half);
    s->k_cache = alloc_floats(cache);
    s->v_cache = alloc_floats(cache);
    s->scores = alloc_floats((size_t)threads * max_seq);
    s->last = alloc_floats((size_t)o->max_batch * c->dim);
    s->head_out = alloc_floats((size_t)o->max_batch * c->vocab_size);
    s->stats = calloc((size_t)c->n_layers * EC_LINEAR_INPUTS * 2, sizeof *s->stats);
    if (!s->inv_freq || !s->rope_cos || !s->rope_sin || !s->k_cache || !s->v_cache || !s->scores ||
        !s->last || !s->head_out || !s->stats) {
        cpu_destroy(b);
        return ec_set_error("cpu backend: out of memory for a KV cache of %zu floats x 2", cache);
    }
    cpu_rope_inv_freq(c, s->inv_freq);
    if (ec_pool_create(&s->pool, threads) != 0 || cpu_weights_load(&s->w, m, o) != 0) {
        cpu_destroy(b);
        return -1;
    }
    return 0;
}

/* Attention of every (row, query head) of one layer, split across threads by that pair. */
typedef struct {
    cpu_state *s;
    int layer, n, pos, rows;
} attention_job;

static void attention_part(void *arg, int t, int nthreads)
{
    const attention_job *j = arg;
    cpu_state *s = j->s;
    const ec_model_config *c = &s->cfg;
    int hd = c->head_dim, kvd = kv_dim(c), group = c->n_heads / c->n_kv_heads;
    float *scores = s->scores + (size_t)t * s->max_seq;
    int lo, hi;
    ec_pool_split(j->rows * c->n_heads, t, nthreads, &lo, &hi);
    for (int task = lo; task < hi; task++) {
        int row = task / c->n_heads, h = task % c->n_heads;
        int b = row / j->n, p = j->pos + row % j->n;
        size_t seq = ((size_t)j->layer * s->max_batch + b) * s->max_seq * kvd;
        size_t head = (size_t)(h / group) * hd;
        cpu_attend(s->att + (size_t)row * q_dim(c) + (size_t)h * hd,
                   s->q + (size_t)row * q_dim(c) + (size_t)h * hd, s->k_cache + seq + head,
                   s->v_cache + seq + head, kvd, p + 1, hd, scores);
    }
}

/* Rotates q and k of every row and appends k, v to each sequence's cache. */
static void rope_and_cache(cpu_state *s, int layer, int n, int pos, int rows)
{
    const ec_model_config *c = &s->cfg;
    int kvd = kv_dim(c);
    for (int row = 0; row < rows; row++) {
        int b = row / n, p = pos + row % n;
        cpu_rope_angles(s->inv_freq, c->head_dim / 2, p, s->rope_cos, s->rope_sin);
        float *q = s->q + (size_t)row * q_dim(c), *k = s->k + (size_t)row * kvd;
        cpu_rope_apply(q, c->n_heads, c->head_dim, s->rope_cos, s->rope_sin, c->rope_interleaved);
        cpu_rope_apply(k, c->n_kv_heads, c->head_dim, s->rope_cos, s->rope_sin,
                       c->rope_interleaved);
        size_t at = (((size_t)layer * s->max_batch + b) * s->max_seq + p) * kvd;
        memcpy(s->k_cache + at, k, (size_t)kvd * sizeof(float));
        memcpy(s->v_cache + at, s->v + (size_t)row * kvd, (size_t)kvd * sizeof(float));
    }
}

/* Adds a row-parallel projection's output y to the residual x, after summing y over the
 * tensor-parallel group when there is one (each rank holds a partial sum). */
static int add_projection(cpu_state *s, float *x, float *y, size_t n)
{
    if (s->tp && ec_tp_allreduce_sum(s->tp, s->tp_rank, y, n) != 0) return -1;
    for (size_t i = 0; i < n; i++)
        x[i] += y[i];
    return 0;
}

static int layer_forward(cpu_state *s, int l, int n, int pos, int rows)
{
    const ec_model_config *c = &s->cfg;
    const cpu_layer *L = &s->w.layers[l];
    long *stat = s->stats + (size_t)l * EC_LINEAR_INPUTS * 2; /* [input][2] */
    size_t resid = (size_t)rows * c->dim;
    for (int r = 0; r < rows; r++)
        cpu_rmsnorm(s->xb + (size_t)r * c->dim, s->x + (size_t)r * c->dim, L->attn_norm, c->dim,
                    c->norm_eps);
    /* q, k and v read the same input: its outlier columns are counted once (wq). */
    if (cpu_linear(s->pool, &L->wq, s->xb, rows, L->bq, s->q, stat + 2 * EC_LINEAR_QKV) != 0 ||
        cpu_linear(s->pool, &L->wk, s->xb, rows, L->bk, s->k, NULL) != 0 ||
        cpu_linear(s->pool, &L->wv, s->xb, rows, L->bv, s->v, NULL) != 0)
        return -1;
    rope_and_cache(s, l, n, pos, rows);
    attention_job job = {s, l, n, pos, rows};
    /* Each query reads up to pos + n cached positions of q_dim * 2 floats. */
    ec_pool_run(s->pool, attention_part, &job,
                ec_pool_parts(s->pool, 2.0 * rows * (pos + n) * q_dim(c)));
    if (cpu_linear(s->pool, &L->wo, s->att, rows, NULL, s->xb, stat + 2 * EC_LINEAR_O) != 0 ||
        add_projection(s, s->x, s->xb, resid) != 0)
        return -1;
    for (int r = 0; r < rows; r++)
        cpu_rmsnorm(s->xb + (size_t)r * c->dim, s->x + (size_t)r * c->dim, L->ffn_norm, c->dim,
                    c->norm_eps);
    if (cpu_linear(s->pool, &L->w_gate, s->xb, rows, NULL, s->gate, stat + 2 * EC_LINEAR_GATE_UP) != 0 ||
        cpu_linear(s->pool, &L->w_up, s->xb, rows, NULL, s->up, NULL) != 0)
        return -1;
    cpu_swiglu(s->gate, s->up, rows * c->hidden_dim);
    if (cpu_linear(s->pool, &L->w_down, s->gate, rows, NULL, s->xb, stat + 2 * EC_LINEAR_DOWN) != 0)
        return -1;
    return add_projection(s, s->x, s->xb, resid);
}

static int check_call(const cpu_state *s, const int *tokens, int batch, int n, int pos)
{
    if (batch < 1 || batch > s->max_batch)
        return ec_set_error("cpu backend: batch %d outside 1..%d", batch, s->max_batch);
    if (n < 1 || pos < 0 || pos + n > s->max_seq)
        return ec_set_error("cpu backend: positions [%d, %d) outside the cache of %d", pos, pos + n,
                            s->max_seq);
    for (int i = 0; i < batch * n; i++)
        if (tokens[i] < 0 || tokens[i] >= s->cfg.vocab_size)
            return ec_set_error("cpu backend: token id %d outside the vocabulary (0..%d)",
                                tokens[i], s->cfg.vocab_size - 1);
    return 0;
}

static int cpu_forward(ec_backend *b, const int *tokens, int batch, int n, int pos, int *next,
                       float *logits)
{
    cpu_state *s = b->impl;
    if (!s) return ec_set_error("cpu backend: no model loaded");
    const ec_model_config *c = &s->cfg;
    int rows = batch * n;
    if (check_call(s, tokens, batch, n, pos) != 0 || reserve_activations(s, rows) != 0) return -1;
    for (int r = 0; r < rows; r++)
        ec_qmatrix_dequantize_row(&s->w.tok_emb, tokens[r], s->x + (size_t)r * c->dim);
    for (int l = 0; l < c->n_layers; l++)
        if (layer_forward(s, l, n, pos, rows) != 0) return -1;
    /* Only each sequence's last position feeds the head: that is all generation needs. */
    for (int i = 0; i < batch; i++)
        cpu_rmsnorm(s->last + (size_t)i * c->dim, s->x + ((size_t)i * n + n - 1) * c->dim,
                    s->w.final_norm, c->dim, c->norm_eps);
    if (cpu_linear(s->pool, cpu_weights_head(&s->w), s->last, batch, NULL, s->head_out, NULL) != 0)
        return -1;
    for (int i = 0; i < batch; i++)
        next[i] = ec_argmax(s->head_out + (size_t)i * c->vocab_size, c->vocab_size);
    if (logits) memcpy(logits, s->head_out, (size_t)batch * c->vocab_size * sizeof(float));
    return 0;
}

/* Every call computes synchronously, so there is never work in flight. */
static int cpu_synchronize(ec_backend *b)
{
    (void)b;
    return 0;
}

static int cpu_outlier_stats(ec_backend *b, double *avg)
{
    cpu_state *s = b->impl;
    if (!s) return ec_set_error("cpu backend: no model loaded");
    for (size_t i = 0; i < (size_t)s->cfg.n_layers * EC_LINEAR_INPUTS; i++)
        avg[i] = s->stats[2 * i + 1] ? (double)s->stats[2 * i] / (double)s->stats[2 * i + 1] : 0.0;
    return 0;
}

const ec_backend_ops ec_cpu_backend_ops = {
    .name = "cpu",
    .load = cpu_load,
    .forward = cpu_forward,
    .synchronize = cpu_synchronize,
    .destroy = cpu_destroy,
    .outlier_stats = cpu_outlier_stats,
};
