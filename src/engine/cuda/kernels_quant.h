/* kernels_quant.h — launchers of the CUDA kernels for the weight-only quantized formats nf4,
 * nf4-dq and fp8 (internal to src/engine/cuda and its tests).
 *
 * The device buffers hold exactly the bytes of the CPU ec_qmatrix (docs/formats.md), so a host
 * quantization with ec_qmatrix_quantize is uploaded with plain copies. Activations are 16-bit
 * (ec_cuda_dtype), accumulation is fp32, and the output modes are those of ec_cuda_gemv.
 *
 * Two families compute the same linear (docs/cuda-backend.md, "Quantized formats"):
 *   - reference: the libraries' dataflow. nf4 / nf4-dq at batch 1: a per-element dequantizing
 *     GEMV; at batch > 1 and fp8 at every batch: the whole weight dequantized to a 16-bit scratch,
 *     then cublasGemmEx. nf4-dq first decodes its absmax into an fp32 scratch, every call.
 *   - fused: one pass over the packed weights on tensor cores (mma.sync m16n8k16) at every
 *     batch: each weight tile is decoded into registers once for up to 64 token rows
 *     (qmma_kernel up to 16 rows, batch 1 included; from 17 qgemm_kernel, which stages the
 *     activations in shared memory and splits the columns of narrow weights across CTAs through
 *     an ec_cuda_qsplit scratch).
 * Numerics: the reference nf4 GEMV uses the fp32 weights of the CPU reference; the reference
 * GEMM rounds each weight `code * absmax` (or `e4m3 * scale`) to the activation format first, as
 * bitsandbytes' and torchao's dequantize-then-GEMM paths do; the fused nf4 kernels multiply
 * T(T(value) * T(absmax)), as bitsandbytes' batch-1 kernel does (kernels_nf4.cu); the fused fp8
 * kernels feed the E4M3 values (exact in fp16 and bf16) and apply the row scale to the fp32 sum. */
#ifndef ECOCOMPUTE_CUDA_KERNELS_QUANT_H
#define ECOCOMPUTE_CUDA_KERNELS_QUANT_H

#include <stdint.h>

#include "ecocompute/quant.h"
#include "kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A weight fused from separately quantized matrices (Wq/Wk/Wv, gate/up) has up to this many
 * nf4-dq segments, each with its own second-level absmax array and offset (the same bound as
 * the backend's weight descriptor). */
#ifndef EC_CUDA_MAX_SEGMENTS
#define EC_CUDA_MAX_SEGMENTS 3
#endif
/* Token rows one tensor-core launch covers (8 MMA column tiles); larger batches are chunked. */
#define EC_CUDA_QMMA_MAX_BATCH 64
/* Floats in the device tables of ec_cuda_quant_tables: the 16 nf4 values, then the dynamic map. */
#define EC_CUDA_QTABLES_FLOATS (16 + 256)

/* One separately double-quantized row range of an nf4-dq weight: rows [row0, next row0) of W,
 * whose flattened block index i (relative to row0) uses qscales[i] and qscale_absmax[i / 256]. */
typedef struct {
    int row0;                   /* first row of W (segment 0 starts at 0, ascending) */
    const uint8_t *qscales;     /* [seg_rows * nblocks] 8-bit dynamic-map codes */
    const float *qscale_absmax; /* [ceil(seg_rows * nblocks / 256)] */
    float qscale_offset;        /* the segment's mean absmax */
} ec_cuda_dq_segment;

/* A quantized weight W [rows][cols] on the device (the ec_qmatrix arrays, byte for byte). For
 * EC_GEMV_SILU_MUL, W = [gate; up] and rows = 2 x the output rows. */
typedef struct {
    ec_precision prec; /* EC_PREC_NF4, EC_PREC_NF4_DQ or EC_PREC_FP8 */
    int rows, cols;
    const uint8_t *codes; /* nf4(-dq): [rows][ceil(cols/2)], high nibble first; fp8: [rows][cols] */
    const float *scales;  /* nf4: [rows][ceil(cols/64)] block absmax; fp8: [rows]; nf4-dq: NULL */
    int nseg;             /* nf4-dq: 1..EC_CUDA_MAX_SEGMENTS segments (else unused) */
    ec_cuda_dq_segment seg[EC_CUDA_MAX_SEGMENTS];
    const float *tables; /* [EC_CUDA_QTABLES_FLOATS] from ec_cuda_quant_tables */
} ec_cuda_packed_weight;

/* Scratch of the fused family's column split (qgemm_kernel, 17..64 token rows): each CTA's partial
 * sums, two slots of EC_CUDA_QSPLIT_FLOATS_PER_CTA / 2 at 64 tokens (CTAs of 32 tokens take half),
 * and one arrival counter per block of EC_CUDA_QSPLIT_ROWS weight rows and token group (up to
 * EC_CUDA_QSPLIT_GROUPS per launch), zero between calls (the last CTA of a block resets it).
 * Calls on one stream may share it; calls that can run at the same time may not. */
#define EC_CUDA_QSPLIT_ROWS 128
#define EC_CUDA_QSPLIT_FLOATS_PER_CTA 16384
#define EC_CUDA_QSPLIT_GROUPS 2
typedef struct {
    float *partial;    /* [ctas][EC_CUDA_QSPLIT_FLOATS_PER_CTA] */
    unsigned *arrived; /* [EC_CUDA_QSPLIT_GROUPS][ceil(max_rows / EC_CUDA_QSPLIT_ROWS)] */
    int ctas;          /* CTAs the partials hold (0: no split, one CTA per row block) */
} ec_cuda_qsplit;

/* Device bytes of a split scratch for weights of up to max_rows rows on the current device. */
size_t ec_cuda_qsplit_bytes(int max_rows);
/* Allocates it (one allocation, counters zeroed) and ec_cuda_qsplit_free releases it; returns 0
 * or -1 (ec_last_error). */
int ec_cuda_qsplit_alloc(ec_cuda_qsplit *split, int max_rows);
void ec_cuda_qsplit_free(ec_cuda_qsplit *split);

/* Scratch of the reference family (the fused family needs none); NULL where unused. */
typedef struct {
    float *absmax; /* nf4-dq: [rows * ceil(cols/64)] fp32, decoded every call */
    void *w16;     /* batch > 1, and fp8 at any batch: [rows][cols] 16-bit dequantized weight */
    float *gu;     /* EC_GEMV_SILU_MUL: [batch][rows] fp32 gate and up before SiLU·mul */
} ec_cuda_packed_scratch;

/* Allocates and fills *tables [EC_CUDA_QTABLES_FLOATS] with ec_nf4_code and ec_dynamic_map()
 * (the host's values, so both sides decode identically); free with cudaFree. */
int ec_cuda_quant_tables(float **tables);

/* The RMSNorm that a batch-1 step carries through fp8's fused linears instead of launching
 * ec_cuda_rmsnorm (docs/cuda-backend.md, "The carried norm"; nf4 and nf4-dq refuse it, having
 * measured slower with it). An EC_GEMV_ADD call at batch 1 with sumsq_out also writes the sums
 * of squares of the new row of y by 16-row tiles, each in a fixed order, to sumsq_out
 * [ceil(rows / 16)]. A STORE or SILU_MUL call at batch 1 with norm (norm->sumsq those sums,
 * norm->x the row, w->cols a multiple of EC_CUDA_QCARRY_COLS_STEP up to EC_CUDA_QCARRY_MAX_COLS)
 * reads the fp32 row instead of x and rounds each activation as ec_cuda_rmsnorm does,
 * x * inv * w, with inv from the tile sums added in a fixed order; x is neither read nor
 * written. */
typedef struct {
    float *sumsq_out;
    const ec_cuda_norm *norm;
} ec_cuda_qcarry;
/* The widest row a carried norm's consumer takes (it stages the row in shared memory), and the
 * multiple of columns it needs: its MMA lanes read the staged row in whole 128-column chunks
 * (at 288 columns, llama2.c's stories15M, they read past it: an illegal address). */
#define EC_CUDA_QCARRY_MAX_COLS 8192
#define EC_CUDA_QCARRY_COLS_STEP 128

/* Fused family: y as ec_cuda_gemv (STORE / ADD fp32 [batch][ldy], SILU_MUL 16-bit [batch][ldy])
 * from x [batch][ldx] (16-bit, ldx >= cols), batch >= 1, ldy >= output rows; split (may be NULL:
 * no column split, slower for narrow weights) sized for w->rows; carry NULL or as above. */
int ec_cuda_packed_linear_fused(ec_cuda_dtype t, ec_gemv_mode mode, const ec_cuda_packed_weight *w,
                                const void *x, int ldx, int batch, void *y, int ldy,
                                const ec_cuda_qsplit *split, const ec_cuda_qcarry *carry,
                                cudaStream_t stream);

/* Reference family, same contract; cublas must be bound to `stream`. */
int ec_cuda_packed_linear_reference(cublasHandle_t cublas, ec_cuda_dtype t, ec_gemv_mode mode,
                                    const ec_cuda_packed_weight *w, const void *x, int ldx,
                                    int batch, void *y, int ldy,
                                    const ec_cuda_packed_scratch *scratch, cudaStream_t stream);

/* The reference family's steps, also exposed so the tests can check layouts exactly:
 * absmax [w->rows * ceil(cols/64)] fp32 = the nf4-dq block absmax (map[q] * absmax2 + offset);
 * w16 [rows][cols] (16-bit) = round(code value * absmax) (nf4, nf4-dq with `absmax` decoded)
 * or round(e4m3 value * scale) (fp8; absmax unused, may be NULL). */
int ec_cuda_nf4dq_absmax(const ec_cuda_packed_weight *w, float *absmax, cudaStream_t stream);
int ec_cuda_qdequant(ec_cuda_dtype t, const ec_cuda_packed_weight *w, const float *absmax,
                     void *w16, cudaStream_t stream);

/* ---- internal ---- */
/* The input check of both families' entry points: 0, or -1 with ec_last_error() naming family
 * ("fused", "reference"), the precision and what is wrong. */
int ec_cuda_qweight_check(const ec_cuda_packed_weight *w, ec_gemv_mode mode, int ldx, int batch,
                          int ldy, const char *family);
/* The per-format fused launchers behind ec_cuda_packed_linear_fused (checked inputs). */
int ec_cuda_nf4_fused(ec_cuda_dtype t, ec_gemv_mode mode, const ec_cuda_packed_weight *w,
                      const void *x, int ldx, int batch, void *y, int ldy,
                      const ec_cuda_qsplit *split, const ec_cuda_qcarry *carry,
                      cudaStream_t stream);
int ec_cuda_fp8_fused(ec_cuda_dtype t, ec_gemv_mode mode, const ec_cuda_packed_weight *w,
                      const void *x, int ldx, int batch, void *y, int ldy,
                      const ec_cuda_qsplit *split, const ec_cuda_qcarry *carry,
                      cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
