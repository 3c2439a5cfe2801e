/* qlinear.c — the quantized-weight descriptor (placement, segments) and ec_cuda_qlinear: one
 * linear layer in the fused or the reference kernel family (docs/cuda-backend.md, "Kernel
 * families"). Host code only: it picks and enqueues the kernels of kernels_*.cu and cuBLAS. */
#include "qweight.h"

#include "common/cuda_check.h"
#include "kernels_quant.h"

#include <stdlib.h>
#include <string.h>

static size_t align256(size_t n) { return (n + 255) & ~(size_t)255; }
static int round_up(int n, int m) { return (n + m - 1) / m * m; }
static const ec_cuda_format formats[] = {
    [EC_PREC_F32] = {EC_CUDA_PATH_NONE, EC_CUDA_F16, 0},
    [EC_PREC_FP16] = {EC_CUDA_PATH_16BIT, EC_CUDA_F16, 0},
    [EC_PREC_BF16] = {EC_CUDA_PATH_16BIT, EC_CUDA_BF16, 0},
    [EC_PREC_INT8] = {EC_CUDA_PATH_INT8, EC_CUDA_F16, 0},
    [EC_PREC_INT8_MIXED] = {EC_CUDA_PATH_INT8, EC_CUDA_F16, 0},
    /* nf4 and nf4-dq measured slower with the norm carried (kernels_nf4.cu, CARRY_NORM). */
    [EC_PREC_NF4] = {EC_CUDA_PATH_PACKED, EC_CUDA_F16, 0},
    [EC_PREC_NF4_DQ] = {EC_CUDA_PATH_PACKED, EC_CUDA_F16, 0},
    [EC_PREC_FP8] = {EC_CUDA_PATH_PACKED, EC_CUDA_F16, 1},
};
_Static_assert(sizeof formats / sizeof *formats == EC_PREC_COUNT,
               "every ec_precision needs an entry in the CUDA backend's format table");

ec_cuda_format ec_cuda_format_of(ec_precision p)
{
    ec_cuda_format missing = {EC_CUDA_PATH_MISSING, EC_CUDA_F16, 0};
    return (unsigned)p < EC_PREC_COUNT ? formats[p] : missing;
}

static int is_int8(ec_precision p) { return ec_cuda_format_of(p).path == EC_CUDA_PATH_INT8; }
static ec_cuda_dtype act_dtype(ec_precision p) { return ec_cuda_format_of(p).act; }
int ec_cuda_is_packed(ec_precision p) { return ec_cuda_format_of(p).path == EC_CUDA_PATH_PACKED; }
static int is_nf4(ec_precision p) { return ec_qformat_of(p)->code_bits == 4; }
static int double_quant(ec_precision p) { return ec_qformat_of(p)->double_quant; }
static size_t nblocks(int cols) { return (size_t)(cols + EC_NF4_BLOCK - 1) / EC_NF4_BLOCK; }

int ec_cuda_qweight_ld(ec_precision prec, int cols)
{
    if (is_nf4(prec)) return (cols + 1) / 2;
    return is_int8(prec) ? round_up(cols, 16) : cols;
}

/* int8 data has 3 zero rows after the last, so the int8 GEMM of any segment can round its m up
 * to a multiple of 4 (ec_cuda_int8_gemm) without reading past the allocation. */
static size_t data_bytes(ec_precision prec, int rows, int cols)
{
    size_t ld = (size_t)ec_cuda_qweight_ld(prec, cols);
    if (ec_cuda_is_packed(prec)) return (size_t)rows * ld;
    return is_int8(prec) ? ((size_t)rows + 3) * ld : (size_t)rows * ld * 2;
}

/* Floats of scales: int8 / fp8 one per row, nf4 one per block, nf4-dq none (qscales instead). */
static size_t scale_count(ec_precision prec, int rows, int cols)
{
    const ec_qformat *f = ec_qformat_of(prec);
    if (f->scale_bytes != 4) return 0;
    return f->scale_block ? (size_t)rows * nblocks(cols) : (size_t)rows;
}

/* Second-level absmax floats of nf4-dq for any split into up to EC_CUDA_MAX_SEGMENTS segments:
 * each segment rounds its block count up to a multiple of 256 at most once. */
static size_t qabsmax_count(ec_precision prec, int rows, int cols)
{
    if (!double_quant(prec)) return 0;
    return ((size_t)rows * nblocks(cols) + EC_NF4_DQ_BLOCK - 1) / EC_NF4_DQ_BLOCK +
           EC_CUDA_MAX_SEGMENTS;
}

size_t ec_cuda_qweight_bytes(ec_precision prec, int rows, int cols)
{
    size_t qs = double_quant(prec) ? (size_t)rows * nblocks(cols) : 0;
    size_t nsc = scale_count(prec, rows, cols), nqa = qabsmax_count(prec, rows, cols);
    return align256(data_bytes(prec, rows, cols)) + (nsc ? align256(nsc * sizeof(float)) : 0) +
           (qs ? align256(qs) : 0) + (nqa ? align256(nqa * sizeof(float)) : 0);
}

size_t ec_cuda_qweight_place(ec_cuda_qweight *w, ec_precision prec, int rows, int cols,
                             float threshold, uintptr_t base)
{
    memset(w, 0, sizeof *w);
    w->prec = prec;
    w->rows = rows;
    w->cols = cols;
    w->ldx = cols;
    w->ld = ec_cuda_qweight_ld(prec, cols);
    w->data = (void *)base;
    uintptr_t p = base + align256(data_bytes(prec, rows, cols));
    size_t nsc = scale_count(prec, rows, cols), nqa = qabsmax_count(prec, rows, cols);
    if (nsc) {
        w->scales = (float *)p;
        p += align256(nsc * sizeof(float));
    }
    if (double_quant(prec)) {
        w->qscales = (uint8_t *)p;
        p += align256((size_t)rows * nblocks(cols));
        w->qabsmax = (float *)p;
        p += align256(nqa * sizeof(float));
    }
    w->threshold = ec_qformat_of(prec)->outliers ? threshold : 0.0f;
    w->n_segments = 1;
    w->seg[0].rows = rows;
    w->seg[0].qscale_absmax = w->qabsmax;
    return ec_cuda_qweight_bytes(prec, rows, cols);
}

void ec_cuda_qweight_segments(ec_cuda_qweight *w, int n, const int *rows)
{
    w->n_segments = n;
    size_t nb = nblocks(w->cols), qa = 0;
    for (int i = 0, r0 = 0; i < n; r0 += rows[i++]) {
        const float *absmax2 = w->qabsmax ? w->qabsmax + qa : NULL;
        w->seg[i] = (ec_cuda_qsegment){r0, rows[i], absmax2, 0.0f};
        qa += ((size_t)rows[i] * nb + EC_NF4_DQ_BLOCK - 1) / EC_NF4_DQ_BLOCK;
    }
}

/* A segment is a row offset into data and scales: per-row formats offset their scales by
 * row0, nf4 by row0 * nblocks; nf4-dq offsets its qscales so and takes the segment's own
 * second-level statistics. */
ec_cuda_test_paths ec_cuda_test_path_choice; /* kernels.h: set by the GPU tests only */

ec_cuda_qweight ec_cuda_qweight_segment(const ec_cuda_qweight *w, int i)
{
    const ec_cuda_qsegment *s = &w->seg[i];
    ec_cuda_qweight v = *w;
    size_t elem = is_int8(w->prec) || ec_cuda_is_packed(w->prec) ? 1 : 2;
    size_t per_row = scale_count(w->prec, 1, w->cols);
    v.rows = s->rows;
    v.data = (char *)w->data + (size_t)s->row0 * (size_t)w->ld * elem;
    if (v.scales) v.scales += (size_t)s->row0 * per_row;
    if (v.qscales) v.qscales += (size_t)s->row0 * nblocks(w->cols);
    if (v.qabsmax) v.qabsmax = (float *)s->qscale_absmax;
    v.n_segments = 1;
    v.seg[0] = (ec_cuda_qsegment){0, s->rows, s->qscale_absmax, s->qscale_offset};
    return v;
}

/* ---- context ---- */

static void *carve(uintptr_t base, size_t *off, size_t bytes)
{
    void *p = (void *)(base + *off);
    *off += align256(bytes);
    return p;
}

/* Places the scratch of qweight.h's table at base (0: measure only); returns the bytes. */
static size_t plan_ctx(ec_cuda_qctx *c, const ec_cuda_qshape *sh, uintptr_t base)
{
    size_t off = 0;
    int reference = sh->kernels == EC_KERNELS_REFERENCE;
    /* Packed formats: the nf4-dq absmax and the dequantized weight of the reference family, and
     * of the fused family's prefill-sized calls (packed_linear). */
    int dequant = sh->packed && (reference || sh->max_batch > EC_CUDA_QMMA_MAX_BATCH);
    c->pabsmax = dequant ? (float *)carve(base, &off, (size_t)sh->max_rows *
                                                          nblocks(sh->max_cols) * sizeof(float))
                         : NULL;
    c->pw16 = dequant ? carve(base, &off, sh->max_weight * 2) : NULL;
    c->sumsq = sh->packed && !reference && !sh->sharded
                   ? (float *)carve(base, &off, (size_t)(sh->max_rows + 15) / 16 * sizeof(float))
                   : NULL;
    if (!sh->quantized) return off;
    size_t B = (size_t)sh->max_batch, K = (size_t)round_up(sh->max_cols, 16);
    size_t T = B < EC_CUDA_TC_ROWS ? B : EC_CUDA_TC_ROWS, R4 = (size_t)round_up(sh->max_rows, 4);
    c->xq = (int8_t *)carve(base, &off, B * K);
    c->xscale = (float *)carve(base, &off, B * sizeof(float));
    c->omask = (unsigned *)carve(base, &off, (K + 31) / 32 * sizeof(unsigned));
    c->ticket = (unsigned *)carve(base, &off, sizeof(unsigned));
    c->ocols = (int *)carve(base, &off, K * sizeof(int));
    c->ocount = (int *)carve(base, &off, sizeof(int));
    /* The GEMV needs no GEMM output; the reference family runs the int8 GEMM at every batch. */
    int gemm = reference || sh->max_batch > EC_CUDA_GEMV_MAX_BATCH;
    c->acc = gemm ? (int32_t *)carve(base, &off, T * R4 * sizeof(int32_t)) : NULL;
    int gather = reference || (sh->mixed && sh->max_batch > EC_CUDA_GATHER_MIN_ROWS);
    /* xo also holds the one-pass GEMM's outlier activations (9..64 token rows, fused) */
    int mma = sh->mixed && sh->max_batch > EC_CUDA_GEMV_MAX_BATCH;
    c->xo = gather || mma ? carve(base, &off, B * K * 2) : NULL;
    c->wo = gather ? carve(base, &off, sh->max_elems * 2) : NULL;
    c->osum = gather && !reference ? (float *)carve(base, &off, T * R4 * sizeof(float)) : NULL;
    return off;
}

size_t ec_cuda_qctx_bytes(const ec_cuda_qshape *shape)
{
    ec_cuda_qctx c;
    size_t tables = shape->packed ? align256(EC_CUDA_QTABLES_FLOATS * sizeof(float)) : 0;
    size_t split = shape->packed && shape->kernels != EC_KERNELS_REFERENCE
                       ? ec_cuda_qsplit_bytes(shape->max_rows)
                       : 0;
    return plan_ctx(&c, shape, 0) + tables + split;
}

int ec_cuda_qctx_init(ec_cuda_qctx *ctx, const ec_cuda_qshape *shape, cublasHandle_t cublas,
                      cudaStream_t stream, float *wide)
{
    memset(ctx, 0, sizeof *ctx);
    ctx->cublas = cublas;
    ctx->stream = stream;
    ctx->kernels = shape->kernels;
    ctx->shape = *shape;
    ctx->wide = wide;
    if (shape->packed && ec_cuda_quant_tables(&ctx->qtables)) return -1;
    if (shape->packed && shape->kernels != EC_KERNELS_REFERENCE &&
        ec_cuda_qsplit_alloc(&ctx->qsplit, shape->max_rows))
        return -1;
    size_t bytes = plan_ctx(ctx, shape, 0);
    if (bytes == 0) return 0;
    EC_CUDA_TRY(cudaMalloc(&ctx->arena, bytes),
                "cudaMalloc of quantized linear scratch (%zu bytes)", bytes);
    plan_ctx(ctx, shape, (uintptr_t)ctx->arena);
    if (ctx->ticket)
        EC_CUDA_TRY(cudaMemset(ctx->ticket, 0, sizeof *ctx->ticket), "clearing the scan ticket");
    if (ctx->wo) /* the paths that read the outlier count on the host */
        EC_CUDA_TRY(cudaMallocHost((void **)&ctx->h_count, sizeof(int)),
                    "cudaMallocHost of the outlier count");
    if (shape->quantized && shape->kernels == EC_KERNELS_REFERENCE) {
        size_t cols = (size_t)round_up(shape->max_cols, 16);
        EC_CUDA_TRY(cudaMallocHost((void **)&ctx->h_cols, cols * sizeof(int)),
                    "cudaMallocHost of the outlier columns (%zu)", cols);
    }
    return 0;
}

void ec_cuda_qctx_free(ec_cuda_qctx *ctx)
{
    /* Teardown: errors have no one to report to. */
    cudaFree(ctx->arena);
    cudaFree(ctx->qtables);
    ec_cuda_qsplit_free(&ctx->qsplit);
    cudaFreeHost(ctx->h_count);
    cudaFreeHost(ctx->h_cols);
    memset(ctx, 0, sizeof *ctx);
}

/* ---- fused family ---- */

/* Bytes per element of y in a mode: fp32 except the 16-bit SiLU·mul output. */
static size_t y_elem(ec_gemv_mode mode) { return mode == EC_GEMV_SILU_MUL ? 2 : 4; }

/* Whether an int8-mixed call takes the gathered outlier path: prefill-sized (more than
 * EC_CUDA_GATHER_MIN_ROWS token rows; decode batches keep the epilogue's, which needs no host
 * sync), the scratch is there for this weight, and the stream is not being captured. */
static int gather_outliers(const ec_cuda_qctx *c, const ec_cuda_qweight *w, int batch)
{
    enum cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    return c->osum && batch > EC_CUDA_GATHER_MIN_ROWS &&
           (size_t)w->rows * (size_t)w->cols <= c->shape.max_elems &&
           cudaStreamIsCapturing(c->stream, &capture) == cudaSuccess &&
           capture == cudaStreamCaptureStatusNone;
}

int ec_cuda_qlinear_one_pass(const ec_cuda_qctx *c, const ec_cuda_qweight *w, int batch)
{
    /* Measured on an H100: 10-12 % faster decode steps for
     * int8-mixed at 12 and 16 token rows; slower from 32 rows up and for plain int8, where
     * cuBLAS' int8 GEMM streams the weights faster than this kernel. test_cuda_int8 takes it
     * wherever it can run (ec_cuda_test_path_choice), to check those calls too. */
    enum { ONE_PASS_MAX_BATCH = 16 };
    int mixed = w->threshold > 0.0f;
    if (batch > EC_CUDA_INT8_MMA_MAX_BATCH || w->ld % 64 != 0 || (mixed && !c->xo)) return 0;
    return ec_cuda_test_path_choice.int8_one_pass_everywhere ||
           (mixed && batch <= ONE_PASS_MAX_BATCH);
}

/* Whether a decode GEMV of a cols-wide input x quantizes that token itself instead of a prepare
 * launch before it: at batch 1 without a norm to run first,
 * i.e. the inputs of o and down. The prepare before qkv and gate/up runs the layer's RMSNorm
 * too; inside the GEMV that measured no faster. test_cuda_int8 runs both. */
static int int8_own_token(int cols, const ec_cuda_norm *norm, const void *x, int batch)
{
    return batch == 1 && !norm && !ec_cuda_test_path_choice.int8_prepare_always &&
           ec_cuda_int8_gemv_own_fits(cols, x);
}

/* norm (batch <= EC_CUDA_GEMV_MAX_BATCH only; else NULL): see ec_cuda_qlinear_normed. */
static int fused_int8(const ec_cuda_qctx *c, const ec_cuda_qweight *w, ec_gemv_mode mode,
                      const ec_cuda_norm *norm, void *x, int batch, void *y, int ldy,
                      unsigned long long *stat)
{
    int out_rows = mode == EC_GEMV_SILU_MUL ? w->rows / 2 : w->rows;
    cudaStream_t st = c->stream;
    const int8_t *wq = (const int8_t *)w->data;
    if (int8_own_token(w->cols, norm, x, batch))
        return ec_cuda_int8_gemv_own(mode, wq, w->scales, out_rows, w->ld, x, w->cols,
                                     w->threshold, c->omask, c->ocount, c->xq, c->xscale, stat,
                                     y, ldy, st);
    /* Which successors may launch at this GEMV's start rather than at its end (behind a
     * prepare, measured slower):
     * - the SiLU·mul output is the down projection's input; where that GEMV quantizes it
     *   itself, its blocks take the SMs this one's blocks leave and send their first weight
     *   requests at once (3.5 µs less per layer on Llama-2-7B);
     * - at batch 1 a stored output is the QKV row (or a quantized head's logits), whose
     *   attention blocks then wait resident with their rope angles made, and release o early in
     *   turn (0.4-0.7 % faster steps). */
    int release = (mode == EC_GEMV_SILU_MUL && int8_own_token(out_rows, NULL, y, batch)) ||
                  (mode == EC_GEMV_STORE && batch == 1);
    if (batch <= EC_CUDA_GEMV_MAX_BATCH)
        return ec_cuda_int8_prepare(norm, x, batch, w->cols, w->ld, w->threshold, c->omask, c->ocount,
                                    c->xq, c->xscale, stat, st) ||
                       ec_cuda_int8_gemv(mode, wq, w->scales, out_rows, w->ld, c->xq, c->xscale,
                                         x, w->cols, w->threshold > 0.0f ? c->omask : NULL,
                                         batch, release, y, ldy, st)
                   ? -1
                   : 0;
    int mixed = w->threshold > 0.0f, one_pass = ec_cuda_qlinear_one_pass(c, w, batch);
    int n = 0, gathered = mixed && !one_pass && gather_outliers(c, w, batch);
    /* The column list serves the gathers only; the epilogue reads the mask, and the count comes
     * with the quantization, so the scan ends with the mask. */
    int listed = one_pass || gathered;
    if (mixed && ec_cuda_int8_outliers(x, batch, w->cols, w->threshold, c->omask,
                                       listed ? c->ocols : NULL, c->ocount, c->ticket, stat, st))
        return -1;
    if (one_pass)
        /* One pass over the weights with the outlier product inside (kernels_int8_mma.cu):
         * quantize (gathering the outlier activations) and one GEMM kernel. */
        return ec_cuda_int8_quantize(x, batch, w->cols, w->ld, mixed ? c->omask : NULL, c->xq,
                                     c->xscale, c->ocols, c->ocount, mixed ? c->xo : NULL, NULL,
                                     NULL, st) ||
                       ec_cuda_int8_mma(mode, wq, w->scales, out_rows, w->ld, c->xq, c->xscale,
                                        c->xo, mixed ? c->omask : NULL, batch, y, ldy, st)
                   ? -1
                   : 0;
    if (gathered) {
        /* A prefill-sized call, where the outlier columns are many (a column counts when any of
         * its thousands of tokens crosses the threshold): their product is a cuBLAS 16-bit GEMM
         * over the gathered columns, as in the reference family, instead of the epilogue's
         * tensor-core tiles, which re-read the activations for every 32 weight rows.
         * Its width is the count, so the host reads it:
         * a sync, outside any graph. */
        EC_CUDA_TRY(cudaMemcpyAsync(c->h_count, c->ocount, sizeof(int), cudaMemcpyDeviceToHost, st),
                    "download of the outlier count");
        EC_CUDA_TRY(cudaStreamSynchronize(st), "outlier count (host sync)");
        int count = *c->h_count;
        /* n: the GEMM's width, the count padded with zero columns to a multiple of 8 where the
         * scratch holds them; cuBLAS runs a 16-bit GEMM whose leading dimensions are not a
         * multiple of 8 on its slower unaligned kernels. */
        n = count > 0 && (size_t)w->rows * (size_t)round_up(count, 8) <= c->shape.max_elems
                ? round_up(count, 8)
                : count;
        if (n > 0 && (ec_cuda_int8_gather_x(x, batch, w->cols, c->ocols, count, n, c->xo, st) ||
                      ec_cuda_int8_weight_cols(wq, w->scales, w->rows, w->ld, c->ocols, count, n,
                                               c->wo, st)))
            return -1;
    }
    if (ec_cuda_int8_quantize(x, batch, w->cols, w->ld, mixed ? c->omask : NULL, c->xq,
                              c->xscale, NULL, NULL, NULL, mixed && !listed ? c->ocount : NULL,
                              stat, st))
        return -1;
    int ldc = round_up(w->rows, 4);
    for (int b0 = 0; b0 < batch; b0 += EC_CUDA_TC_ROWS) {
        int nb = batch - b0 < EC_CUDA_TC_ROWS ? batch - b0 : EC_CUDA_TC_ROWS;
        if (ec_cuda_int8_gemm(c->cublas, wq, w->rows, w->ld, c->xq + (size_t)b0 * w->ld, nb,
                              c->acc, ldc) ||
            (n > 0 && ec_cuda_gemm16(c->cublas, EC_CUDA_F16, c->wo, n,
                                     (const char *)c->xo + (size_t)b0 * n * 2, n, nb, w->rows, n,
                                     c->osum, w->rows, 0.0f)) ||
            ec_cuda_int8_epilogue(mode, c->acc, ldc, w->scales, out_rows, wq, w->ld,
                                  c->xscale + b0, (const char *)x + (size_t)b0 * w->cols * 2,
                                  w->cols, mixed && !gathered ? c->omask : NULL, c->ocount,
                                  n > 0 ? c->osum : NULL, w->rows, nb,
                                  (char *)y + (size_t)b0 * ldy * y_elem(mode), ldy, st))
            return -1;
    }
    return 0;
}

/* ---- reference family: one linear per segment, as eager frameworks run them ---- */

/* bitsandbytes' int8 linear for one (unfused) weight into dst fp32 [batch][ldd]: outlier scan
 * with the count (and the columns) copied to the host, quantize, int8 GEMM, dequant, and for
 * the outlier columns a gather, a weight-column dequant and a 16-bit GEMM added onto dst. */
static int reference_int8(const ec_cuda_qctx *c, const ec_cuda_qweight *w, const void *x,
                          int batch, float *dst, int ldd, unsigned long long *stat)
{
    cudaStream_t st = c->stream;
    const int8_t *wq = (const int8_t *)w->data;
    int n = 0;
    if (w->threshold > 0.0f) {
        if (ec_cuda_int8_outliers(x, batch, w->cols, w->threshold, c->omask, c->ocols, c->ocount,
                                  c->ticket, stat, st))
            return -1;
        /* bitsandbytes: `outliers.any()` then `argwhere(...)`, two device-to-host syncs. */
        EC_CUDA_TRY(cudaMemcpyAsync(c->h_count, c->ocount, sizeof(int), cudaMemcpyDeviceToHost, st),
                    "download of the outlier count");
        EC_CUDA_TRY(cudaStreamSynchronize(st), "outlier count (host sync)");
        n = *c->h_count;
        if (n > 0) {
            EC_CUDA_TRY(cudaMemcpyAsync(c->h_cols, c->ocols, (size_t)n * sizeof(int),
                                        cudaMemcpyDeviceToHost, st),
                        "download of %d outlier columns", n);
            EC_CUDA_TRY(cudaStreamSynchronize(st), "outlier columns (host sync)");
        }
    }
    if (ec_cuda_int8_quantize(x, batch, w->cols, w->ld, w->threshold > 0.0f ? c->omask : NULL,
                              c->xq, c->xscale, NULL, NULL, NULL, NULL, NULL, st))
        return -1;
    int ldc = round_up(w->rows, 4);
    for (int b0 = 0; b0 < batch; b0 += EC_CUDA_TC_ROWS) {
        int nb = batch - b0 < EC_CUDA_TC_ROWS ? batch - b0 : EC_CUDA_TC_ROWS;
        if (ec_cuda_int8_gemm(c->cublas, wq, w->rows, w->ld, c->xq + (size_t)b0 * w->ld, nb,
                              c->acc, ldc) ||
            ec_cuda_int8_dequant(c->acc, ldc, w->scales, w->rows, c->xscale + b0, nb,
                                 dst + (size_t)b0 * ldd, ldd, st))
            return -1;
    }
    if (n == 0) return 0;
    return ec_cuda_int8_gather_x(x, batch, w->cols, c->ocols, n, n, c->xo, st) ||
                   ec_cuda_int8_weight_cols(wq, w->scales, w->rows, w->ld, c->ocols, n, n, c->wo,
                                            st) ||
                   ec_cuda_gemm16(c->cublas, EC_CUDA_F16, c->wo, n, c->xo, n, batch, w->rows, n,
                                  dst, ldd, 1.0f)
               ? -1
               : 0;
}

static int reference_one(const ec_cuda_qctx *c, const ec_cuda_qweight *w, const void *x,
                         int batch, float *dst, int ldd, unsigned long long *stat)
{
    if (is_int8(w->prec)) return reference_int8(c, w, x, batch, dst, ldd, stat);
    return ec_cuda_gemm16(c->cublas, act_dtype(w->prec), w->data, w->ld, x, w->cols, batch,
                          w->rows, w->cols, dst, ldd, 0.0f);
}

static int reference_linear(const ec_cuda_qctx *c, const ec_cuda_qweight *w, ec_gemv_mode mode,
                            const void *x, int batch, void *y, int ldy, unsigned long long *stat)
{
    /* STORE writes each segment's columns of y; ADD and SILU_MUL go through wide [batch][rows]
     * and a separate add / SiLU·mul kernel, as an eager framework's `x + out`, `silu(g) * u`. */
    float *dst = mode == EC_GEMV_STORE ? (float *)y : c->wide;
    int ldd = mode == EC_GEMV_STORE ? ldy : w->rows;
    for (int i = 0; i < w->n_segments; i++) {
        ec_cuda_qweight v = ec_cuda_qweight_segment(w, i);
        /* q, k and v see the same input: count its outlier columns once. */
        if (reference_one(c, &v, x, batch, dst + w->seg[i].row0, ldd, i == 0 ? stat : NULL))
            return -1;
    }
    if (mode == EC_GEMV_ADD) return ec_cuda_add((float *)y, ldy, c->wide, ldd, batch, w->rows, c->stream);
    if (mode == EC_GEMV_SILU_MUL)
        return ec_cuda_silu_mul(act_dtype(w->prec), c->wide, batch, w->rows / 2, y, ldy, c->stream);
    return 0;
}

/* ---- packed formats (nf4, nf4-dq, fp8): kernels_quant.h over the whole (fused) weight ---- */

static ec_cuda_packed_weight packed_of(const ec_cuda_qctx *c, const ec_cuda_qweight *w)
{
    ec_cuda_packed_weight pw;
    memset(&pw, 0, sizeof pw);
    pw.prec = w->prec;
    pw.rows = w->rows;
    pw.cols = w->cols;
    pw.codes = (const uint8_t *)w->data;
    pw.scales = w->scales;
    pw.tables = c->qtables;
    if (double_quant(w->prec)) {
        size_t nb = nblocks(w->cols);
        pw.nseg = w->n_segments;
        for (int i = 0; i < w->n_segments; i++)
            pw.seg[i] = (ec_cuda_dq_segment){w->seg[i].row0,
                                             w->qscales + (size_t)w->seg[i].row0 * nb,
                                             w->seg[i].qscale_absmax, w->seg[i].qscale_offset};
    }
    return pw;
}

float *ec_cuda_qlinear_sumsq(const ec_cuda_qctx *c, const ec_cuda_qweight *w, int batch)
{
    return batch == 1 && c->sumsq && ec_cuda_format_of(w->prec).carries_norm ? c->sumsq : NULL;
}

/* Whether a packed linear takes its norm carried (ec_cuda_qcarry) instead of a norm launch. */
static int carries_norm(const ec_cuda_qctx *c, const ec_cuda_qweight *w, const ec_cuda_norm *norm,
                        int batch)
{
    return norm->sumsq && ec_cuda_qlinear_sumsq(c, w, batch) &&
           w->cols % EC_CUDA_QCARRY_COLS_STEP == 0 &&
           w->cols <= EC_CUDA_QCARRY_MAX_COLS;
}

/* norm: carried (carries_norm), else NULL. */
static int packed_linear(const ec_cuda_qctx *c, const ec_cuda_qweight *w, ec_gemv_mode mode,
                         const ec_cuda_norm *norm, const void *x, int batch, void *y, int ldy)
{
    ec_cuda_packed_weight pw = packed_of(c, w);
    /* Calls of more than one tensor-core launch's token rows (prefill chunks) take the
     * dequantize-once path in the fused family too: at 512+ rows the product is compute-bound,
     * and cuBLAS on a 16-bit copy (2 bytes written and read per weight, once per call) runs the
     * tensor cores far faster than re-decoding every weight tile per 64 rows; decode batches
     * stay on the one-pass kernels. */
    if (c->kernels != EC_KERNELS_REFERENCE && batch <= EC_CUDA_QMMA_MAX_BATCH) {
        ec_cuda_qcarry carry = {
            mode == EC_GEMV_ADD ? ec_cuda_qlinear_sumsq(c, w, batch) : NULL, norm};
        return ec_cuda_packed_linear_fused(EC_CUDA_F16, mode, &pw, x, w->ldx, batch, y, ldy,
                                           &c->qsplit, &carry, c->stream);
    }
    ec_cuda_packed_scratch scratch = {c->pabsmax, c->pw16, c->wide};
    return ec_cuda_packed_linear_reference(c->cublas, EC_CUDA_F16, mode, &pw, x, w->ldx, batch, y,
                                           ldy, &scratch, c->stream);
}

/* Both entry points: x is the input, or with norm the buffer the norm writes it to. */
static int qlinear(const ec_cuda_qctx *c, const ec_cuda_qweight *w, ec_gemv_mode mode,
                   const ec_cuda_norm *norm, void *x, int batch, void *y, int ldy,
                   unsigned long long *stat)
{
    int out_rows = mode == EC_GEMV_SILU_MUL ? w->rows / 2 : w->rows;
    if (batch < 1 || batch > c->shape.max_batch || w->cols > c->shape.max_cols ||
        w->rows > c->shape.max_rows || ldy < out_rows || (is_int8(w->prec) && !c->shape.quantized) ||
        (ec_cuda_is_packed(w->prec) &&
         (!c->shape.packed || (size_t)w->rows * (size_t)w->cols > c->shape.max_weight)) ||
        (mode == EC_GEMV_SILU_MUL && (w->rows % 2 || w->n_segments != 2)))
        return ec_set_error("linear %s %d x %d (mode %d, batch %d, ldy %d) outside the context "
                            "(batch <= %d, %d x %d%s%s)",
                            ec_precision_name(w->prec), w->rows, w->cols, (int)mode, batch, ldy,
                            c->shape.max_batch, c->shape.max_rows, c->shape.max_cols,
                            c->shape.quantized ? "" : ", no int8 scratch",
                            c->shape.packed ? "" : ", no nf4/fp8 tables");
    int fused_int8_path = c->kernels != EC_KERNELS_REFERENCE && is_int8(w->prec);
    /* Only the decode prepare of the fused int8 path, and fp8's fused kernels with the norm
     * carried, normalise by themselves. */
    if (norm && !(fused_int8_path && batch <= EC_CUDA_GEMV_MAX_BATCH) &&
        !carries_norm(c, w, norm, batch)) {
        if (ec_cuda_rmsnorm(act_dtype(w->prec), norm->x, norm->x_stride, norm->w, batch, w->cols,
                            norm->eps, x, c->stream))
            return -1;
        norm = NULL;
    }
    if (ec_cuda_is_packed(w->prec)) return packed_linear(c, w, mode, norm, x, batch, y, ldy);
    if (c->kernels == EC_KERNELS_REFERENCE)
        return reference_linear(c, w, mode, x, batch, y, ldy, stat);
    if (fused_int8_path) return fused_int8(c, w, mode, norm, x, batch, y, ldy, stat);
    return ec_cuda_linear(c->cublas, act_dtype(w->prec), mode, w->data, x, batch, out_rows,
                          w->cols, y, ldy, c->wide, c->stream);
}

int ec_cuda_qlinear(const ec_cuda_qctx *c, const ec_cuda_qweight *w, ec_gemv_mode mode,
                    const void *x, int batch, void *y, int ldy, unsigned long long *stat)
{
    return qlinear(c, w, mode, NULL, (void *)x, batch, y, ldy, stat);
}

int ec_cuda_qlinear_normed(const ec_cuda_qctx *c, const ec_cuda_qweight *w, ec_gemv_mode mode,
                           const ec_cuda_norm *norm, void *x, int batch, void *y, int ldy,
                           unsigned long long *stat)
{
    return qlinear(c, w, mode, norm, x, batch, y, ldy, stat);
}
