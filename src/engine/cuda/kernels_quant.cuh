/* kernels_quant.cuh — the fused weight-only quantized linear, written once for every format.
 *
 * A format is a small policy struct (Nf4<DQ> in kernels_nf4.cu, Fp8 in kernels_fp8.cu) that
 * loads packed codes and decodes them; two kernels own the dataflow (kernels_qmma.cuh,
 * kernels_qgemm.cuh; their device helpers in kernels_quant_common.cuh, the launch policy in
 * kernels_quant_launch.cuh), and this file holds the format's dtype and mode switch:
 *
 *   qmma_kernel (batch 1..16) and qgemm_kernel (17..64 per launch, x staged in shared memory
 *     for 128-row CTAs, columns split across CTAs; see its section): tensor cores, weights read
 *     once per 64 token rows. Batch 1 runs on tensor cores too, with 7 of the 8 token columns
 *     empty: the MMA does the multiply-adds of 256 weights in one instruction, so a lane spends
 *     0.75 (fp8) to 1.5 (nf4) instructions per weight on decoding instead of the three or four of
 *     an fp32 GEMV.
 *     The MMA is "swapped": M = weight rows (16 per tile), N = token rows (8 per tile), K =
 *     columns, so y^T = W x^T needs no transposes (W row-major = A row-major, x [batch][cols] =
 *     B column-major) and small batches waste no M. In qmma_kernel a CTA holds 8 warps that split
 *     the columns in chunks of 128 and QMMA_MTILES row tiles per warp (one for narrow weights,
 *     see ec_qlaunch_mma); partial sums meet in shared memory, in a fixed order (see qmma_kernel
 *     for the streaming).
 *     Each lane loads, per 128-column chunk and per A row it owns (g and g+8 of each tile), the
 *     32 consecutive columns [32t, 32t+32) with 16-byte loads, and feeds them to the 8 k-steps of
 *     16 as columns {32t+4s .. 32t+4s+3} for step s. This is a fixed permutation of k inside the
 *     chunk (the dot product does not care about the order) chosen so that the A fragment
 *     (k = 2t, 2t+1, 2t+8, 2t+9 for lane t) is contiguous in memory; the activation B fragment
 *     uses the same permutation, so its lane reads 8 consecutive activations (16 bytes) every
 *     second step (4 at a time where rows are not 16-byte aligned).
 *     The codes are decoded in registers straight into the A fragments (Marlin's idea, without
 *     its offline weight reshuffle: the layout stays the CPU one): fp8 by the hardware pair
 *     conversion, nf4 by one shared-memory lookup per code byte in a per-lane table of 16-bit
 *     value pairs, then one 16-bit multiply by the block absmax (F::load_pairs).
 *
 * Shapes not aligned for vector loads (cols % 32 != 0, ldx % 8 != 0: tests, tiny models) run the
 * same kernels with bounds-checked byte loads (VEC = false); past the last column the codes read
 * as zero weights and the activations as 0, so nothing beyond a row is read. */
#ifndef ECOCOMPUTE_CUDA_KERNELS_QUANT_CUH
#define ECOCOMPUTE_CUDA_KERNELS_QUANT_CUH

#include "kernels_quant_launch.cuh"

template <class F, typename T, int MODE>
static cudaError_t ec_qlaunch_mode(const ec_cuda_packed_weight &w, const T *x, int ldx, int batch,
                                   void *y, int ldy, const ec_cuda_qsplit *split,
                                   const ec_qcarry_args &qc, cudaStream_t stream)
{
    /* 16-byte loads need rows of codes and of activations on 16-byte boundaries (a carried
     * norm's row: checked by ec_cuda_packed_linear_fused). */
    bool vec = w.cols % 32 == 0 && (ldx % 8 == 0 || qc.sumsq);
    return vec ? ec_qlaunch_mma<F, T, MODE, true>(w, x, ldx, batch, y, ldy, split, qc, stream)
               : ec_qlaunch_mma<F, T, MODE, false>(w, x, ldx, batch, y, ldy, split, qc, stream);
}

/* The fused linear of format F: dtype and mode dispatch, launch check. */
template <class F>
static int ec_qlinear_fused_format(ec_cuda_dtype t, ec_gemv_mode mode,
                                   const ec_cuda_packed_weight *w, const void *x, int ldx,
                                   int batch, void *y, int ldy, const ec_cuda_qsplit *split,
                                   const ec_cuda_qcarry *carry, cudaStream_t stream)
{
    const ec_cuda_norm *n = carry ? carry->norm : NULL;
    if (!F::CARRY_NORM && carry && (carry->sumsq_out || n))
        return ec_set_error("fused %s linear: the format does not carry the norm",
                            ec_precision_name(w->prec));
    ec_qcarry_args qc = {carry ? carry->sumsq_out : NULL, n ? n->x : NULL, n ? n->w : NULL,
                         n ? n->sumsq : NULL, n ? n->eps : 0.0f};
    return ec_dispatch_dtype(t, [&](auto tag) {
        typedef decltype(tag) T;
        const T *xt = (const T *)x;
        cudaError_t e =
            mode == EC_GEMV_STORE
                ? ec_qlaunch_mode<F, T, EC_GEMV_STORE>(*w, xt, ldx, batch, y, ldy, split, qc,
                                                       stream)
            : mode == EC_GEMV_ADD
                ? ec_qlaunch_mode<F, T, EC_GEMV_ADD>(*w, xt, ldx, batch, y, ldy, split, qc, stream)
                : ec_qlaunch_mode<F, T, EC_GEMV_SILU_MUL>(*w, xt, ldx, batch, y, ldy, split, qc,
                                                          stream);
        EC_CUDA_TRY(e, "launch of fused %s linear (batch %d, %d x %d, mode %d)",
                    ec_precision_name(w->prec), batch, w->rows, w->cols, (int)mode);
        return 0;
    });
}

#endif
