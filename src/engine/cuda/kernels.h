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
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { EC_CUDA_F16 = 0, EC_CUDA_BF16 } ec_cuda_dtype;

/* Kernel paths that the launch policy does not pick for some shapes, selectable by the GPU tests
 * so that every kernel is checked against its CPU reference on any GPU. The product never sets
 * them: what runs is always the policy's choice, so no stored run depends on them. */
typedef struct {
    int int8_one_pass_everywhere; /* int8 one-pass MMA GEMM wherever it can run (9-64 rows) */
    int int8_prepare_always;      /* batch-1 int8 GEMVs behind a prepare launch, never quantizing
                                     their own token */
    int qgemm_mma_sync;           /* the 17-64-row quantized GEMM on mma.sync, not wgmma */
} ec_cuda_test_paths;
extern ec_cuda_test_paths ec_cuda_test_path_choice; /* all 0: the launch policy alone */

/* Batches up to this size run the GEMV kernels (each weight byte read once for the whole batch);
 * larger ones use cuBLAS GEMMs. For 16-bit weights the GEMV above one row is one MMA token tile
 * of 8 (kernels_gemv_mma.cu); its two-tile form lost to cuBLAS at 12 and 16 rows (H200,
 * Llama-2-7B fp16 steps 28-43 % longer). The packed formats' own thresholds are in
 * docs/cuda-backend.md. */
#define EC_CUDA_GEMV_MAX_BATCH 8
/* The attention kernels handle head_dim up to this (8 lanes x 16-byte loads per key row). */
#define EC_CUDA_MAX_HEAD_DIM 256

/* ---- kernels_convert.cu ---- */
/* dst [rows][ld] (16-bit) = round-to-nearest-even(src [rows][cols] fp32); dst columns
 * [cols, ld) are left alone (weights padded to a multiple of 8 columns keep zeros there). */
int ec_cuda_convert_f32(ec_cuda_dtype t, const float *src, void *dst, int rows, int cols, int ld,
                        cudaStream_t stream);

/* ---- kernels_embed.cu ---- */
/* x [ntok][dim] fp32 = table [vocab][dim] (16-bit) row tokens[t]; tokens [ntok] on the device,
 * already checked to lie in [0, vocab). */
int ec_cuda_embed(ec_cuda_dtype t, const void *table, const int *tokens, int ntok, int dim,
                  float *x, cudaStream_t stream);

/* ---- kernels_elementwise.cu ---- */
/* h [ntok][ldh] (16-bit) = silu(gu[t][j]) * gu[t][hidden + j] for j < hidden,
 * gu [ntok][2*hidden] fp32. */
int ec_cuda_silu_mul(ec_cuda_dtype t, const float *gu, int ntok, int hidden, void *h, int ldh,
                     cudaStream_t stream);
/* y [ntok][ldy] += t [ntok][ldt] (fp32, n columns): the reference family's residual add. */
int ec_cuda_add(float *y, int ldy, const float *t, int ldt, int ntok, int n, cudaStream_t stream);

/* ---- kernels_argmax.cu ---- */
/* A decode step's greedy feedback (ec_cuda_argmax): each sequence's token also becomes the next
 * step's input, and the position moves on, without the host. */
typedef struct {
    int *step;           /* [1 + batch]: the position, then the token ids (the step's input) */
    int *history;        /* [positions][batch]: row `position` gets the tokens it predicted */
    unsigned *rows_done; /* sequences finished this call (zero before the first; left zero) */
} ec_cuda_argmax_feed;
/* out [batch] = index of the largest logits [batch][vocab] (lowest index on ties, NaN never
 * wins), the same rule as the CPU backend. A sequence's vocabulary is split over several blocks
 * that meet in keys [batch] and tickets [batch] (zero before the first call; each call leaves
 * them zero again). With feed (else NULL), token b also goes to step[1 + b] and
 * history[step[0]][b], and the last sequence to finish adds 1 to step[0]. */
int ec_cuda_argmax(const float *logits, int batch, int vocab, int *out, unsigned long long *keys,
                   unsigned *tickets, const ec_cuda_argmax_feed *feed, cudaStream_t stream);

/* ---- kernels_norm.cu ---- */
/* An RMSNorm as the first step of a later kernel (ec_cuda_int8_prepare, fp8's fused linears):
 * rows of the fp32 residual stream x start x_stride apart, w [dim] is the norm's weight. sumsq
 * (or NULL): the sums of squares of x's one row by 16-column tiles [ceil(dim / 16)], which the
 * batch-1 residual add that wrote the row left (ec_cuda_qlinear_sumsq); the kernels that take
 * it normalise without a pass over the row. */
typedef struct {
    const float *x;
    size_t x_stride;
    const float *w;
    float eps;
    const float *sumsq;
} ec_cuda_norm;
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
 * 1 <= batch <= EC_CUDA_GEMV_MAX_BATCH: one row on the CUDA cores in fp32, more on tensor cores
 * (ec_cuda_gemv_mma). */
int ec_cuda_gemv(ec_cuda_dtype t, ec_gemv_mode mode, const void *w, const void *x, int batch,
                 int rows, int cols, void *y, int ldy, cudaStream_t stream);
/* Warps that share each row pair of ec_cuda_gemv's weight at batch 1 of `pairs` row pairs whose
 * rows are `rounds` rounds of 32 16-byte chunks, on a device of `sms` SMs (gemv_split.c): the
 * fewest of 1, 2, 4 or 8 that give the grid EC_GEMV_WARPS_PER_SM warps per SM, each warp keeping at
 * least 2 rounds of a row. With a warp per pair, weights of few rows (o and down: 1,024-2,048
 * pairs, 8-16 warps per SM) read at 1.5-2.3 TB/s on an H100, and neither 8 or 16 loads per row in
 * flight nor the activations in shared memory made them faster; more warps did. */
enum { EC_GEMV_WARPS_PER_SM = 30, EC_GEMV_MAX_SPLIT = 8 };
int ec_gemv_split_for(int pairs, int rounds, int sms);

/* ---- kernels_gemv_mma.cu ---- */
/* As ec_cuda_gemv on tensor cores (fp32 accumulation), for 2 <= batch <= EC_CUDA_GEMV_MAX_BATCH
 * and any cols >= 1; ec_cuda_gemv calls it from 2 token rows. */
int ec_cuda_gemv_mma(ec_cuda_dtype t, ec_gemv_mode mode, const void *w, const void *x, int batch,
                     int rows, int cols, void *y, int ldy, cudaStream_t stream);

/* ---- linear.cu: the GEMV for small batches, cuBLAS (fp32 compute) above ---- */
/* As ec_cuda_gemv for any batch >= 1. For EC_GEMV_SILU_MUL above the GEMV batch, the GEMM writes
 * gate and up to scratch gu [batch][2*rows] fp32 first (unused otherwise, may then be NULL).
 * cublas must be bound to `stream`. */
int ec_cuda_linear(cublasHandle_t cublas, ec_cuda_dtype t, ec_gemv_mode mode, const void *w,
                   const void *x, int batch, int rows, int cols, void *y, int ldy, float *gu,
                   cudaStream_t stream);

/* The cuBLAS GEMM of the 16-bit path on its own: y fp32 [m][ldy] = x W^T + beta * y, with
 * w [rows][ldw] and x [m][ldx] 16-bit (ldw, ldx >= cols). */
int ec_cuda_gemm16(cublasHandle_t cublas, ec_cuda_dtype t, const void *w, int ldw, const void *x,
                   int ldx, int m, int rows, int cols, float *y, int ldy, float beta);

/* ---- LLM.int8() building blocks, kernels_int8_*.cu (numerics: docs/formats.md) ----
 * Activations x are fp16 [ntok][cols] (row stride cols); quantized activations xq are int8
 * [ntok][ld] with ld % 16 == 0 and columns [cols, ld) zero; int8 weights w are [rows][ld] with
 * per-row absmax wscale [rows]; outlier lists are ascending column indices. */

/* ---- kernels_int8_outliers.cu ---- */
/* Outlier columns of x (any token with |x| >= threshold > 0): mask [ceil(cols/32)] (bit c % 32
 * of word c / 32 set for an outlier column c; every word written), ocols [cols] the columns
 * ascending, *ocount their number; when stat is not NULL, stat[0] += count and stat[1] += 1.
 * Many blocks, the last of which lists the columns: ticket is a device counter that must be 0
 * before the first call (each call leaves it 0). No host synchronisation. ocols NULL: the mask
 * alone (ocount, ticket and stat unused; ec_cuda_int8_quantize's count counts). */
int ec_cuda_int8_outliers(const void *x, int ntok, int cols, float threshold, unsigned *mask,
                          int *ocols, int *ocount, unsigned *ticket, unsigned long long *stat,
                          cudaStream_t stream);

/* ---- kernels_int8_quantize.cu ---- */
/* Per-token quantization: xscale [ntok] = absmax / 127 over the columns not in mask (mask may be
 * NULL: none), xq = rne(x / absmax * 127), outlier and pad columns 0. One block per token. With
 * xo (else NULL) it also gathers the outlier activations for ec_cuda_int8_mma: xo fp16
 * [ntok][ld], xo[b][p] = x[b][ocols[p]] for p < *ocount, 0 up to the next multiple of 16. With
 * count (else NULL; needs mask), after a scan that left the mask alone: *count = the mask's
 * columns, and stat as ec_cuda_int8_outliers counts them. */
int ec_cuda_int8_quantize(const void *x, int ntok, int cols, int ld, const unsigned *mask,
                          int8_t *xq, float *xscale, const int *ocols, const int *ocount,
                          void *xo, int *count, unsigned long long *stat, cudaStream_t stream);
/* Decode batches of the fused GEMV: the scan's mask and count (no column list) and the
 * quantization in one single-block launch (threshold 0: no outlier scan, *ocount = 0). With
 * norm (else NULL) it first writes x = rmsnorm(norm->x) [ntok][cols], as ec_cuda_rmsnorm would,
 * and goes on from that: the layer's norm costs no launch of its own. cols <= 32768. */
int ec_cuda_int8_prepare(const ec_cuda_norm *norm, void *x, int ntok, int cols, int ld, float threshold,
                         unsigned *mask, int *ocount, int8_t *xq, float *xscale,
                         unsigned long long *stat, cudaStream_t stream);

/* ---- kernels_int8_gemv.cu ---- */
/* The fused int8 GEMV (batch <= EC_CUDA_GEMV_MAX_BATCH): dp4a over one pass of the int8 rows,
 * the fp16 products of the outlier columns in mask (NULL: none) from x and the codes the pass
 * holds anyway, then the ec_gemv_mode epilogue (SILU_MUL: rows = output rows, w holds 2*rows).
 * y as ec_cuda_gemv. release_next: the next kernel may launch once this one waits for its
 * inputs, not only at its end — for a GEMV followed by another GEMV, whose first weight
 * requests then overlap this one's stream. */
int ec_cuda_int8_gemv(ec_gemv_mode mode, const int8_t *w, const float *wscale, int rows, int ld,
                      const int8_t *xq, const float *xscale, const void *x, int cols,
                      const unsigned *mask, int batch, int release_next, void *y, int ldy,
                      cudaStream_t stream);
/* The batch-1 fused int8 GEMV without a prepare launch: every block quantizes the token x
 * [cols] (threshold > 0: int8-mixed's outlier columns) into its shared memory with
 * ec_cuda_int8_prepare's arithmetic, and block 0 writes mask, ocount, xq, xscale and the
 * statistics as the prepare would; y as ec_cuda_int8_gemv. Needs ec_cuda_int8_gemv_own_fits:
 * cols a multiple of 8, at most 16384, x 16-byte aligned. */
int ec_cuda_int8_gemv_own_fits(int cols, const void *x);
int ec_cuda_int8_gemv_own(ec_gemv_mode mode, const int8_t *w, const float *wscale, int rows,
                          int ld, const void *x, int cols, float threshold, unsigned *mask,
                          int *ocount, int8_t *xq, float *xscale, unsigned long long *stat,
                          void *y, int ldy, cudaStream_t stream);

/* ---- kernels_int8_mma.cu ---- */
/* The fused int8 / int8-mixed linear of 9..EC_CUDA_INT8_MMA_MAX_BATCH token rows in one pass
 * over w (kernels_int8_mma.cu): int8 tensor-core MMAs of xq [ntok][ld] and w, and with mask
 * (the outlier scan's; NULL: int8) the outlier columns' 16-bit product from the same weight
 * loads against xo (ec_cuda_int8_quantize's gather), then the ec_gemv_mode epilogue into y
 * [ntok][ldy] (SILU_MUL: rows = output rows, w holds 2*rows). ld % 64 == 0, at most 32768. */
#define EC_CUDA_INT8_MMA_MAX_BATCH 64
int ec_cuda_int8_mma(ec_gemv_mode mode, const int8_t *w, const float *wscale, int rows, int ld,
                     const int8_t *xq, const float *xscale, const void *xo, const unsigned *mask,
                     int ntok, void *y, int ldy, cudaStream_t stream);

/* ---- kernels_int8_gemm.cu ---- */
/* The epilogue after the int8 tensor-core GEMM acc int32 [ntok][ldc] (acc[t][r] = row r of
 * x_q·w_q): scales, the product of the outlier columns of x (bits of mask, as the outlier scan
 * writes it, with its count ocount; NULL: none, as for int8) and of the fp16-dequantized w, on
 * tensor cores, then the ec_gemv_mode epilogue into y [ntok][ldy] (SILU_MUL: rows = output rows,
 * acc and w hold 2*rows). osum fp32 [ntok][ldo] (with mask NULL; else NULL): that outlier
 * product computed already, added in its place. */
int ec_cuda_int8_epilogue(ec_gemv_mode mode, const int32_t *acc, int ldc, const float *wscale,
                          int rows, const int8_t *w, int ld, const float *xscale, const void *x,
                          int cols, const unsigned *mask, const int *ocount, const float *osum,
                          int ldo, int ntok, void *y, int ldy, cudaStream_t stream);
/* int8 x int8 -> int32 through cuBLAS (tensor cores): acc [ntok][ldc] = xq · wᵀ over ld columns
 * (ld % 16 == 0, ldc % 4 == 0: cuBLAS's int8 alignment rules). */
int ec_cuda_int8_gemm(cublasHandle_t cublas, const int8_t *w, int rows, int ld, const int8_t *xq,
                      int ntok, int32_t *acc, int ldc);

/* ---- kernels_int8_reference.cu ---- */
/* Reference pieces (bitsandbytes' separate kernels): y fp32 [ntok][ldy] = acc * wscale/127 *
 * xscale; xo fp16 [ntok][ldo] = x[:, ocols]; wo fp16 [rows][ldo] = fp16(w[:, ocols] *
 * wscale/127), with n = the host's copy of the outlier count and zeros in columns [n, ldo). */
int ec_cuda_int8_dequant(const int32_t *acc, int ldc, const float *wscale, int rows,
                         const float *xscale, int ntok, float *y, int ldy, cudaStream_t stream);
int ec_cuda_int8_gather_x(const void *x, int ntok, int cols, const int *ocols, int n, int ldo,
                          void *xo, cudaStream_t stream);
int ec_cuda_int8_weight_cols(const int8_t *w, const float *wscale, int rows, int ld,
                             const int *ocols, int n, int ldo, void *wo, cudaStream_t stream);

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
/* Decode attention of q [batch][n_heads][head_dim] fp32: sequence b's query sits at position
 * *pos and sees positions 0 .. *pos of sequence b in the caches. Its context is cut into splits
 * of split_len positions (at most n_splits of them), attended by separate blocks into part
 * [batch][n_heads][n_splits][head_dim + 2] fp32 (unnormalised output, max, sum), then combined
 * into out [batch][n_heads*head_dim] (16-bit). Needs n_splits*split_len >= *pos + 1. */
int ec_cuda_attention(ec_cuda_dtype t, const ec_cuda_attn_shape *s, const float *q,
                      const void *k_cache, const void *v_cache, const int *pos, int batch,
                      int n_splits, int split_len, float *part, void *out, cudaStream_t stream);
/* The decode step (one new position *pos per sequence) in one launch: ec_cuda_rope_kv of the
 * batch's qkv rows, then ec_cuda_attention with n = 1, bit-identical to the two (the new k, v
 * rows go into the caches as there; q stays on chip). The splits of a row meet through a ticket
 * and part, or with `clustered` (ec_cuda_decode_clustered) in one thread block cluster's shared
 * memory, part and tickets unused; an error where the device runs no cluster of n_splits
 * blocks. tickets [batch][n_heads] must be zero before the first call and are zero again after
 * each. */
int ec_cuda_attention_decode(ec_cuda_dtype t, const ec_cuda_attn_shape *s, const float *qkv,
                             const float *bias, const float *inv_freq, const int *pos, int batch,
                             int n_splits, int split_len, int clustered, void *k_cache,
                             void *v_cache, float *part, unsigned *tickets, void *out,
                             cudaStream_t stream);
/* Positions per attention split at decode (flash-decoding) for a cache of max_seq positions and
 * `rows` (query head, sequence) pairs per step, a multiple of 32: the splits of all rows fill
 * about one wave of blocks on the current device. A single sequence thus spreads its context
 * over every SM in splits of 32 (one round of loads per block, so its attention is a single
 * latency; at most 64 splits, whose partials would otherwise outgrow the activations at long
 * contexts), or over a thread block cluster in splits of up to 64 (below), while a batch that
 * fills the device by its rows alone takes one split per row (each split adds a block's fixed
 * work: a query rotation, two block reductions, a partial and its combine). */
int ec_cuda_decode_split_len(int max_seq, int rows);
/* The same policy for a device that holds `wave` decode blocks at once (0: unknown, then the
 * most splits) and runs thread block clusters of up to `cluster_max` blocks of the decode
 * attention (0: none); splits are multiples of EC_DECODE_MIN_SPLIT positions, at most
 * EC_DECODE_MAX_SPLITS per row (decode_split.c). Where the wave would cut a row into more splits
 * than a cluster holds, but cluster_max splits of at most EC_DECODE_CLUSTER_SPLIT positions
 * cover max_seq, the row takes those instead, and they meet in one cluster's shared memory
 * rather than through a ticket in global memory (ec_decode_clustered_for; at 640 positions and
 * batch 1, 10 splits of 64 instead of 20 of 32: steps 0.6-2.4 % shorter in every format on an
 * H100). Rows the wave already cuts into few splits keep the
 * ticket: at batch 8 the clustered kernel made fp8 steps 8 % longer. */
enum { EC_DECODE_MIN_SPLIT = 32, EC_DECODE_MAX_SPLITS = 64 };
enum { EC_DECODE_MAX_CLUSTER = 16, EC_DECODE_CLUSTER_SPLIT = 64 };
int ec_decode_split_len_for(int max_seq, int rows, int wave, int cluster_max);
int ec_decode_clustered_for(int max_seq, int rows, int wave, int cluster_max);
/* Whether ec_cuda_decode_split_len's splits of a row meet in a cluster on the current device. */
int ec_cuda_decode_clustered(int max_seq, int rows);
/* The most blocks the current device runs in one cluster of the decode attention (16 on an
 * H100; 8 where it allows no larger one; 0 below sm_90). */
int ec_cuda_decode_cluster_max(void);
/* The highest position up to which a decode step's attention prefetches its cached rows into L2
 * before its PDL wait: where all of them (batch x kv heads x positions x a K and a V row of
 * head_dim elements of elem_bytes) fill at most 1 / EC_DECODE_PREFETCH_L2_PARTS of an L2 of
 * l2_bytes (6.25 MiB of an H100's 50 MiB: batch 1 up to 1,600 positions with 8 kv heads of 128
 * dimensions, 400 with 32); -1 (never) where l2_bytes is 0, i.e. the device has no bulk L2
 * prefetch (below sm_90). Measured at 512-640 positions: rows
 * of 2.6 MB (Llama-3.1-8B, batch 1) made fp16 steps 0.6-1.5 % and fp8 steps 0.6-0.7 % shorter;
 * 10.5 MB (Llama-2-7B at batch 1, Llama-3.1-8B at batch 4) gained nothing beyond a call's
 * spread; 21 MB (Llama-3.1-8B at batch 8) made the fp8 step 1.3 % longer. */
enum { EC_DECODE_PREFETCH_L2_PARTS = 8 };
int ec_decode_prefetch_below(long long l2_bytes, int batch, int n_kv_heads, int head_dim,
                             int elem_bytes);
/* Raises the kernel's dynamic shared-memory limit for splits of up to max_split_len positions
 * (call once, outside graph capture); -1 if the device cannot hold them. */
int ec_cuda_attention_prepare(int max_split_len);

/* ---- kernels_attention_prefill.cu ---- */
/* Causal attention of q [batch*n][n_heads][head_dim] fp32 for calls of n positions per sequence,
 * the prefill: query t = b*n + i sits at position *pos + i and sees positions 0 .. *pos + i of
 * sequence b in the caches; out [batch*n][n_heads*head_dim] (16-bit). Blocks of 64 query rows
 * share each cache row they read; no partials are kept. Works at any n >= 1. */
int ec_cuda_attention_prefill(ec_cuda_dtype t, const ec_cuda_attn_shape *s, const float *q,
                              const void *k_cache, const void *v_cache, const int *pos, int batch,
                              int n, void *out, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
