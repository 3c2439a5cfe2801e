/* kernels.h — launchers of the CUDA backend's kernels (internal to src/engine/cuda and its tests).
 *
 * Plain C entry points so the C tests can drive each kernel against a CPU reference. 16-bit
 * arrays are `void *` holding fp16 or bf16 as chosen by an ec_cuda_dtype; accumulation is always
 * fp32. Every launcher enqueues on `stream`, checks the launch, and returns 0 or -1 with
 * ec_last_error() naming the kernel. Shapes are given next to each pointer; "ntok" is the number
 * of token rows of a call: batch sequences x n positions each, row t = b*n + i. */
#ifndef ECOCOMPUTE_CUDA_KERNELS_H
#define ECOCOMPUTE_CUDA_KERNELS_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { EC_CUDA_F16 = 0, EC_CUDA_BF16 } ec_cuda_dtype;

/* Batches up to this size run the GEMV kernels (each weight byte read once for the whole batch);
 * larger ones use cuBLAS GEMMs, whose tensor-core tiles win once the batch fills an MMA tile.
 * Chosen without measurement (see docs/cuda-backend.md). */
#define EC_CUDA_GEMV_MAX_BATCH 8
/* The attention kernels handle head_dim up to this (8 lanes x 16-byte loads per key row). */
#define EC_CUDA_MAX_HEAD_DIM 256

/* ---- kernels_misc.cu ---- */
/* dst [rows][ld] (16-bit) = round-to-nearest-even(src [rows][cols] fp32); dst columns
 * [cols, ld) are left alone (weights padded to a multiple of 8 columns keep zeros there). */
int ec_cuda_convert_f32(ec_cuda_dtype t, const float *src, void *dst, int rows, int cols, int ld,
                        cudaStream_t stream);
/* x [ntok][dim] fp32 = table [vocab][dim] (16-bit) row tokens[t]; tokens [ntok] on the device,
 * already checked to lie in [0, vocab). */
int ec_cuda_embed(ec_cuda_dtype t, const void *table, const int *tokens, int ntok, int dim,
                  float *x, cudaStream_t stream);
/* h [ntok][ldh] (16-bit) = silu(gu[t][j]) * gu[t][hidden + j] for j < hidden,
 * gu [ntok][2*hidden] fp32. */
int ec_cuda_silu_mul(ec_cuda_dtype t, const float *gu, int ntok, int hidden, void *h, int ldh,
                     cudaStream_t stream);
/* out [batch] = index of the largest logits [batch][vocab] (lowest index on ties, NaN never
 * wins), the same rule as the CPU backend. */
int ec_cuda_argmax(const float *logits, int batch, int vocab, int *out, cudaStream_t stream);

/* ---- kernels_norm.cu ---- */
/* out [rows][dim] (16-bit) = x[r] * w / sqrt(mean(x[r]^2) + eps); row r of x starts at
 * x + r*x_stride (fp32), so the prefill can normalise only each sequence's last position. */
int ec_cuda_rmsnorm(ec_cuda_dtype t, const float *x, size_t x_stride, const float *w /* [dim] */,
                    int rows, int dim, float eps, void *out, cudaStream_t stream);

/* ---- kernels_gemv.cu ---- */
typedef enum {
    EC_GEMV_STORE = 0, /* y fp32 [batch][ldy] = x W^T */
    EC_GEMV_ADD,       /* y fp32 [batch][ldy] += x W^T (the residual stream) */
    EC_GEMV_SILU_MUL   /* W = [gate; up] [2*rows][cols]; y 16-bit [batch][ldy] = silu(g) * u */
} ec_gemv_mode;
/* w [rows or 2*rows][cols] (16-bit, row-major), x [batch][cols] (16-bit); cols % 8 == 0 (the
 * 16-byte loads; the backend pads odd widths with zero columns), ldy >= rows,
 * 1 <= batch <= EC_CUDA_GEMV_MAX_BATCH. */
int ec_cuda_gemv(ec_cuda_dtype t, ec_gemv_mode mode, const void *w, const void *x, int batch,
                 int rows, int cols, void *y, int ldy, cudaStream_t stream);

/* ---- linear.cu: the GEMV for small batches, cuBLAS (fp32 compute) above ---- */
/* As ec_cuda_gemv for any batch >= 1. For EC_GEMV_SILU_MUL above the GEMV batch, the GEMM writes
 * gate and up to scratch gu [batch][2*rows] fp32 first (unused otherwise, may then be NULL).
 * cublas must be bound to `stream`. */
int ec_cuda_linear(cublasHandle_t cublas, ec_cuda_dtype t, ec_gemv_mode mode, const void *w,
                   const void *x, int batch, int rows, int cols, void *y, int ldy, float *gu,
                   cudaStream_t stream);

/* ---- kernels_rope.cu ---- */
typedef struct {
    int n_heads, n_kv_heads, head_dim;
    int max_seq;     /* positions per sequence in the KV cache */
    int interleaved; /* 1: rotate pairs (2i, 2i+1) (llama2.c); 0: halves (i, i + head_dim/2) */
} ec_cuda_attn_shape;
/* Splits qkv [ntok][q_dim + 2*kv_dim] fp32 (q_dim = n_heads*head_dim, kv_dim = n_kv*head_dim),
 * adds bias [q_dim + 2*kv_dim] (may be NULL), rotates q and k by position *pos + i with
 * inv_freq [head_dim/2], writes q [ntok][n_heads][head_dim] fp32 and k, v into the layer's
 * caches k_cache, v_cache [batch][n_kv][max_seq][head_dim] (16-bit). pos is a device int so a
 * captured decode step reads the current position at replay. */
int ec_cuda_rope_kv(ec_cuda_dtype t, const ec_cuda_attn_shape *s, const float *qkv,
                    const float *bias, const float *inv_freq, const int *pos, int batch, int n,
                    float *q, void *k_cache, void *v_cache, cudaStream_t stream);

/* ---- kernels_attention.cu ---- */
/* Causal attention of q [ntok][n_heads][head_dim] fp32 (query t = b*n + i sits at position
 * *pos + i and sees positions 0 .. *pos + i of sequence b in the caches). Each query's context is
 * cut into splits of split_len positions (at most n_splits of them), attended by separate blocks
 * into part [ntok][n_heads][n_splits][head_dim + 2] fp32 (unnormalised output, max, sum), then
 * combined into out [ntok][n_heads*head_dim] (16-bit). Needs n_splits*split_len >= *pos + n. */
int ec_cuda_attention(ec_cuda_dtype t, const ec_cuda_attn_shape *s, const float *q,
                      const void *k_cache, const void *v_cache, const int *pos, int batch, int n,
                      int n_splits, int split_len, float *part, void *out, cudaStream_t stream);
/* Positions per attention split at decode (flash-decoding) for a cache of max_seq positions:
 * 32 (one round of loads per block, so a decode step's attention is a single latency) unless
 * that makes more than 64 splits per sequence, whose partials would then outgrow the
 * activations at long contexts; then the shortest multiple of 32 giving 64 splits. */
int ec_cuda_decode_split_len(int max_seq);
/* Raises the kernel's dynamic shared-memory limit for splits of up to max_split_len positions
 * (call once, outside graph capture); -1 if the device cannot hold them. */
int ec_cuda_attention_prepare(int max_split_len);

#ifdef __cplusplus
}
#endif
#endif
