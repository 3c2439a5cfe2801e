/* qweight.h — the CUDA backend's weight descriptor for every linear-layer format, and the one
 * call that runs a linear layer over it in either kernel family (docs/cuda-backend.md,
 * "Kernel families").
 *
 * A weight is W [rows][cols] row-major as in quant.h, stored on the device in one of the
 * formats of docs/formats.md with its rows padded to `ld` elements (zeros): 16-bit rows to the
 * activation width (the backend pads odd hidden sizes to 8), int8 rows to a multiple of 16 so
 * every row starts 16-byte aligned and cuBLAS's int8 GEMM gets K % 16 == 0. Fused weights (QKV,
 * gate/up) concatenate the rows of up to EC_CUDA_MAX_SEGMENTS source tensors; per-row formats
 * concatenate exactly, and each segment keeps its own row range (the reference family runs one
 * linear per segment, as eager frameworks do) and, for nf4-dq, its own second-level scale
 * statistics (each source tensor is quantized separately, as the CPU backend does).
 *
 * nf4, nf4-dq and fp8 (the packed formats, kernels_quant.h) hold exactly the bytes of the CPU
 * ec_qmatrix of each source tensor: rows are not padded (`ld` = row bytes, ceil(cols/2) or
 * cols), `cols` is the logical width and `ldx` the row stride of the activations (the
 * down-projection's hidden_pad). */
#ifndef EC_ENGINE_CUDA_QWEIGHT_H
#define EC_ENGINE_CUDA_QWEIGHT_H

#include "ecocompute/engine.h"
#include "kernels.h"
#include "kernels_quant.h"

#ifdef __cplusplus
extern "C" {
#endif

#define EC_CUDA_MAX_SEGMENTS 3

typedef struct {
    int row0, rows;              /* rows [row0, row0 + rows) of the fused weight */
    const float *qscale_absmax;  /* nf4-dq: this segment's [ceil(rows*nblocks/256)]; else NULL */
    float qscale_offset;         /* nf4-dq: this segment's absmax mean; else 0 */
} ec_cuda_qsegment;

typedef struct {
    ec_precision prec; /* a format the CUDA backend runs (EC_QFORMAT_CUDA in quant.h's table) */
    int rows, cols;    /* logical shape; cols = the width of the activations x it multiplies */
    int ldx;           /* row stride of x in elements (>= cols): cols except the packed
                        * formats' down-projection, whose activations are hidden_pad wide */
    int ld;            /* row stride of data in elements: cols for 16-bit, round16(cols) int8;
                        * the packed formats: row bytes, ceil(cols/2) nf4(-dq), cols fp8 */
    void *data;        /* 16-bit [rows][ld] or int8 [rows + 3][ld]; columns [cols, ld) and the
                        * 3 extra int8 rows zero (the int8 GEMM rounds m up to 4); packed: codes
                        * [rows][ld] bytes */
    float *scales;     /* int8: [rows] row absmax (quant.h); nf4: block absmax [rows][nblocks]
                        * (nblocks = ceil(cols/64)); fp8: [rows] row scales; else NULL */
    uint8_t *qscales;  /* nf4-dq: [rows * nblocks] 8-bit absmax codes; else NULL */
    float *qabsmax;    /* nf4-dq: the segments' second-level absmax arrays one after another
                        * (segment i: ceil(rows_i * nblocks / 256) floats); else NULL */
    float threshold;   /* int8-mixed outlier threshold (|x| >= threshold); 0 = int8 */
    int n_segments;    /* 1..EC_CUDA_MAX_SEGMENTS, covering rows in order */
    ec_cuda_qsegment seg[EC_CUDA_MAX_SEGMENTS];
} ec_cuda_qweight;

/* How the CUDA backend stores and multiplies each format: qlinear.c's table, indexed by
 * ec_precision and sized by EC_PREC_COUNT, so quant.h's format table and this one cannot
 * drift apart silently (a format added there fails to compile here until it has an entry,
 * EC_CUDA_PATH_NONE included; test_cuda_formats checks the two agree). */
typedef enum {
    EC_CUDA_PATH_MISSING = 0, /* no entry (a gap in the table; never valid) */
    EC_CUDA_PATH_NONE,        /* not run by the CUDA backend */
    EC_CUDA_PATH_16BIT,       /* fp16 / bf16 rows: cuBLAS and the 16-bit GEMV */
    EC_CUDA_PATH_INT8,        /* int8 rows padded to 16 with row scales: kernels_int8*.cu */
    EC_CUDA_PATH_PACKED,      /* the CPU's bytes as they are: kernels_quant.h */
} ec_cuda_path;

typedef struct {
    ec_cuda_path path;
    ec_cuda_dtype act;  /* the 16-bit type of the activations the weight multiplies */
    int carries_norm;   /* packed: the batch-1 fused kernel takes the preceding RMSNorm
                           (ec_cuda_qcarry) instead of a norm launch */
} ec_cuda_format;

/* The entry of prec (EC_CUDA_PATH_MISSING out of range). */
ec_cuda_format ec_cuda_format_of(ec_precision prec);
/* nf4, nf4-dq, fp8: the weight-only formats of kernels_quant.h (EC_CUDA_PATH_PACKED). */
int ec_cuda_is_packed(ec_precision prec);
/* Row stride of a format for a width of `cols` activations (bytes for the packed formats). */
int ec_cuda_qweight_ld(ec_precision prec, int cols);
/* Device bytes of data (+ scales, qscales and second-level absmax for up to
 * EC_CUDA_MAX_SEGMENTS segments) of a [rows][cols] weight in prec, each part 256-aligned. */
size_t ec_cuda_qweight_bytes(ec_precision prec, int rows, int cols);
/* Fills w's shape, threshold and a single segment, and places data (and scales) at `base`
 * (base 0 only measures, see cuda_backend.c's carve). Returns the bytes used. */
size_t ec_cuda_qweight_place(ec_cuda_qweight *w, ec_precision prec, int rows, int cols,
                             float threshold, uintptr_t base);
/* Splits w into segments of the given row counts (summing to w->rows); for nf4-dq, points
 * each segment at its part of qabsmax (its offset is set by the upload). */
void ec_cuda_qweight_segments(ec_cuda_qweight *w, int n, const int *rows);
/* The weight of segment i alone (a view: same memory). */
ec_cuda_qweight ec_cuda_qweight_segment(const ec_cuda_qweight *w, int i);

/* Shape bounds of the calls a context serves, from which its scratch is sized. */
typedef struct {
    int max_batch;     /* token rows of the largest call */
    int max_cols;      /* widest input (activation columns) */
    int max_rows;      /* most output rows of one weight (a fused weight counts all its rows) */
    size_t max_elems;  /* largest rows*cols of one segment, or with `mixed` of one (fused)
                        * weight: the outlier weight columns */
    int quantized;     /* int8 weights are used (else no int8 scratch) */
    ec_kernels kernels;
    int packed;        /* nf4 / nf4-dq / fp8 weights are used: decode tables (and, reference
                        * family, dequantization scratch) */
    size_t max_weight; /* packed: largest rows*cols of one weight (a fused weight counts all) */
    int mixed;         /* int8-mixed weights are used: the fused family's prefill-sized calls
                        * gather the outlier columns (xo, wo, osum) */
    int sharded;       /* a tensor-parallel rank: an all-reduce follows its residual adds, so
                        * they leave no sums of squares for the next norm (no sumsq) */
} ec_cuda_qshape;

/* Per-backend state of the linear layers: handles, stream and scratch. Device scratch shapes
 * (B = max_batch, K = round16(max_cols), R = max_rows, T = EC_CUDA_TC_ROWS):
 *   xq      int8  [B][K]    quantized activations (outlier columns and pad zero)
 *   xscale  float [B]       per-token absmax / 127
 *   omask   u32   [K/32]    bit c % 32 of word c / 32 set where column c is an outlier
 *   ocols   int   [K]       outlier columns, ascending; ocount int [1] how many
 *   ticket  u32   [1]       the multi-block outlier scan's block counter (kept at 0)
 *   acc     int32 [T][round4(R)] int8 GEMM output of one chunk of token rows
 *   xo, wo  fp16  [B][K], [max_elems]  reference, and fused with `mixed` and B above
 *                            EC_CUDA_GATHER_MIN_ROWS:
 *                            gathered outlier activations and the dequantized outlier weight
 *                            columns [rows][n_outliers]; xo also fused with `mixed` and B above
 *                            EC_CUDA_GEMV_MAX_BATCH: the one-pass GEMM's outlier activations
 *                            [B][ld of the call] (ec_cuda_int8_quantize's gather)
 *   osum    float [T][round4(R)] fused, likewise: their 16-bit product for one chunk of token
 *                            rows, which the int8 epilogue adds
 *   wide    float [B][R]    caller's: the reference family's output before add / SiLU·mul,
 *                            and the fused 16-bit GEMM path's gate/up
 *   qtables float [16 + 256] packed formats: nf4 values and the dynamic map (ec_cuda_quant_tables)
 *   pabsmax float [R * ceil(max_cols/64)]  packed, reference (or max_batch above
 *                                          EC_CUDA_QMMA_MAX_BATCH): nf4-dq absmax of a call
 *   pw16    16-bit [max_weight]            packed, likewise: the dequantized weight
 *   qsplit  packed, fused family (own allocation): the tensor-core kernel's column split
 *           scratch (kernels_quant.h) for max_rows
 *   sumsq   float [ceil(R/16)]  packed, fused family, not sharded: the sums of squares a batch-1
 *                               fp8 residual add leaves for the next norm (ec_cuda_qlinear_sumsq)
 * h_count, h_cols: pinned host mirrors of ocount / ocols (the reference family's host sync;
 * h_count also for the fused family's gathered outlier path). */
typedef struct {
    cublasHandle_t cublas; /* bound to stream */
    cudaStream_t stream;
    ec_kernels kernels;
    ec_cuda_qshape shape;
    void *arena; /* owns the scratch below */
    int8_t *xq;
    float *xscale;
    unsigned *omask, *ticket;
    int *ocols, *ocount;
    int32_t *acc;
    void *xo, *wo;
    float *osum;
    float *wide;
    int *h_count, *h_cols;
    float *qtables; /* own allocation (ec_cuda_quant_tables) */
    float *pabsmax;
    void *pw16;
    ec_cuda_qsplit qsplit;
    float *sumsq;
} ec_cuda_qctx;

/* Token rows per int8 tensor-core GEMM chunk (bounds the int32 scratch at prefill). At 256 the
 * prefill's int8 GEMMs were no faster than fp16's whole-chunk GEMMs. */
#define EC_CUDA_TC_ROWS 2048
/* int8-mixed calls of more token rows (prefill-sized) gather their outlier columns for a 16-bit
 * cuBLAS GEMM in the fused family too (qlinear.c, gather_outliers). */
#define EC_CUDA_GATHER_MIN_ROWS 256

/* Device bytes ec_cuda_qctx_init allocates for a shape. */
size_t ec_cuda_qctx_bytes(const ec_cuda_qshape *shape);
/* Allocates the scratch; wide [max_batch][max_rows] fp32 is the caller's buffer. Returns 0 or
 * -1 (ec_last_error). */
int ec_cuda_qctx_init(ec_cuda_qctx *ctx, const ec_cuda_qshape *shape, cublasHandle_t cublas,
                      cudaStream_t stream, float *wide);
void ec_cuda_qctx_free(ec_cuda_qctx *ctx);

/* One linear layer y = x Wᵀ for `batch` token rows, x [batch][w->ldx] 16-bit (fp16 for the
 * quantized formats), in the context's kernel family:
 *   STORE     y fp32 [batch][ldy] = x Wᵀ
 *   ADD       y fp32 [batch][ldy] += x Wᵀ (the residual stream)
 *   SILU_MUL  W = [gate; up] (2 segments of w->rows/2); y 16-bit [batch][ldy] = silu(g) * u
 * Fused: one pass per call (int8 GEMV up to EC_CUDA_GEMV_MAX_BATCH rows; above, int8 cuBLAS GEMM
 * with a fused epilogue, or where ec_cuda_qlinear_one_pass says so the one-pass int8 GEMM), no
 * host synchronisation: graph-capturable. Reference: one linear per
 * segment with the libraries' separate launches and, for int8-mixed, their host synchronisation
 * on the outlier count; the add and SiLU·mul are separate kernels.
 * Packed formats (nf4, nf4-dq, fp8): fused = ec_cuda_packed_linear_fused (tensor-core kernels
 * from 1 row up to EC_CUDA_QMMA_MAX_BATCH), one launch per call, and above that (prefill
 * chunks) the reference dataflow's dequantize + cuBLAS; reference = ec_cuda_packed_linear_reference
 * over the whole weight (nf4-dq absmax decode, naive GEMV at batch 1 or dequant + cuBLAS GEMM,
 * then SiLU·mul), no host synchronisation either.
 * stat (may be NULL): device counters [2] += {outlier columns, calls} (int8-mixed only). */
int ec_cuda_qlinear(const ec_cuda_qctx *ctx, const ec_cuda_qweight *w, ec_gemv_mode mode,
                    const void *x, int batch, void *y, int ldy, unsigned long long *stat);
/* Whether the fused family runs an int8 / int8-mixed call of `batch` token rows (above
 * EC_CUDA_GEMV_MAX_BATCH) as one pass of ec_cuda_int8_mma: widths in whole 64-column chunks
 * (every catalog shape), the outlier activations' scratch xo there, and the batches where it
 * measured faster than cuBLAS' int8 GEMM and the epilogue. */
int ec_cuda_qlinear_one_pass(const ec_cuda_qctx *ctx, const ec_cuda_qweight *w, int batch);
/* ec_cuda_qlinear of x = rmsnorm(norm) [batch][w->cols] (16-bit, written to x: later kernels may
 * read it). The fused int8 decode GEMV normalises inside its activation prepare, saving the
 * norm's launch. With norm->sumsq (from ec_cuda_qlinear_sumsq), fp8's fused kernels at batch 1
 * normalise the row themselves, and x is not written (the carried norm, kernels_quant.h). Every
 * other path runs ec_cuda_rmsnorm first. */
int ec_cuda_qlinear_normed(const ec_cuda_qctx *ctx, const ec_cuda_qweight *w, ec_gemv_mode mode,
                           const ec_cuda_norm *norm, void *x, int batch, void *y, int ldy,
                           unsigned long long *stat);
/* The sums of squares that an EC_GEMV_ADD ec_cuda_qlinear of w at `batch` token rows leaves for
 * the norm of the row it writes (ec_cuda_norm.sumsq), or NULL where it leaves none: only fp8's
 * fused kernels at batch 1 carry the norm. The next ADD call overwrites them. */
float *ec_cuda_qlinear_sumsq(const ec_cuda_qctx *ctx, const ec_cuda_qweight *w, int batch);

#ifdef __cplusplus
}
#endif
#endif
