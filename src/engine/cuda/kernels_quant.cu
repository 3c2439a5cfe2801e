/* kernels_quant.cu — the host side shared by the quantized linears (nf4, nf4-dq, fp8): the device
 * copy of the format tables, the input check of both families, the fused family's checked entry
 * point (which hands the call to its format's file, kernels_nf4.cu or kernels_fp8.cu) and its
 * split scratch. The reference family is kernels_dequant.cu. */
#include "common/cuda_check.h"
#include "kernels_common.cuh"
#include "kernels_quant.h"

#include <stdint.h>
#include <string.h>

/* ---- tables ---- */
extern "C" int ec_cuda_quant_tables(float **tables)
{
    float host[EC_CUDA_QTABLES_FLOATS];
    memcpy(host, ec_nf4_code, 16 * sizeof(float));
    memcpy(host + 16, ec_dynamic_map(), 256 * sizeof(float));
    *tables = NULL;
    EC_CUDA_TRY(cudaMalloc((void **)tables, sizeof host), "cudaMalloc of quant tables (%zu bytes)",
                sizeof host);
    cudaError_t e = cudaMemcpy(*tables, host, sizeof host, cudaMemcpyHostToDevice);
    if (e != cudaSuccess) {
        cudaFree(*tables);
        *tables = NULL;
        return ec_cuda_fail(__FILE__, __LINE__, e, "upload of quant tables (%zu bytes)",
                            sizeof host);
    }
    return 0;
}

/* ---- input checks shared by both families ---- */
extern "C" int ec_cuda_qweight_check(const ec_cuda_packed_weight *w, ec_gemv_mode mode, int ldx,
                                     int batch, int ldy, const char *family)
{
    if (w->prec != EC_PREC_NF4 && w->prec != EC_PREC_NF4_DQ && w->prec != EC_PREC_FP8)
        return ec_set_error("%s quantized linear: precision %s has no kernel here", family,
                            ec_precision_name(w->prec));
    int out_rows = mode == EC_GEMV_SILU_MUL ? w->rows / 2 : w->rows;
    if (w->rows < 1 || w->cols < 1 || batch < 1 || ldx < w->cols || ldy < out_rows ||
        (mode == EC_GEMV_SILU_MUL && w->rows % 2 != 0))
        return ec_set_error("%s %s linear: bad shape (weight %d x %d, batch %d, ldx %d, ldy %d%s)",
                            family, ec_precision_name(w->prec), w->rows, w->cols, batch, ldx, ldy,
                            mode == EC_GEMV_SILU_MUL ? ", SiLU·mul needs an even row count" : "");
    if (!w->codes || (w->prec != EC_PREC_NF4_DQ && !w->scales) ||
        (w->prec != EC_PREC_FP8 && !w->tables))
        return ec_set_error("%s %s linear: missing codes, scales or tables", family,
                            ec_precision_name(w->prec));
    if (w->prec == EC_PREC_NF4_DQ) {
        if (w->nseg < 1 || w->nseg > EC_CUDA_MAX_SEGMENTS || w->seg[0].row0 != 0)
            return ec_set_error("%s nf4-dq linear: %d segments (needs 1-%d, the first at row 0)",
                                family, w->nseg, EC_CUDA_MAX_SEGMENTS);
        for (int s = 0; s < w->nseg; s++) {
            if (!w->seg[s].qscales || !w->seg[s].qscale_absmax ||
                (s > 0 && (w->seg[s].row0 <= w->seg[s - 1].row0 || w->seg[s].row0 >= w->rows)))
                return ec_set_error("%s nf4-dq linear: segment %d (row %d) is empty, unordered "
                                    "or has no scales",
                                    family, s, w->seg[s].row0);
        }
    }
    return 0;
}

/* ---- the fused family ---- */
extern "C" int ec_cuda_packed_linear_fused(ec_cuda_dtype t, ec_gemv_mode mode,
                                           const ec_cuda_packed_weight *w, const void *x, int ldx,
                                           int batch, void *y, int ldy,
                                           const ec_cuda_qsplit *split,
                                           const ec_cuda_qcarry *carry, cudaStream_t stream)
{
    if (ec_cuda_qweight_check(w, mode, ldx, batch, ldy, "fused")) return -1;
    if (carry && carry->sumsq_out && (mode != EC_GEMV_ADD || batch != 1))
        return ec_set_error("fused %s linear: sums of squares come from a residual add at batch 1 "
                            "(got mode %d, batch %d)",
                            ec_precision_name(w->prec), (int)mode, batch);
    const ec_cuda_norm *n = carry ? carry->norm : NULL;
    if (n && (mode == EC_GEMV_ADD || batch != 1 || w->cols % EC_CUDA_QCARRY_COLS_STEP != 0 ||
              w->cols > EC_CUDA_QCARRY_MAX_COLS || !n->x || !n->w || !n->sumsq ||
              ((uintptr_t)n->x | (uintptr_t)n->w) % 16 != 0))
        return ec_set_error("fused %s linear: a carried norm needs a store or SiLU·mul at batch 1 "
                            "(got mode %d, batch %d), columns in multiples of %d up to %d (got "
                            "%d), the sums of squares, and the row and weight on 16-byte "
                            "boundaries",
                            ec_precision_name(w->prec), (int)mode, batch,
                            EC_CUDA_QCARRY_COLS_STEP, EC_CUDA_QCARRY_MAX_COLS, w->cols);
    if (w->prec == EC_PREC_FP8)
        return ec_cuda_fp8_fused(t, mode, w, x, ldx, batch, y, ldy, split, carry, stream);
    return ec_cuda_nf4_fused(t, mode, w, x, ldx, batch, y, ldy, split, carry, stream);
}

/* ---- the fused family's split scratch ---- */
/* Two CTAs per SM: qgemm_kernel's residency (__launch_bounds__(128, 2)); a device holding more
 * gets longer runs per CTA instead (ec_qlaunch_gemm_nt). */
static int qsplit_ctas(void)
{
    return 2 * ec_sm_count();
}
static size_t qsplit_partial_bytes(int ctas)
{
    return ((size_t)ctas * EC_CUDA_QSPLIT_FLOATS_PER_CTA * sizeof(float) + 255) & ~(size_t)255;
}
static size_t qsplit_counters(int max_rows)
{
    size_t per_group = (size_t)(max_rows + EC_CUDA_QSPLIT_ROWS - 1) / EC_CUDA_QSPLIT_ROWS;
    return EC_CUDA_QSPLIT_GROUPS * per_group;
}

extern "C" size_t ec_cuda_qsplit_bytes(int max_rows)
{
    return qsplit_partial_bytes(qsplit_ctas()) + qsplit_counters(max_rows) * sizeof(unsigned);
}

extern "C" int ec_cuda_qsplit_alloc(ec_cuda_qsplit *split, int max_rows)
{
    memset(split, 0, sizeof *split);
    int ctas = qsplit_ctas();
    if (ctas == 0) return ec_set_error("split scratch: no CUDA device to size it for");
    size_t counters = qsplit_counters(max_rows) * sizeof(unsigned);
    char *base = NULL;
    EC_CUDA_TRY(cudaMalloc((void **)&base, qsplit_partial_bytes(ctas) + counters),
                "cudaMalloc of the split scratch (%d CTAs, %d rows)", ctas, max_rows);
    split->partial = (float *)base;
    split->arrived = (unsigned *)(base + qsplit_partial_bytes(ctas));
    split->ctas = ctas;
    cudaError_t e = cudaMemset(split->arrived, 0, counters);
    if (e != cudaSuccess) {
        ec_cuda_qsplit_free(split);
        return ec_cuda_fail(__FILE__, __LINE__, e, "clearing the split scratch's counters");
    }
    return 0;
}

extern "C" void ec_cuda_qsplit_free(ec_cuda_qsplit *split)
{
    cudaFree(split->partial); /* teardown: errors have no one to report to */
    memset(split, 0, sizeof *split);
}
