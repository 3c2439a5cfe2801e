/* kernel_bench.c — times each CUDA decode kernel of one transformer layer in isolation (a GPU
 * tool, not a test): the GEMVs at a model's shapes for batch 1 and 8 (fp32 at 1, tensor cores at
 * 8), RMSNorm, and the decode attention (rope, KV append and attention in one kernel) at a given
 * context. Prints µs per call and the bandwidth each GEMV reaches, so "% of roofline" of a whole
 * decode step can be split into weight streaming and everything else.
 * With a list of quantized precisions it then times their fused linears (ec_cuda_qlinear, the
 * decode step's call) at the same shapes and batches 1, 8 and 64; "MB read" counts codes and
 * scales. Weights and activations are zeros (no int8-mixed outliers): this measures streaming
 * and decoding, whose cost does not depend on the values. Each kernel runs 200 times in a graph,
 * every call on the next of enough copies of its weight (ROTATE_BYTES in all) that none is still
 * in the L2 cache when it is read again, as in a decode step, which reads each weight once.
 * The attention and the norm reuse their inputs (L2-warm); time whole steps with `ecocompute run`.
 *
 * usage: kernel_bench [MODEL] [CONTEXT] [PRECISION,...]   (default Llama-2-7B 640, none) */
#include "ecocompute/common.h"
#include "ecocompute/model.h"
#include "engine/cuda/kernels.h"
#include "engine/cuda/qweight.h"

#include "bench_cuda.h"

#include <cublas_v2.h>

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { REPS = 200 };
#define ROTATE_BYTES 400e6 /* 8 times the H100's 50 MB L2 */

static void *dev_alloc(size_t bytes)
{
    void *p;
    CHECK(cudaMalloc(&p, bytes));
    CHECK(cudaMemset(p, 0, bytes)); /* zeros: finite everywhere, speed does not depend on values */
    return p;
}

/* n zeroed host elements of `size` bytes each; exits when out of memory (a tool, not a library). */
static void *host_alloc(size_t n, size_t size)
{
    void *p = calloc(n, size);
    if (!p) {
        fprintf(stderr, "kernel_bench: out of host memory\n");
        exit(1);
    }
    return p;
}

/* Copies of one weight of `bytes` each, read in turn: enough that ROTATE_BYTES lie between two
 * reads of the same copy. */
typedef struct {
    void **w; /* [n] */
    int n, next;
} rotation;

static rotation rotation_alloc(size_t bytes)
{
    rotation r = {NULL, (int)(ROTATE_BYTES / (double)bytes) + 1, 0};
    r.w = host_alloc((size_t)r.n, sizeof *r.w);
    for (int i = 0; i < r.n; i++) r.w[i] = dev_alloc(bytes);
    return r;
}
static int rotation_take(rotation *r)
{
    int i = r->next;
    r->next = (r->next + 1) % r->n;
    return i;
}
static void rotation_free(rotation *r)
{
    for (int i = 0; i < r->n; i++) cudaFree(r->w[i]);
    free(r->w);
}

typedef int (*launch_fn)(void *ctx);

/* µs per call over REPS calls captured in a graph (as the decode step runs them): the second
 * of two replays, or the first where that was shorter. */
static double time_us(launch_fn f, void *ctx, cudaStream_t st)
{
    if (f(ctx) != 0) {
        fprintf(stderr, "launch failed: %s\n", ec_last_error());
        exit(1);
    }
    return bench_graph_us(f, ctx, st, REPS, 2);
}

typedef struct {
    ec_gemv_mode mode;
    int batch, rows, cols;
    rotation w;
    void *x, *y;
    cudaStream_t st;
} gemv_ctx;

typedef struct {
    const ec_cuda_qctx *ctx;
    rotation mem;
    ec_cuda_qweight *w; /* [mem.n], placed on mem.w[i] */
    ec_gemv_mode mode;
    int batch, out_rows;
    void *x, *y;
} qlinear_ctx;

static int run_qlinear(void *p)
{
    qlinear_ctx *c = p;
    return ec_cuda_qlinear(c->ctx, &c->w[rotation_take(&c->mem)], c->mode, c->x, c->batch, c->y,
                           c->out_rows, NULL);
}

static int run_gemv(void *p)
{
    gemv_ctx *c = p;
    return ec_cuda_gemv(EC_CUDA_F16, c->mode, c->w.w[rotation_take(&c->w)], c->x, c->batch,
                        c->rows, c->cols, c->y, c->rows, c->st);
}

typedef struct {
    ec_cuda_attn_shape s;
    int batch, splits, split_len, clustered, dim;
    float *x, *w, *qkv, *part, *inv;
    void *xn, *kc, *vc, *att;
    unsigned *tickets;
    int *pos;
    float eps;
    cudaStream_t st;
} layer_ctx;

static int run_norm(void *p)
{
    layer_ctx *c = p;
    return ec_cuda_rmsnorm(EC_CUDA_F16, c->x, c->dim, c->w, c->batch, c->dim, c->eps, c->xn, c->st);
}
static int run_attention(void *p)
{
    layer_ctx *c = p;
    return ec_cuda_attention_decode(EC_CUDA_F16, &c->s, c->qkv, NULL, c->inv, c->pos, c->batch,
                                    c->splits, c->split_len, c->clustered, c->kc, c->vc,
                                    c->part, c->tickets, c->att, c->st);
}

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "Llama-2-7B";
    int context = argc > 2 ? atoi(argv[2]) : 640;
    ec_model *m;
    if (ec_model_open(&m, name, NULL) != 0) {
        fprintf(stderr, "%s\n", ec_last_error());
        return 1;
    }
    const ec_model_config *c = ec_model_config_of(m);
    cudaStream_t st;
    CHECK(cudaStreamCreate(&st));
    int q_dim = c->n_heads * c->head_dim, kv_dim = c->n_kv_heads * c->head_dim;
    struct { const char *what; ec_gemv_mode mode; int rows, cols; } shapes[] = {
        {"qkv", EC_GEMV_STORE, q_dim + 2 * kv_dim, c->dim},
        {"o (+residual)", EC_GEMV_ADD, c->dim, q_dim},
        {"gate/up (silu*mul)", EC_GEMV_SILU_MUL, c->hidden_dim, c->dim},
        {"down (+residual)", EC_GEMV_ADD, c->dim, (c->hidden_dim + 7) / 8 * 8},
        {"head", EC_GEMV_STORE, c->vocab_size, c->dim},
    };
    printf("%s, context %d\n%-20s %5s %8s %10s %8s\n", name, context, "kernel", "batch", "us",
           "MB read", "GB/s");
    double layer_us[2] = {0, 0};
    for (int bi = 0; bi < 2; bi++) {
        int batch = bi ? 8 : 1;
        for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
            int wrows = shapes[i].mode == EC_GEMV_SILU_MUL ? 2 * shapes[i].rows : shapes[i].rows;
            size_t wbytes = (size_t)wrows * shapes[i].cols * 2;
            gemv_ctx g = {shapes[i].mode, batch, shapes[i].rows, shapes[i].cols,
                          rotation_alloc(wbytes), dev_alloc((size_t)batch * shapes[i].cols * 2),
                          dev_alloc((size_t)batch * wrows * 4), st};
            double us = time_us(run_gemv, &g, st);
            if (i < 4) layer_us[bi] += us;
            printf("%-20s %5d %8.1f %10.1f %8.0f\n", shapes[i].what, batch, us, wbytes / 1e6,
                   wbytes / us / 1e3);
            rotation_free(&g.w);
            cudaFree(g.x);
            cudaFree(g.y);
        }
        layer_ctx L = {0};
        L.s = (ec_cuda_attn_shape){c->n_heads, c->n_kv_heads, c->head_dim, context + 1, 0};
        L.batch = batch;
        int split = ec_cuda_decode_split_len(context + 1, c->n_heads * batch);
        L.split_len = split;
        L.splits = (context + split) / split;
        L.clustered = ec_cuda_decode_clustered(context + 1, c->n_heads * batch);
        L.dim = c->dim;
        size_t cache = (size_t)batch * kv_dim * (context + 1) * 2;
        L.x = dev_alloc((size_t)batch * c->dim * 4);
        L.w = dev_alloc((size_t)c->dim * 4);
        L.xn = dev_alloc((size_t)batch * c->dim * 2);
        L.qkv = dev_alloc((size_t)batch * (q_dim + 2 * kv_dim) * 4);
        L.inv = dev_alloc((size_t)c->head_dim * 2);
        L.kc = dev_alloc(cache);
        L.vc = dev_alloc(cache);
        L.part = dev_alloc((size_t)batch * L.splits * c->n_heads * (c->head_dim + 2) * 4);
        L.att = dev_alloc((size_t)batch * q_dim * 2);
        L.tickets = dev_alloc((size_t)batch * c->n_heads * 4);
        L.pos = dev_alloc(sizeof(int));
        L.eps = 1e-5f;
        L.st = st;
        CHECK(cudaMemcpy(L.pos, &context, sizeof(int), cudaMemcpyHostToDevice));
        if (ec_cuda_attention_prepare(split) != 0) return 1;
        double norm = time_us(run_norm, &L, st), att = time_us(run_attention, &L, st);
        printf("%-20s %5d %8.1f\n%-20s %5d %8.1f %10.1f %8.0f\n", "rmsnorm", batch, norm,
               "rope+kv+attention", batch, att, 2.0 * cache / 1e6, 2.0 * cache / att / 1e3);
        layer_us[bi] += 2 * norm + att;
        printf("%-20s %5d %8.1f   (x %d layers = %.2f ms)\n", "layer total", batch,
               layer_us[bi], c->n_layers, layer_us[bi] * c->n_layers / 1e3);
    }
    if (argc > 3) {
        cublasHandle_t cublas;
        if (cublasCreate(&cublas) != CUBLAS_STATUS_SUCCESS || cublasSetStream(cublas, st)) {
            fprintf(stderr, "cuBLAS initialisation failed\n");
            return 1;
        }
        const int batches[] = {1, 8, 64};
        printf("\n%-10s %-20s %5s %8s %10s %8s\n", "precision", "linear", "batch", "us",
               "MB read", "GB/s");
        char list[256];
        snprintf(list, sizeof list, "%s", argv[3]);
        for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
            ec_precision prec;
            if (ec_precision_parse(tok, &prec) != 0) {
                fprintf(stderr, "kernel_bench: unknown precision '%s'\n", tok);
                return 2;
            }
            int packed = ec_cuda_is_packed(prec);
            double step_us[3] = {0, 0, 0};
            for (int bi = 0; bi < 3; bi++) {
                int batch = batches[bi];
                for (size_t i = 0; i < 4; i++) {
                    int silu = shapes[i].mode == EC_GEMV_SILU_MUL;
                    int wrows = silu ? 2 * shapes[i].rows : shapes[i].rows;
                    int cols = shapes[i].cols;
                    ec_cuda_qshape qs = {batch, cols, wrows, (size_t)wrows * cols,
                                         !packed, EC_KERNELS_FUSED, packed,
                                         (size_t)wrows * cols, 0, 0};
                    ec_cuda_qctx ctx;
                    float *wide = dev_alloc((size_t)batch * wrows * 4);
                    if (ec_cuda_qctx_init(&ctx, &qs, cublas, st, wide) != 0) {
                        fprintf(stderr, "%s\n", ec_last_error());
                        return 1;
                    }
                    size_t wbytes = ec_cuda_qweight_bytes(prec, wrows, cols);
                    qlinear_ctx q = {&ctx, rotation_alloc(wbytes), NULL, shapes[i].mode, batch,
                                     shapes[i].rows, dev_alloc((size_t)batch * cols * 2),
                                     dev_alloc((size_t)batch * wrows * 4)};
                    q.w = host_alloc((size_t)q.mem.n, sizeof *q.w);
                    for (int k = 0; k < q.mem.n; k++) {
                        ec_cuda_qweight_place(&q.w[k], prec, wrows, cols, 6.0f,
                                              (uintptr_t)q.mem.w[k]);
                        if (silu)
                            ec_cuda_qweight_segments(&q.w[k], 2, (int[]){shapes[i].rows,
                                                                           shapes[i].rows});
                    }
                    double us = time_us(run_qlinear, &q, st);
                    step_us[bi] += us;
                    printf("%-10s %-20s %5d %8.1f %10.1f %8.0f\n", tok, shapes[i].what, batch,
                           us, wbytes / 1e6, wbytes / us / 1e3);
                    rotation_free(&q.mem);
                    free(q.w);
                    cudaFree(q.x);
                    cudaFree(q.y);
                    cudaFree(wide);
                    ec_cuda_qctx_free(&ctx);
                }
                printf("%-10s %-20s %5d %8.1f   (x %d layers = %.2f ms)\n", tok, "linears total",
                       batch, step_us[bi], c->n_layers, step_us[bi] * c->n_layers / 1e3);
            }
        }
        cublasDestroy(cublas);
    }
    ec_model_close(m);
    return 0;
}
