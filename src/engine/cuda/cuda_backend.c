/* cuda_backend.c — the CUDA backend: load (plan, memory check, weight upload), forward (chunked
 * prefill through cuBLAS, decode through GEMV kernels replayed from one CUDA graph), synchronize,
 * outlier statistics and destroy. Every linear layer goes through ec_cuda_qlinear (qweight.h), in
 * the fused or the reference kernel family; the reference family runs without a graph.
 *
 * As a rank of a tensor-parallel group (ec_load_options.tp_group, one thread per rank) it holds
 * its shard and completes each row-parallel projection (o, down) with an NCCL all-reduce of the
 * residual stream: rank 0 adds its partial product to x, the others store theirs over their copy
 * of x, so the sum over ranks is x plus every partial product. The all-reduces are enqueued on
 * the step's stream, inside the decode graph.
 *
 * Memory layout (docs/cuda-backend.md has the full table): all weights live in one arena, the K
 * and V caches are [layers][max_batch][n_kv_heads][max_seq][head_dim] 16-bit each, and the
 * activations live in a second arena sized for the largest call (a prefill chunk). Everything
 * is sized and checked against cudaMemGetInfo before the first allocation. */
#include "cuda_backend.h"
#include "code_arch.h"
#include "common/cuda_check.h"
#include "kernels.h"
#include "nccl.h"
#include "qweight.h"

#include "engine/tp.h"

#include "engine/cpu/cpu_ops.h" /* cpu_rope_inv_freq: the same frequencies as the reference */

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Token rows per prefill chunk: the activation arena holds one chunk, and the packed formats
 * decode every weight to 16-bit once per chunk (packed_linear), so at 2048 rows a batch-64
 * prefill of 512 positions decoded each weight 16 times and took 18 % longer than fp16's; at
 * 8192, 2 % (with the whole-weight decode pass at the memory's rate, kernels_dequant.cu). One
 * chunk of 32768 rows, which holds that whole prefill, was no faster for nf4 and fp8 and made
 * fp16's prefill 2 % slower (its attention took longer). Where the device lacks the
 * memory for 8192, the chunk halves down to PREFILL_MIN_TOKENS. int8-mixed stays at
 * PREFILL_MIN_TOKENS: a column is an outlier when any token of the call crosses the threshold, so
 * larger chunks send more of the product down the 16-bit path (Qwen2.5-3B, batch 64: prefill
 * 4.4 s -> 8.5 s at 8192 with a CUDA-core outlier epilogue; not measured again with the
 * tensor-core one). */
enum {
    PREFILL_TOKENS = 8192,
    PREFILL_MIN_TOKENS = 2048,
    LOAD_THREADS_MAX = 8,    /* host threads reading tensors during load */
};
static const size_t STAGE_FLOATS = (size_t)16 << 20;      /* 64 MiB fp32 staging per loader */
static const size_t CUBLAS_WORKSPACE = (size_t)32 << 20;  /* fixed, so graph capture can use it */
static const size_t RUNTIME_RESERVE = (size_t)256 << 20;  /* context, cuBLAS handle, kernels */

/* Linear weights are in the load precision (qweight.h layouts); shapes are [rows][cols]. */
typedef struct {
    ec_cuda_qweight wqkv;  /* [q_dim + 2*kv_dim][dim]: segments q, k, v */
    float *bqkv;           /* [q_dim + 2*kv_dim], NULL without qkv_bias */
    ec_cuda_qweight wo;    /* [dim][q_dim] */
    ec_cuda_qweight wgu;   /* [2*hidden][dim]: segments gate, up */
    ec_cuda_qweight wdown; /* [dim][hidden_pad], columns [hidden, hidden_pad) zero; packed
                            * formats: [dim][hidden] with ldx = hidden_pad */
    float *attn_norm;      /* [dim] */
    float *ffn_norm;       /* [dim] */
} cuda_layer;

/* The linear inputs of a layer whose outlier columns are counted (engine.h). */
enum { STAT_QKV = EC_LINEAR_QKV, STAT_O = EC_LINEAR_O, STAT_GU = EC_LINEAR_GATE_UP,
       STAT_DOWN = EC_LINEAR_DOWN };

typedef struct {
    int device;
    int use_graphs;
    int loaded;
    ec_model_config cfg;
    ec_cuda_dtype dt;       /* 16-bit type of embeddings, activations and the KV cache */
    ec_precision prec;      /* linear layers */
    ec_precision head_prec; /* output head (16-bit unless quantize_head) */
    ec_kernels kernels;
    float threshold;        /* int8-mixed outlier threshold */
    ec_cuda_attn_shape shape;
    int max_batch, max_seq;
    int q_dim, kv_dim, qkv_dim;
    int hidden_pad;    /* hidden_dim rounded up to 8: the down-proj's 16-byte loads */
    int wide_cols;     /* max(2*hidden, dim): columns of `wide` */
    int chunk_rows;    /* token rows of the largest call (a prefill chunk or a decode batch) */
    int sharded;       /* loaded as a rank of a tensor-parallel group (comm joins it) */
    size_t part_slots; /* (sequence, split) pairs the decode attention partials hold */

    cudaStream_t stream;
    cublasHandle_t cublas;
    void *weights_arena, *act_arena, *cublas_ws;
    ec_cuda_qctx qctx;       /* linear-layer kernels: family, handles, int8 scratch */
    cuda_layer *layers;      /* [n_layers] (host array of device pointers) */
    ec_cuda_qweight emb;     /* [vocab][dim] 16-bit */
    ec_cuda_qweight head;    /* [vocab][dim] in head_prec; == emb when tied and 16-bit */
    float *final_norm;       /* [dim] */
    float *inv_freq;         /* [head_dim/2] */
    void *k_cache, *v_cache; /* [n_layers][max_batch][n_kv][max_seq][head_dim] 16-bit each */

    float *x;      /* [chunk_rows][dim] residual stream */
    void *xn;      /* [chunk_rows][dim] 16-bit normalised input of the next linear */
    float *qkv;    /* [chunk_rows][qkv_dim] */
    float *q;      /* [chunk_rows][q_dim] rotated queries */
    void *att;     /* [chunk_rows][q_dim] 16-bit attention output */
    void *h;       /* [chunk_rows][hidden_pad] 16-bit silu(gate)*up, pad columns zero */
    float *wide;   /* [chunk_rows][wide_cols]: gate/up of the GEMM path, reference outputs */
    float *part;   /* [part_slots][n_heads][head_dim + 2] attention partials */
    unsigned *att_tickets; /* [max_batch][n_heads] fused decode attention (zero between steps) */
    float *logits; /* [max_batch][vocab] */
    int *d_step;   /* [1 + chunk_rows]: the position, then the token ids of the call */
    int *d_next;   /* [max_batch] greedy tokens */
    int *d_history;         /* [max_seq][batch] tokens a decode step predicted (cuda_decode) */
    unsigned *d_rows_done;  /* argmax feed's count (zero between steps) */
    unsigned long long *argmax_keys; /* [max_batch] argmax's meeting point (zero between steps) */
    unsigned *argmax_tickets;        /* [max_batch] (zero between steps) */
    unsigned long long *stats; /* [n_layers][EC_LINEAR_INPUTS][2]: outlier columns, calls */
    int *h_step;   /* pinned mirror of d_step */
    int *h_next;   /* pinned mirror of d_next */

    cudaGraphExec_t graph; /* the decode step for graph_batch sequences */
    int graph_batch;

    int tp_rank;         /* rank in the tensor-parallel group; 0 alone */
    ec_nccl_comm *comm;  /* the group's communicator; NULL alone */
} cuda_state;

static size_t align256(size_t n) { return (n + 255) & ~(size_t)255; }

/* Bump allocator over an arena: with base 0 it only measures. */
static void *carve(uintptr_t base, size_t *off, size_t bytes)
{
    void *p = (void *)(base + *off);
    *off += align256(bytes);
    return p;
}

/* Places a weight in the arena (its format's layout from qweight.h). */
static void place(ec_cuda_qweight *w, ec_precision p, int rows, int cols, const cuda_state *s,
                  uintptr_t base, size_t *off)
{
    *off += align256(ec_cuda_qweight_place(w, p, rows, cols, s->threshold, base + *off));
}

static ec_precision emb_prec(const cuda_state *s) { return s->dt == EC_CUDA_BF16 ? EC_PREC_BF16 : EC_PREC_FP16; }
static int head_is_emb(const cuda_state *s) { return s->cfg.tied_embeddings && s->head_prec == emb_prec(s); }

/* Assigns every weight pointer inside the arena at `base`; returns the arena's size. */
static size_t plan_weights(cuda_state *s, uintptr_t base)
{
    const ec_model_config *c = &s->cfg;
    size_t off = 0, dim = (size_t)c->dim;
    place(&s->emb, emb_prec(s), c->vocab_size, c->dim, s, base, &off);
    if (head_is_emb(s)) s->head = s->emb;
    else place(&s->head, s->head_prec, c->vocab_size, c->dim, s, base, &off);
    s->final_norm = (float *)carve(base, &off, dim * 4);
    int qkv_seg[3] = {s->q_dim, s->kv_dim, s->kv_dim}, gu_seg[2] = {c->hidden_dim, c->hidden_dim};
    for (int l = 0; l < c->n_layers; l++) {
        cuda_layer *L = &s->layers[l];
        place(&L->wqkv, s->prec, s->qkv_dim, c->dim, s, base, &off);
        ec_cuda_qweight_segments(&L->wqkv, 3, qkv_seg);
        L->bqkv = c->qkv_bias ? (float *)carve(base, &off, (size_t)s->qkv_dim * 4) : NULL;
        place(&L->wo, s->prec, c->dim, s->q_dim, s, base, &off);
        place(&L->wgu, s->prec, 2 * c->hidden_dim, c->dim, s, base, &off);
        ec_cuda_qweight_segments(&L->wgu, 2, gu_seg);
        /* Packed formats keep the CPU's bytes (blocks along the real row); the activations
         * stay hidden_pad wide. */
        int down_cols = ec_cuda_is_packed(s->prec) ? c->hidden_dim : s->hidden_pad;
        place(&L->wdown, s->prec, c->dim, down_cols, s, base, &off);
        L->wdown.ldx = s->hidden_pad;
        L->attn_norm = (float *)carve(base, &off, dim * 4);
        L->ffn_norm = (float *)carve(base, &off, dim * 4);
    }
    s->inv_freq = (float *)carve(base, &off, (size_t)c->head_dim / 2 * 4);
    return off;
}

static size_t plan_activations(cuda_state *s, uintptr_t base)
{
    const ec_model_config *c = &s->cfg;
    size_t off = 0, r = (size_t)s->chunk_rows;
    s->x = (float *)carve(base, &off, r * c->dim * 4);
    s->xn = carve(base, &off, r * c->dim * 2);
    s->qkv = (float *)carve(base, &off, r * s->qkv_dim * 4);
    s->q = (float *)carve(base, &off, r * s->q_dim * 4);
    s->att = carve(base, &off, r * s->q_dim * 2);
    s->h = carve(base, &off, r * s->hidden_pad * 2);
    s->wide = (float *)carve(base, &off, r * s->wide_cols * 4);
    s->part = (float *)carve(base, &off, s->part_slots * c->n_heads * (c->head_dim + 2) * 4);
    s->att_tickets = (unsigned *)carve(base, &off, (size_t)s->max_batch * c->n_heads * 4);
    s->logits = (float *)carve(base, &off, (size_t)s->max_batch * c->vocab_size * 4);
    s->d_step = (int *)carve(base, &off, (r + 1) * 4);
    s->d_next = (int *)carve(base, &off, (size_t)s->max_batch * 4);
    s->d_history = (int *)carve(base, &off, (size_t)s->max_seq * s->max_batch * 4);
    s->d_rows_done = (unsigned *)carve(base, &off, 4);
    s->argmax_keys = (unsigned long long *)carve(base, &off, (size_t)s->max_batch * 8);
    s->argmax_tickets = (unsigned *)carve(base, &off, (size_t)s->max_batch * 4);
    s->stats = (unsigned long long *)carve(base, &off,
                                           (size_t)c->n_layers * EC_LINEAR_INPUTS * 2 * 8);
    return off;
}

static size_t kv_bytes(const cuda_state *s) /* one of the two caches */
{
    const ec_model_config *c = &s->cfg;
    return (size_t)c->n_layers * s->max_batch * c->n_kv_heads * s->max_seq * c->head_dim * 2;
}

static int load_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : (n > LOAD_THREADS_MAX ? LOAD_THREADS_MAX : (int)n);
}

static void release(cuda_state *s)
{
    /* Teardown: errors here have no one to report to, the pointers are dropped either way. */
    if (s->graph) cudaGraphExecDestroy(s->graph);
    ec_nccl_comm_destroy(s->comm);
    ec_cuda_qctx_free(&s->qctx);
    if (s->cublas) cublasDestroy(s->cublas);
    if (s->stream) cudaStreamDestroy(s->stream);
    cudaFree(s->weights_arena);
    cudaFree(s->act_arena);
    cudaFree(s->cublas_ws);
    cudaFree(s->k_cache);
    cudaFree(s->v_cache);
    cudaFreeHost(s->h_step);
    cudaFreeHost(s->h_next);
    free(s->layers);
    int device = s->device, graphs = s->use_graphs;
    memset(s, 0, sizeof *s);
    s->device = device;
    s->use_graphs = graphs;
}

static int check_config(const ec_model_config *c, ec_precision p)
{
    const ec_qformat *f = ec_qformat_of(p);
    if (!f || !(f->backends & EC_QFORMAT_CUDA) || ec_cuda_format_of(p).path <= EC_CUDA_PATH_NONE) {
        char names[128];
        return ec_set_error("precision %s is not supported by the CUDA backend (%s)",
                            ec_precision_name(p),
                            ec_qformat_names(EC_QFORMAT_CUDA, ", ", names, sizeof names));
    }
    if (c->dim % 8 || c->head_dim % 8 || c->head_dim > EC_CUDA_MAX_HEAD_DIM)
        return ec_set_error("model %s: the CUDA kernels need dim (%d) and head_dim (%d) to be "
                            "multiples of 8, head_dim at most %d",
                            c->name, c->dim, c->head_dim, EC_CUDA_MAX_HEAD_DIM);
    if (c->n_kv_heads < 1 || c->n_heads % c->n_kv_heads)
        return ec_set_error("model %s: %d heads are not a multiple of %d kv heads", c->name,
                            c->n_heads, c->n_kv_heads);
    return 0;
}

static int is_int8(ec_precision p) { return ec_cuda_format_of(p).path == EC_CUDA_PATH_INT8; }
static int has_outliers(ec_precision p) { return ec_qformat_of(p)->outliers; }
static int imax(int a, int b) { return a > b ? a : b; }

/* The bounds of every linear call, from which the int8 scratch is sized. */
static ec_cuda_qshape linear_shape(const cuda_state *s)
{
    const ec_model_config *c = &s->cfg;
    size_t dim = (size_t)c->dim, hid = (size_t)c->hidden_dim, most = dim * s->q_dim;
    size_t seg[] = {hid * dim, dim * s->hidden_pad, (size_t)s->kv_dim * dim};
    for (int i = 0; i < 3; i++) most = seg[i] > most ? seg[i] : most;
    int quantized_head = is_int8(s->head_prec);
    if (quantized_head && (size_t)c->vocab_size * dim > most) most = (size_t)c->vocab_size * dim;
    ec_cuda_qshape q = {s->chunk_rows,
                        imax(imax(c->dim, s->q_dim), s->hidden_pad),
                        imax(imax(s->qkv_dim, 2 * c->hidden_dim), imax(c->dim, c->vocab_size)),
                        most,
                        is_int8(s->prec) || quantized_head,
                        s->kernels,
                        ec_cuda_is_packed(s->prec),
                        0,
                        0,
                        s->sharded};
    /* The reference family dequantizes a whole (fused) packed weight into 16-bit scratch. */
    if (q.packed) {
        size_t w[] = {(size_t)s->qkv_dim * dim, dim * s->q_dim, 2 * hid * dim, dim * hid,
                      ec_cuda_is_packed(s->head_prec) ? (size_t)c->vocab_size * dim : 0};
        for (int i = 0; i < 5; i++) q.max_weight = w[i] > q.max_weight ? w[i] : q.max_weight;
    }
    /* The fused family's prefill gathers the outlier columns of a whole fused weight. */
    q.mixed = has_outliers(s->prec) || has_outliers(s->head_prec);
    if (q.mixed && s->kernels != EC_KERNELS_REFERENCE) {
        size_t fused[] = {(size_t)s->qkv_dim * dim, 2 * hid * dim};
        for (int i = 0; i < 2; i++) q.max_elems = fused[i] > q.max_elems ? fused[i] : q.max_elems;
    }
    return q;
}

/* A prefill chunk of `rows` token rows (at least one per sequence, at most every position of
 * every sequence). */
static void set_chunk_rows(cuda_state *s, long rows)
{
    long most = (long)s->max_batch * s->max_seq;
    if (rows < s->max_batch) rows = s->max_batch;
    s->chunk_rows = (int)(rows < most ? rows : most);
}

/* Sizes everything with the largest prefill chunk that fits in free device memory (see
 * PREFILL_TOKENS), checks that it fits, then allocates. */
static int allocate(cuda_state *s)
{
    const ec_model_config *c = &s->cfg;
    s->layers = (cuda_layer *)calloc((size_t)c->n_layers, sizeof *s->layers);
    if (!s->layers) return ec_set_error("out of host memory for %d layers", c->n_layers);
    size_t weights = plan_weights(s, 0), kv = 2 * kv_bytes(s);
    size_t staging = (size_t)load_threads() * STAGE_FLOATS * 4;
    size_t free_b, total_b, acts, linear_scratch, need;
    ec_cuda_qshape qshape;
    EC_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo on device %d", s->device);
    long first = has_outliers(s->prec) ? PREFILL_MIN_TOKENS : PREFILL_TOKENS;
    for (long rows = first;; rows /= 2) {
        set_chunk_rows(s, rows);
        qshape = linear_shape(s);
        acts = plan_activations(s, 0);
        linear_scratch = ec_cuda_qctx_bytes(&qshape);
        need = weights + acts + linear_scratch + kv + CUBLAS_WORKSPACE + staging + RUNTIME_RESERVE;
        if (need <= free_b || rows <= PREFILL_MIN_TOKENS) break;
    }
    if (need > free_b)
        return ec_set_error("model %s (%s) with %d sequences x %d positions does not fit on CUDA "
                            "device %d: needs %zu bytes (weights %zu, KV cache %zu, activations "
                            "%zu, load staging and runtime %zu) but only %zu of %zu are free",
                            c->name, ec_precision_name(s->prec), s->max_batch,
                            s->max_seq, s->device, need, weights, kv, acts + linear_scratch,
                            CUBLAS_WORKSPACE + staging + RUNTIME_RESERVE, free_b, total_b);
    EC_CUDA_TRY(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking), "cudaStreamCreate");
    EC_CUBLAS_TRY(cublasCreate(&s->cublas), "cublasCreate");
    EC_CUBLAS_TRY(cublasSetStream(s->cublas, s->stream), "cublasSetStream");
    EC_CUDA_TRY(cudaMalloc(&s->cublas_ws, CUBLAS_WORKSPACE), "cudaMalloc of cuBLAS workspace (%zu bytes)",
                CUBLAS_WORKSPACE);
    EC_CUBLAS_TRY(cublasSetWorkspace(s->cublas, s->cublas_ws, CUBLAS_WORKSPACE),
                  "cublasSetWorkspace");
    EC_CUDA_TRY(cudaMalloc(&s->weights_arena, weights), "cudaMalloc of weights (%zu bytes)", weights);
    /* Zero so the padding columns of the down-projection contribute nothing. */
    EC_CUDA_TRY(cudaMemsetAsync(s->weights_arena, 0, weights, s->stream), "cudaMemset of weights");
    EC_CUDA_TRY(cudaMalloc(&s->k_cache, kv / 2), "cudaMalloc of K cache (%zu bytes)", kv / 2);
    EC_CUDA_TRY(cudaMalloc(&s->v_cache, kv / 2), "cudaMalloc of V cache (%zu bytes)", kv / 2);
    EC_CUDA_TRY(cudaMalloc(&s->act_arena, acts), "cudaMalloc of activations (%zu bytes)", acts);
    /* Zero so the padding columns of h stay finite (they meet zero weights: 0 * NaN = NaN). */
    EC_CUDA_TRY(cudaMemsetAsync(s->act_arena, 0, acts, s->stream), "cudaMemset of activations");
    plan_weights(s, (uintptr_t)s->weights_arena);
    plan_activations(s, (uintptr_t)s->act_arena);
    EC_CUDA_TRY(cudaMallocHost((void **)&s->h_step, ((size_t)s->chunk_rows + 1) * sizeof(int)),
                "cudaMallocHost of step tokens");
    EC_CUDA_TRY(cudaMallocHost((void **)&s->h_next, (size_t)s->max_batch * sizeof(int)),
                "cudaMallocHost of next tokens");
    EC_CUDA_TRY(cudaStreamSynchronize(s->stream), "clearing the weight and activation arenas");
    return ec_cuda_qctx_init(&s->qctx, &qshape, s->cublas, s->stream, s->wide);
}

/* ---- weight upload: host threads read tensors (fp32); the GPU converts them to 16-bit, int8
 * is quantized on the host by the CPU reference (byte-identical by construction) ---- */

typedef struct {
    ec_tensor_kind kind;
    int layer;
    ec_cuda_qweight *w;       /* destination weight (rows from row0 on), or NULL: ... */
    int row0;
    float *f32;               /* ... norms and biases, copied as fp32 [rows*cols] */
} upload_job;

typedef struct {
    const ec_model *m;
    const cuda_state *s;
    const upload_job *jobs;
    int n_jobs;
    int next_job;   /* guarded by lock */
    int failed;     /* guarded by lock; stops the other threads */
    char error[512];
    pthread_mutex_t lock;
} upload_ctx;

static int take_job(upload_ctx *u)
{
    pthread_mutex_lock(&u->lock);
    int j = u->failed ? -1 : (u->next_job < u->n_jobs ? u->next_job++ : -1);
    pthread_mutex_unlock(&u->lock);
    return j;
}

/* int8 codes go into rows [row0, row0 + rows) of the [.][ld] layout (pad columns stay zero
 * from the arena's clearing), the row absmax values into scales [row0 ...]. */
static int upload_int8(const upload_job *j, const float *host, int rows, int cols, cudaStream_t st)
{
    const ec_cuda_qweight *w = j->w;
    const char *name = ec_tensor_kind_name(j->kind);
    ec_qmatrix q;
    if (ec_qmatrix_quantize(&q, w->prec, host, rows, cols) != 0)
        return ec_error_context("%s (layer %d)", name, j->layer);
    int8_t *dst = (int8_t *)w->data + (size_t)j->row0 * w->ld;
    cudaError_t e = cudaMemcpy2DAsync(dst, (size_t)w->ld, q.data, (size_t)cols, (size_t)cols,
                                      (size_t)rows, cudaMemcpyHostToDevice, st);
    if (e == cudaSuccess)
        e = cudaMemcpyAsync(w->scales + j->row0, q.scales, (size_t)rows * sizeof(float),
                            cudaMemcpyHostToDevice, st);
    if (e == cudaSuccess) e = cudaStreamSynchronize(st); /* q is freed next */
    ec_qmatrix_free(&q);
    EC_CUDA_TRY(e, "upload of int8 %s (layer %d, %d x %d)", name, j->layer, rows, cols);
    return 0;
}

/* nf4 / nf4-dq / fp8: the CPU's quantization of this tensor alone (so nf4-dq's second-level
 * statistics are this segment's, as on the CPU), copied byte for byte: codes to row0 * ld,
 * scales to row0 * nblocks (nf4) or row0 (fp8), qscales to row0 * nblocks and the second-level
 * absmax into the segment's own array; the segment's offset goes into the descriptor (each
 * job writes only its own segment's). */
static int upload_packed(const upload_job *j, const float *host, int rows, int cols,
                         cudaStream_t st)
{
    ec_cuda_qweight *w = j->w;
    const char *name = ec_tensor_kind_name(j->kind);
    int seg = 0;
    while (seg < w->n_segments - 1 && w->seg[seg].row0 != j->row0) seg++;
    if (w->seg[seg].row0 != j->row0 || w->seg[seg].rows != rows || w->cols != cols)
        return ec_set_error("%s (layer %d): %d x %d at row %d does not match a segment of its "
                            "%d x %d weight",
                            name, j->layer, rows, cols, j->row0, w->rows, w->cols);
    ec_qmatrix q;
    if (ec_qmatrix_quantize(&q, w->prec, host, rows, cols) != 0)
        return ec_error_context("%s (layer %d)", name, j->layer);
    const ec_qformat *f = ec_qformat_of(w->prec);
    size_t nb = (size_t)(cols + EC_NF4_BLOCK - 1) / EC_NF4_BLOCK, r0 = (size_t)j->row0;
    size_t per_row = f->scale_block ? nb : 1; /* fp32 scales of a row: nf4 blocks, fp8 one */
    size_t nsc = (size_t)rows * per_row;
    size_t n2 = ((size_t)rows * nb + EC_NF4_DQ_BLOCK - 1) / EC_NF4_DQ_BLOCK;
    cudaError_t e = cudaMemcpyAsync((uint8_t *)w->data + r0 * (size_t)w->ld, q.data,
                                    (size_t)rows * (size_t)w->ld, cudaMemcpyHostToDevice, st);
    if (e == cudaSuccess && !f->double_quant)
        e = cudaMemcpyAsync(w->scales + r0 * per_row, q.scales,
                            nsc * sizeof(float), cudaMemcpyHostToDevice, st);
    if (e == cudaSuccess && f->double_quant) {
        e = cudaMemcpyAsync(w->qscales + r0 * nb, q.qscales, (size_t)rows * nb,
                            cudaMemcpyHostToDevice, st);
        if (e == cudaSuccess)
            e = cudaMemcpyAsync((float *)w->seg[seg].qscale_absmax, q.qscale_absmax,
                                n2 * sizeof(float), cudaMemcpyHostToDevice, st);
        w->seg[seg].qscale_offset = q.qscale_offset;
    }
    if (e == cudaSuccess) e = cudaStreamSynchronize(st); /* q is freed next */
    ec_qmatrix_free(&q);
    EC_CUDA_TRY(e, "upload of %s %s (layer %d, %d x %d)", ec_precision_name(w->prec), name,
                j->layer, rows, cols);
    return 0;
}

static int upload_one(upload_ctx *u, const upload_job *j, float *host, float *stage,
                      cudaStream_t st)
{
    int rows, cols;
    ec_tensor_shape(&u->s->cfg, j->kind, &rows, &cols);
    if (ec_model_read_tensor(u->m, j->kind, j->layer, host) != 0) return -1;
    const char *name = ec_tensor_kind_name(j->kind);
    if (!j->w) {
        EC_CUDA_TRY(cudaMemcpyAsync(j->f32, host, (size_t)rows * cols * 4, cudaMemcpyHostToDevice, st),
                    "upload of %s (layer %d)", name, j->layer);
        return 0;
    }
    if (is_int8(j->w->prec)) return upload_int8(j, host, rows, cols, st);
    if (ec_cuda_is_packed(j->w->prec)) return upload_packed(j, host, rows, cols, st);
    ec_cuda_dtype dt = ec_cuda_format_of(j->w->prec).act;
    int ld = j->w->ld;
    int chunk = (int)(STAGE_FLOATS / (size_t)cols);
    if (chunk < 1)
        return ec_set_error("tensor %s: a row of %d values exceeds the upload staging buffer",
                            name, cols);
    for (int r0 = 0; r0 < rows; r0 += chunk) {
        int nr = rows - r0 < chunk ? rows - r0 : chunk;
        size_t n = (size_t)nr * cols;
        EC_CUDA_TRY(cudaMemcpyAsync(stage, host + (size_t)r0 * cols, n * 4, cudaMemcpyHostToDevice, st),
                    "upload of %s (layer %d, rows %d-%d)", name, j->layer, r0, r0 + nr);
        char *dst = (char *)j->w->data + ((size_t)j->row0 + r0) * ld * 2;
        if (ec_cuda_convert_f32(dt, stage, dst, nr, cols, ld, st) != 0) return -1;
        /* The staging buffer is reused by the next chunk. */
        EC_CUDA_TRY(cudaStreamSynchronize(st), "conversion of %s (layer %d)", name, j->layer);
    }
    return 0;
}

static int upload_worker_run(upload_ctx *u, size_t host_floats)
{
    EC_CUDA_TRY(cudaSetDevice(u->s->device), "cudaSetDevice(%d) in a loader thread", u->s->device);
    float *host = (float *)malloc(host_floats * sizeof(float)), *stage = NULL;
    cudaStream_t st = NULL;
    int rc = host ? 0 : ec_set_error("out of host memory for a %zu-value tensor", host_floats);
    if (rc == 0 && cudaMalloc((void **)&stage, STAGE_FLOATS * 4) != cudaSuccess)
        rc = ec_set_error("cudaMalloc of upload staging (%zu bytes) failed", STAGE_FLOATS * 4);
    if (rc == 0 && cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) != cudaSuccess)
        rc = ec_set_error("cudaStreamCreate for a loader thread failed");
    for (int j; rc == 0 && (j = take_job(u)) >= 0;)
        rc = upload_one(u, &u->jobs[j], host, stage, st);
    if (st && cudaStreamSynchronize(st) != cudaSuccess && rc == 0)
        rc = ec_set_error("finishing the weight upload failed");
    if (st) cudaStreamDestroy(st);
    cudaFree(stage);
    free(host);
    return rc;
}

typedef struct {
    upload_ctx *u;
    size_t host_floats;
} upload_arg;

static void *upload_worker(void *arg)
{
    upload_arg *a = (upload_arg *)arg;
    if (upload_worker_run(a->u, a->host_floats) != 0) {
        pthread_mutex_lock(&a->u->lock);
        if (!a->u->failed) snprintf(a->u->error, sizeof a->u->error, "%s", ec_last_error());
        a->u->failed = 1;
        pthread_mutex_unlock(&a->u->lock);
    }
    return NULL;
}

static int upload_weights(cuda_state *s, const ec_model *m)
{
    const ec_model_config *c = &s->cfg;
    int per_layer = 12, n = 3 + per_layer * c->n_layers, k = 0;
    upload_job *jobs = (upload_job *)calloc((size_t)n, sizeof *jobs);
    if (!jobs) return ec_set_error("out of host memory for the upload plan");
    jobs[k++] = (upload_job){EC_T_TOK_EMB, 0, &s->emb, 0, NULL};
    if (!head_is_emb(s)) jobs[k++] = (upload_job){EC_T_LM_HEAD, 0, &s->head, 0, NULL};
    jobs[k++] = (upload_job){EC_T_FINAL_NORM, 0, NULL, 0, s->final_norm};
    for (int l = 0; l < c->n_layers; l++) {
        cuda_layer *L = &s->layers[l];
        jobs[k++] = (upload_job){EC_T_WQ, l, &L->wqkv, 0, NULL};
        jobs[k++] = (upload_job){EC_T_WK, l, &L->wqkv, s->q_dim, NULL};
        jobs[k++] = (upload_job){EC_T_WV, l, &L->wqkv, s->q_dim + s->kv_dim, NULL};
        if (c->qkv_bias) {
            jobs[k++] = (upload_job){EC_T_BQ, l, NULL, 0, L->bqkv};
            jobs[k++] = (upload_job){EC_T_BK, l, NULL, 0, L->bqkv + s->q_dim};
            jobs[k++] = (upload_job){EC_T_BV, l, NULL, 0, L->bqkv + s->q_dim + s->kv_dim};
        }
        jobs[k++] = (upload_job){EC_T_WO, l, &L->wo, 0, NULL};
        jobs[k++] = (upload_job){EC_T_W_GATE, l, &L->wgu, 0, NULL};
        jobs[k++] = (upload_job){EC_T_W_UP, l, &L->wgu, c->hidden_dim, NULL};
        jobs[k++] = (upload_job){EC_T_W_DOWN, l, &L->wdown, 0, NULL};
        jobs[k++] = (upload_job){EC_T_ATTN_NORM, l, NULL, 0, L->attn_norm};
        jobs[k++] = (upload_job){EC_T_FFN_NORM, l, NULL, 0, L->ffn_norm};
    }
    size_t largest = 0;
    for (int i = 0; i < k; i++) {
        int rows, cols;
        ec_tensor_shape(c, jobs[i].kind, &rows, &cols);
        if ((size_t)rows * cols > largest) largest = (size_t)rows * cols;
    }
    upload_ctx u;
    memset(&u, 0, sizeof u);
    u.m = m;
    u.s = s;
    u.jobs = jobs;
    u.n_jobs = k;
    pthread_mutex_init(&u.lock, NULL);
    upload_arg arg = {&u, largest};
    pthread_t tids[LOAD_THREADS_MAX];
    int nt = load_threads(), started = 0;
    for (; started < nt; started++)
        if (pthread_create(&tids[started], NULL, upload_worker, &arg) != 0) break;
    if (started == 0) upload_worker(&arg); /* no threads available: do it here */
    for (int i = 0; i < started; i++) pthread_join(tids[i], NULL);
    pthread_mutex_destroy(&u.lock);
    free(jobs);
    if (u.failed) return ec_set_error("%s", u.error);
    return 0;
}

/* ---- the forward pass ---- */

static unsigned long long *stat_of(const cuda_state *s, int layer, int input)
{
    return s->stats + ((size_t)layer * EC_LINEAR_INPUTS + input) * 2;
}

/* A decode call's attention splits (ec_cuda_decode_split_len, ec_cuda_decode_clustered). */
typedef struct {
    int n, len;    /* splits of a row, positions per split */
    int clustered; /* the fused kernel's splits meet in a thread block cluster */
} decode_splits;

/* Rope, KV append and attention of one layer: at decode in the fused family one kernel
 * (ec_cuda_attention_decode), else two, as eager frameworks launch them; calls of several
 * positions per sequence (prefill chunks) attend with the tiled kernel, in both families, as
 * the frameworks' fused attention does. sp: the decode splits (n = 1). */
static int attention(cuda_state *s, const cuda_layer *L, const int *pos, int batch, int n,
                     decode_splits sp, void *kc, void *vc)
{
    if (n == 1 && s->kernels == EC_KERNELS_FUSED)
        return ec_cuda_attention_decode(s->dt, &s->shape, s->qkv, L->bqkv, s->inv_freq, pos,
                                        batch, sp.n, sp.len, sp.clustered, kc, vc, s->part,
                                        s->att_tickets, s->att, s->stream);
    if (ec_cuda_rope_kv(s->dt, &s->shape, s->qkv, L->bqkv, s->inv_freq, pos, batch, n, s->q, kc,
                        vc, s->stream))
        return -1;
    if (n > 1)
        return ec_cuda_attention_prefill(s->dt, &s->shape, s->q, kc, vc, pos, batch, n, s->att,
                                         s->stream);
    return ec_cuda_attention(s->dt, &s->shape, s->q, kc, vc, pos, batch, sp.n, sp.len, s->part,
                             s->att, s->stream);
}

/* A tensor-parallel rank's residual stream x [rows][dim] becomes the sum over the ranks. */
static int sum_over_ranks(cuda_state *s, int rows)
{
    return s->comm ? ec_nccl_allreduce_sum(s->comm, s->x, (size_t)rows * s->cfg.dim, s->stream) : 0;
}

/* Enqueues the layers (and, when with_head, the head and argmax) for `batch` sequences of n
 * positions whose position and tokens are already in d_step. The fused family does no host
 * synchronisation, so its decode call can be captured into a graph; the reference family
 * synchronises inside int8-mixed linears, as bitsandbytes does. A decode step's argmax leaves
 * d_step holding the next step's input (ec_cuda_argmax_feed). */
static int enqueue_step(cuda_state *s, int batch, int n, decode_splits sp, int with_head)
{
    const ec_model_config *c = &s->cfg;
    int rows = batch * n, dim = c->dim;
    cudaStream_t st = s->stream;
    const int *pos = s->d_step, *tokens = s->d_step + 1;
    size_t kv_layer = (size_t)s->max_batch * c->n_kv_heads * s->max_seq * c->head_dim * 2;
    const ec_cuda_qctx *q = &s->qctx;
    /* The residual projections of a tensor-parallel rank: see the banner. */
    ec_gemv_mode residual = s->tp_rank == 0 ? EC_GEMV_ADD : EC_GEMV_STORE;
    if (ec_cuda_embed(s->dt, s->emb.data, tokens, rows, dim, s->x, st)) return -1;
    /* The residual adds of a batch-1 step may leave the sums of squares of the row they write,
     * so that the norm after them needs no launch (ec_cuda_qlinear_sumsq); the embedding leaves
     * none. */
    const float *carried = NULL;
    for (int l = 0; l < c->n_layers; l++) {
        const cuda_layer *L = &s->layers[l];
        char *kc = (char *)s->k_cache + l * kv_layer, *vc = (char *)s->v_cache + l * kv_layer;
        ec_cuda_norm attn_norm = {s->x, (size_t)dim, L->attn_norm, c->norm_eps, carried};
        ec_cuda_norm ffn_norm = {s->x, (size_t)dim, L->ffn_norm, c->norm_eps,
                                 ec_cuda_qlinear_sumsq(q, &L->wo, rows)};
        if (ec_cuda_qlinear_normed(q, &L->wqkv, EC_GEMV_STORE, &attn_norm, s->xn, rows, s->qkv,
                                   s->qkv_dim, stat_of(s, l, STAT_QKV)) ||
            attention(s, L, pos, batch, n, sp, kc, vc) ||
            ec_cuda_qlinear(q, &L->wo, residual, s->att, rows, s->x, dim, stat_of(s, l, STAT_O)) ||
            sum_over_ranks(s, rows) ||
            ec_cuda_qlinear_normed(q, &L->wgu, EC_GEMV_SILU_MUL, &ffn_norm, s->xn, rows, s->h,
                                   s->hidden_pad, stat_of(s, l, STAT_GU)) ||
            ec_cuda_qlinear(q, &L->wdown, residual, s->h, rows, s->x, dim,
                            stat_of(s, l, STAT_DOWN)) ||
            sum_over_ranks(s, rows))
            return -1;
        carried = ec_cuda_qlinear_sumsq(q, &L->wdown, rows);
    }
    if (!with_head) return 0;
    /* Only each sequence's last position feeds the head. */
    ec_cuda_norm final_norm = {s->x + (size_t)(n - 1) * dim, (size_t)n * dim, s->final_norm,
                               c->norm_eps, carried};
    if (ec_cuda_qlinear_normed(q, &s->head, EC_GEMV_STORE, &final_norm, s->xn, batch, s->logits,
                               c->vocab_size, NULL))
        return -1;
    ec_cuda_argmax_feed feed = {s->d_step, s->d_history, s->d_rows_done};
    return ec_cuda_argmax(s->logits, batch, c->vocab_size, s->d_next, s->argmax_keys,
                          s->argmax_tickets, n == 1 ? &feed : NULL, st);
}

/* Copies the call's position and tokens [batch][n] (columns c0 .. c0+n of rows of width `width`)
 * to the device. The caller has synchronised since h_step was last read by a copy. */
static int upload_step(cuda_state *s, const int *tokens, int batch, int width, int c0, int n, int pos)
{
    s->h_step[0] = pos;
    for (int b = 0; b < batch; b++)
        memcpy(s->h_step + 1 + (size_t)b * n, tokens + (size_t)b * width + c0, (size_t)n * sizeof(int));
    EC_CUDA_TRY(cudaMemcpyAsync(s->d_step, s->h_step, ((size_t)batch * n + 1) * sizeof(int),
                                cudaMemcpyHostToDevice, s->stream),
                "upload of %d token ids", batch * n);
    return 0;
}

/* Enqueues a call of one position per sequence (a decode step, or a prefill chunk of one): its
 * attention in splits of ec_cuda_decode_split_len positions covering max_seq, clustered where
 * ec_cuda_decode_clustered says. */
static int enqueue_one(cuda_state *s, int batch, int with_head)
{
    int rows = s->cfg.n_heads * batch, len = ec_cuda_decode_split_len(s->max_seq, rows);
    decode_splits sp = {(s->max_seq + len - 1) / len, len,
                        ec_cuda_decode_clustered(s->max_seq, rows)};
    return enqueue_step(s, batch, 1, sp, with_head);
}

static int decode_step(cuda_state *s, int batch)
{
    return enqueue_one(s, batch, 1);
}

static int capture_decode(cuda_state *s, int batch)
{
    if (s->graph) {
        EC_CUDA_TRY(cudaGraphExecDestroy(s->graph), "cudaGraphExecDestroy");
        s->graph = NULL;
    }
    EC_CUDA_TRY(cudaStreamBeginCapture(s->stream, cudaStreamCaptureModeThreadLocal),
                "cudaStreamBeginCapture of the decode step");
    int rc = decode_step(s, batch);
    cudaGraph_t g = NULL;
    cudaError_t end = cudaStreamEndCapture(s->stream, &g); /* always end, even after a failure */
    if (rc != 0) {
        if (g) cudaGraphDestroy(g);
        return -1;
    }
    EC_CUDA_TRY(end, "cudaStreamEndCapture of the decode step (batch %d)", batch);
    cudaError_t inst = cudaGraphInstantiate(&s->graph, g, 0);
    cudaGraphDestroy(g);
    EC_CUDA_TRY(inst, "cudaGraphInstantiate of the decode step (batch %d)", batch);
    EC_CUDA_TRY(cudaGraphUpload(s->graph, s->stream), "cudaGraphUpload of the decode step");
    EC_CUDA_TRY(cudaStreamSynchronize(s->stream), "upload of the decode step (batch %d)", batch);
    s->graph_batch = batch;
    return 0;
}

static int prefill(cuda_state *s, const int *tokens, int batch, int n, int pos)
{
    int per_chunk = s->chunk_rows / batch; /* >= 1: chunk_rows >= max_batch */
    for (int c0 = 0; c0 < n; c0 += per_chunk) {
        int cn = n - c0 < per_chunk ? n - c0 : per_chunk;
        int last = c0 + cn == n;
        if (c0 > 0) EC_CUDA_TRY(cudaStreamSynchronize(s->stream), "prefill chunk at %d", pos + c0);
        if (upload_step(s, tokens, batch, n, c0, cn, pos + c0) ||
            (cn == 1 ? enqueue_one(s, batch, last)
                     : enqueue_step(s, batch, cn, (decode_splits){0, 0, 0}, last)))
            return -1;
    }
    return 0;
}

/* Makes the backend's GPU current for the calling thread: each tensor-parallel rank runs on a
 * thread of its own, and a caller may have made another GPU current. */
static int on_device(const cuda_state *s)
{
    EC_CUDA_TRY(cudaSetDevice(s->device), "cudaSetDevice(%d)", s->device);
    return 0;
}

/* Checks a call of `batch` sequences over positions [pos, pos + n) whose input tokens are
 * tokens [batch][ld] (the first `width` columns of each row). */
static int check_call(const cuda_state *s, const char *what, const int *tokens, int ld, int width,
                      int batch, int n, int pos)
{
    if (!s->loaded) return ec_set_error("CUDA backend: %s before a successful load", what);
    if (batch < 1 || batch > s->max_batch || n < 1 || pos < 0 || pos + n > s->max_seq)
        return ec_set_error("CUDA backend: %s of batch %d x positions [%d, %d) outside the loaded "
                            "%d sequences x %d positions", what, batch, pos, pos + n,
                            s->max_batch, s->max_seq);
    for (long b = 0; b < batch; b++)
        for (long i = b * ld; i < b * ld + width; i++)
            if (tokens[i] < 0 || tokens[i] >= s->cfg.vocab_size)
                return ec_set_error("CUDA backend: %s: token id %d at index %ld outside the "
                                    "vocabulary (%d)", what, tokens[i], i, s->cfg.vocab_size);
    return 0;
}

/* One decode step of `batch` sequences whose input is in d_step: the graph's replay, or the
 * same kernels launched one by one. */
static int launch_decode_step(cuda_state *s, int batch)
{
    if (!s->use_graphs || s->kernels == EC_KERNELS_REFERENCE) return decode_step(s, batch);
    if (s->graph_batch != batch && capture_decode(s, batch)) return -1;
    EC_CUDA_TRY(cudaGraphLaunch(s->graph, s->stream), "cudaGraphLaunch of the decode step");
    return 0;
}

static int cuda_forward(ec_backend *b, const int *tokens, int batch, int n, int pos, int *next,
                        float *logits)
{
    cuda_state *s = (cuda_state *)b->impl;
    if (check_call(s, "forward", tokens, n, n, batch, n, pos) || on_device(s)) return -1;
    if (n > 1) {
        if (prefill(s, tokens, batch, n, pos)) return -1;
    } else {
        if (upload_step(s, tokens, batch, 1, 0, 1, pos) || launch_decode_step(s, batch)) return -1;
    }
    EC_CUDA_TRY(cudaMemcpyAsync(s->h_next, s->d_next, (size_t)batch * sizeof(int),
                                cudaMemcpyDeviceToHost, s->stream),
                "download of the next tokens");
    if (logits)
        EC_CUDA_TRY(cudaMemcpyAsync(logits, s->logits, (size_t)batch * s->cfg.vocab_size * 4,
                                    cudaMemcpyDeviceToHost, s->stream),
                    "download of the logits");
    EC_CUDA_TRY(cudaStreamSynchronize(s->stream), "forward pass (batch %d, positions %d-%d)",
                batch, pos, pos + n - 1);
    memcpy(next, s->h_next, (size_t)batch * sizeof(int));
    return 0;
}

/* Decode steps launched back to back: each step's argmax writes the next step's input on the
 * device (ec_cuda_argmax_feed), so the GPU never waits for the host between steps, and the
 * tokens come back in one copy. The reference family goes step by step through forward, as the
 * eager frameworks it stands for read every token back. */
static int cuda_decode(ec_backend *b, int *tokens, int ld, int batch, int pos, int steps)
{
    cuda_state *s = (cuda_state *)b->impl;
    if (s->loaded && s->kernels == EC_KERNELS_REFERENCE)
        return ec_decode_stepwise(b, tokens, ld, batch, pos, steps);
    if (steps == 0) return 0;
    if (check_call(s, "decode", tokens, ld, 1, batch, steps, pos) || on_device(s)) return -1;
    if (upload_step(s, tokens, batch, ld, 0, 1, pos)) return -1;
    for (int g = 0; g < steps; g++)
        if (launch_decode_step(s, batch)) return -1;
    size_t n = (size_t)steps * batch;
    int *h = (int *)malloc(n * sizeof *h);
    if (!h) return ec_set_error("out of host memory for %zu decoded tokens", n);
    cudaError_t e = cudaMemcpyAsync(h, s->d_history + (size_t)pos * batch, n * sizeof *h,
                                    cudaMemcpyDeviceToHost, s->stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(s->stream);
    for (int g = 0; e == cudaSuccess && g < steps; g++)
        for (int i = 0; i < batch; i++)
            tokens[(size_t)i * ld + g + 1] = h[(size_t)g * batch + i];
    free(h);
    EC_CUDA_TRY(e, "decode of %d steps (batch %d, positions %d-%d)", steps, batch, pos,
                pos + steps - 1);
    return 0;
}

static int cuda_load_into(cuda_state *s, const ec_model *m, const ec_load_options *o)
{
    const ec_model_config *c = ec_model_config_of(m);
    if (check_config(c, o->precision)) return -1;
    if (ec_cuda_device_ready(s->device, o->precision) != 0) return -1;
    EC_CUDA_TRY(cudaSetDevice(s->device), "cudaSetDevice(%d)", s->device);
    s->cfg = *c;
    s->sharded = o->tp_group != NULL;
    s->tp_rank = s->sharded ? o->tp_rank : 0;
    /* Activations are fp16 for every precision but bf16 (the int8 kernels quantize from fp16). */
    s->dt = ec_cuda_format_of(o->precision).act;
    s->prec = o->precision;
    s->head_prec = o->quantize_head ? o->precision : emb_prec(s);
    s->kernels = o->kernels;
    s->threshold = o->int8_threshold;
    s->max_batch = o->max_batch > 0 ? o->max_batch : 1;
    s->max_seq = o->max_seq > 0 ? o->max_seq : c->max_seq_len;
    s->q_dim = c->n_heads * c->head_dim;
    s->kv_dim = c->n_kv_heads * c->head_dim;
    s->qkv_dim = s->q_dim + 2 * s->kv_dim;
    s->hidden_pad = (c->hidden_dim + 7) / 8 * 8;
    s->wide_cols = imax(2 * c->hidden_dim, c->dim);
    s->shape = (ec_cuda_attn_shape){c->n_heads, c->n_kv_heads, c->head_dim, s->max_seq,
                                    c->rope_interleaved};
    size_t dec_slots = 0; /* the most (sequence, split) pairs of any decode batch */
    for (int b = 1; b <= s->max_batch; b++) {
        int split_len = ec_cuda_decode_split_len(s->max_seq, c->n_heads * b);
        size_t slots = (size_t)b * ((s->max_seq + split_len - 1) / split_len);
        if (slots > dec_slots) dec_slots = slots;
    }
    s->part_slots = dec_slots;
    if (allocate(s) || upload_weights(s, m)) return -1;
    float *inv = (float *)malloc((size_t)c->head_dim / 2 * sizeof(float));
    if (!inv) return ec_set_error("out of host memory");
    cpu_rope_inv_freq(c, inv);
    cudaError_t e = cudaMemcpy(s->inv_freq, inv, (size_t)c->head_dim / 2 * sizeof(float),
                               cudaMemcpyHostToDevice);
    free(inv);
    EC_CUDA_TRY(e, "upload of rope frequencies");
    /* A decode split spans at most max_seq positions rounded up to 32. */
    if (ec_cuda_attention_prepare(s->max_seq + 31)) return -1;
    s->loaded = 1;
    return 0;
}

/* Every rank of a tensor-parallel group calls this when its own load has ended, so that all of
 * them learn whether all loaded before any waits in NCCL for the others; rank 0 makes the
 * communicator's id and the others read it from the group. */
static int join_group(cuda_state *s, const ec_load_options *o, int loaded)
{
    ec_tp_group *g = o->tp_group;
    unsigned char *id = ec_tp_shared(g);
    if (!ec_tp_all_ok(g, o->tp_rank, loaded)) return -1;
    int have_id = o->tp_rank != 0 || ec_nccl_unique_id(id) == 0;
    if (!ec_tp_all_ok(g, o->tp_rank, have_id)) return -1;
    EC_CUDA_TRY(cudaSetDevice(s->device), "cudaSetDevice(%d)", s->device);
    if (ec_nccl_comm_init(&s->comm, ec_tp_group_world(g), id, o->tp_rank)) return -1;
    /* NCCL connects its channels at the first collective: here, not in a timed phase or while
     * the decode graph is captured. */
    if (sum_over_ranks(s, 1)) return -1;
    EC_CUDA_TRY(cudaStreamSynchronize(s->stream), "first all-reduce of tensor-parallel rank %d",
                o->tp_rank);
    return 0;
}

static int cuda_load(ec_backend *b, const ec_model *m, const ec_load_options *o)
{
    cuda_state *s = (cuda_state *)b->impl;
    release(s);
    int rc = cuda_load_into(s, m, o);
    if (o->tp_group) rc = join_group(s, o, rc == 0);
    if (rc == 0) return 0;
    release(s);
    return -1;
}

static int cuda_synchronize(ec_backend *b)
{
    cuda_state *s = (cuda_state *)b->impl;
    if (!s->loaded) return 0;
    if (on_device(s)) return -1;
    EC_CUDA_TRY(cudaStreamSynchronize(s->stream), "cudaStreamSynchronize");
    return 0;
}

static int cuda_outlier_stats(ec_backend *b, double *avg)
{
    cuda_state *s = (cuda_state *)b->impl;
    if (!s->loaded) return ec_set_error("CUDA backend: outlier statistics before a load");
    if (on_device(s)) return -1;
    size_t n = (size_t)s->cfg.n_layers * EC_LINEAR_INPUTS;
    unsigned long long *h = (unsigned long long *)malloc(n * 2 * sizeof *h);
    if (!h) return ec_set_error("out of host memory");
    cudaError_t e = cudaMemcpyAsync(h, s->stats, n * 2 * sizeof *h, cudaMemcpyDeviceToHost, s->stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(s->stream);
    for (size_t i = 0; e == cudaSuccess && i < n; i++)
        avg[i] = h[2 * i + 1] ? (double)h[2 * i] / (double)h[2 * i + 1] : 0.0;
    free(h);
    EC_CUDA_TRY(e, "download of the outlier statistics");
    return 0;
}

static void cuda_destroy(ec_backend *b)
{
    cuda_state *s = (cuda_state *)b->impl;
    if (!s) return;
    if (s->loaded || s->stream) release(s);
    free(s);
    b->impl = NULL;
}

/* Capturing the decode graph loads the modules of its kernels (CUDA loads them lazily, at
 * first launch): for nf4, whose file holds many kernel variants, that took 75-105 ms, which fell
 * into the first decode step's time when forward captured it there. */
static int cuda_prepare(ec_backend *b, int batch)
{
    cuda_state *s = (cuda_state *)b->impl;
    if (!s->loaded) return ec_set_error("CUDA backend: prepare before a successful load");
    if (batch < 1 || batch > s->max_batch)
        return ec_set_error("CUDA backend: prepare for %d sequences, loaded for at most %d", batch,
                            s->max_batch);
    if (!s->use_graphs || s->kernels == EC_KERNELS_REFERENCE || s->graph_batch == batch) return 0;
    return on_device(s) ? -1 : capture_decode(s, batch);
}

static const ec_backend_ops cuda_ops = {
    .name = "cuda",
    .load = cuda_load,
    .forward = cuda_forward,
    .decode = cuda_decode,
    .synchronize = cuda_synchronize,
    .destroy = cuda_destroy,
    .outlier_stats = cuda_outlier_stats,
    .prepare = cuda_prepare,
};

int ec_cuda_backend_create(ec_backend **out, int device)
{
    ec_backend *b = (ec_backend *)calloc(1, sizeof *b);
    cuda_state *s = (cuda_state *)calloc(1, sizeof *s);
    if (!b || !s) {
        free(b);
        free(s);
        return ec_set_error("out of host memory for the CUDA backend");
    }
    s->device = device;
    s->use_graphs = 1;
    b->ops = &cuda_ops;
    b->impl = s;
    *out = b;
    return 0;
}

void ec_cuda_backend_set_graphs(ec_backend *b, int enabled)
{
    cuda_state *s = (cuda_state *)b->impl;
    s->use_graphs = enabled;
}

int ec_cuda_device_uuid(int device, char *buf, size_t len)
{
    if (ec_cuda_device_exists(device) != 0) return -1;
    struct cudaDeviceProp prop;
    EC_CUDA_TRY(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties(%d)", device);
    const unsigned char *b = (const unsigned char *)prop.uuid.bytes;
    snprintf(buf, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
             b[13], b[14], b[15]);
    return 0;
}
