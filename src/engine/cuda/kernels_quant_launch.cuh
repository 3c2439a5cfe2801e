/* kernels_quant_launch.cuh — the launch policy of the fused quantized linear: which kernel
 * (qmma_kernel or qgemm_kernel), row tiles, token tiles, CTAs per SM and column split a weight
 * and batch get, and whether qgemm_kernel runs on wgmma. */
#ifndef ECOCOMPUTE_CUDA_KERNELS_QUANT_LAUNCH_CUH
#define ECOCOMPUTE_CUDA_KERNELS_QUANT_LAUNCH_CUH

#include "kernels_qmma.cuh"
#include "kernels_qgemm.cuh"

/* Row groups of MT row tiles (16 weight rows, 8 SiLU·mul features each) of a weight. */
template <int MODE> static int ec_qmma_groups(const ec_cuda_packed_weight &w, int mt)
{
    int out_rows = MODE == EC_GEMV_SILU_MUL ? w.rows / 2 : w.rows;
    int per_group = mt * (MODE == EC_GEMV_SILU_MUL ? 8 : 16);
    return (out_rows + per_group - 1) / per_group;
}

/* Up to 16 token rows: 8 warps split the columns, each with F::mma_stages(MT, NT) chunks in
 * flight, in CTAs bounded for CTAS per SM. */
template <class F, typename T, int MT, int NT, int MODE, bool VEC, bool NORM, int CTAS>
static cudaError_t ec_qlaunch_qmma(const ec_cuda_packed_weight &w, const T *x, int ldx, int batch,
                                   void *y, int ldy, const ec_qcarry_args &qc, cudaStream_t stream)
{
    constexpr int KS = 8;
    constexpr auto kernel =
        qmma_kernel<F, T, MT, NT, KS, F::mma_stages(MT, NT), MODE, VEC, NORM, CTAS>;
    constexpr size_t most = F::PAIR_BYTES + (NORM ? EC_CUDA_QCARRY_MAX_COLS * sizeof(T) : 0);
    cudaError_t e = ec_smem_optin<kernel>(most);
    if (e != cudaSuccess) return e;
    size_t smem = F::PAIR_BYTES + (NORM ? (size_t)w.cols * sizeof(T) : 0);
    int groups = ec_qmma_groups<MODE>(w, MT);
    return ec_launch(kernel, dim3(ec_stream_blocks<kernel>(groups, 1, KS * 32, smem)),
                     dim3(KS * 32), smem, stream, w, x, ldx, batch, y, ldy, qc);
}

/* A kernel of one token tile (NT 1) is bounded to F::mma_ctas(MT, batch == 1) CTAs per SM, one
 * of two token tiles not at all. A format whose bound does not depend on the batch compiles one
 * kernel for both. */
template <class F, typename T, int MT, int NT, int MODE, bool VEC, bool NORM = false>
static cudaError_t ec_qlaunch_mma_nt(const ec_cuda_packed_weight &w, const T *x, int ldx,
                                     int batch, void *y, int ldy, const ec_qcarry_args &qc,
                                     cudaStream_t stream)
{
    constexpr int at_batch1 = NT == 1 ? F::mma_ctas(MT, true) : 0;
    constexpr int above = NT == 1 ? F::mma_ctas(MT, false) : 0;
    return batch == 1
               ? ec_qlaunch_qmma<F, T, MT, NT, MODE, VEC, NORM, at_batch1>(w, x, ldx, batch, y,
                                                                           ldy, qc, stream)
               : ec_qlaunch_qmma<F, T, MT, NT, MODE, VEC, NORM, above>(w, x, ldx, batch, y, ldy,
                                                                       qc, stream);
}

/* qgemm_kernel over `groups` x 8 x NT token rows per launch (token group blockIdx.y; more in
 * launches of 64): runs of per_cta units for a one-wave grid, longer where the split scratch holds
 * fewer CTAs, whole row blocks without one. A run is at least QGEMM_MIN_RUN chunks: a partial
 * (32 KB at 64 tokens) then follows at least as many bytes of nf4 weights, and a row block has at
 * most cols / 512 partials for its last CTA to add one after another (with runs of one chunk,
 * TinyLlama's 2048-column weights gave 16 per block, whose traffic and serial sum outweighed the
 * weights). */
enum { QGEMM_MIN_RUN = 4, QGEMM_MAX_PARTIALS = 4 };
template <class F, typename T, int NT, int MODE, bool VEC, bool WG>
static int ec_qgemm_grid(const ec_cuda_packed_weight &w, const ec_cuda_qsplit *split, int groups,
                         int *per_cta)
{
    constexpr auto kernel = qgemm_kernel<F, T, NT, QGEMM_STAGES, MODE, VEC, WG>;
    constexpr int threads = ec_qgemm_cfg<WG>::WARPS * 32;
    int nchunks = (w.cols + QMMA_CHUNK - 1) / QMMA_CHUNK;
    int units = (w.rows + QGEMM_ROWS - 1) / QGEMM_ROWS * nchunks;
    *per_cta = nchunks;
    if (split && split->ctas > 0) {
        /* the CTAs of one group that a one-wave grid, and the scratch, hold */
        int wave =
            (int)ec_stream_blocks<kernel>(groups * units, 1, threads, F::PAIR_BYTES);
        int hold = split->ctas * (EC_CUDA_QMMA_MAX_BATCH / (8 * NT)) / groups;
        int run = (groups * units + wave - 1) / wave;
        if (run < (units + hold - 1) / hold) run = (units + hold - 1) / hold;
        *per_cta = run >= QGEMM_MIN_RUN ? run : nchunks < QGEMM_MIN_RUN ? nchunks : QGEMM_MIN_RUN;
    }
    return (units + *per_cta - 1) / *per_cta;
}

template <class F, typename T, int NT, int MODE, bool VEC, bool WG>
static cudaError_t ec_qlaunch_gemm_nt(const ec_cuda_packed_weight &w, const T *x, int ldx,
                                      int batch, void *y, int ldy, const ec_cuda_qsplit *split,
                                      int groups, cudaStream_t stream)
{
    constexpr auto kernel = qgemm_kernel<F, T, NT, QGEMM_STAGES, MODE, VEC, WG>;
    cudaError_t e = ec_smem_optin<kernel>(F::PAIR_BYTES);
    if (e != cudaSuccess) return e;
    int per_cta, grid = ec_qgemm_grid<F, T, NT, MODE, VEC, WG>(w, split, groups, &per_cta);
    ec_cuda_qsplit none = {NULL, NULL, 0};
    size_t y_elem = MODE == EC_GEMV_SILU_MUL ? sizeof(T) : sizeof(float);
    int per_launch = groups * 8 * NT;
    for (int b0 = 0; b0 < batch; b0 += per_launch) {
        int nb = batch - b0 < per_launch ? batch - b0 : per_launch;
        e = ec_launch(kernel, dim3((unsigned)grid, (unsigned)((nb + 8 * NT - 1) / (8 * NT))),
                      dim3(ec_qgemm_cfg<WG>::WARPS * 32), F::PAIR_BYTES, stream, w,
                      x + (size_t)b0 * ldx, ldx,
                      nb, (void *)((char *)y + (size_t)b0 * ldy * y_elem), ldy,
                      split ? *split : none, per_cta);
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}

/* qgemm_kernel over up to 8 x NT token rows: one group of NT column tiles, or two of NT / 2, each
 * decoding the weights again, where one group's grid would leave SMs without a CTA (narrow
 * weights: TinyLlama's qkv and o make 64-80 of them at 64 tokens) or a row block would collect
 * more than QGEMM_MAX_PARTIALS partials (at 64 tokens o and down of the 7B shapes, down of the
 * small ones: 8-15) for its last CTA to add one after another: the halves' partials are half the
 * bytes, and their runs are longer. Taken at 33-64 tokens only:
 * at 17-32, groups of 16 tokens made nf4 6-16 % slower per step (its decode, then paid once per
 * 16 tokens, outweighs the parallelism; fp8 gained 2-5 %). */
template <class F, typename T, int NT, int MODE, bool VEC, bool WG>
static cudaError_t ec_qlaunch_gemm(const ec_cuda_packed_weight &w, const T *x, int ldx, int batch,
                                   void *y, int ldy, const ec_cuda_qsplit *split,
                                   cudaStream_t stream)
{
    int per_cta, grid = ec_qgemm_grid<F, T, NT, MODE, VEC, WG>(w, split, 1, &per_cta);
    int nchunks = (w.cols + QMMA_CHUNK - 1) / QMMA_CHUNK;
    if (grid < ec_sm_count() || (nchunks + per_cta - 1) / per_cta > QGEMM_MAX_PARTIALS)
        return ec_qlaunch_gemm_nt<F, T, NT / EC_CUDA_QSPLIT_GROUPS, MODE, VEC, WG>(
            w, x, ldx, batch, y, ldy, split, EC_CUDA_QSPLIT_GROUPS, stream);
    return ec_qlaunch_gemm_nt<F, T, NT, MODE, VEC, WG>(w, x, ldx, batch, y, ldy, split, 1,
                                                       stream);
}

/* Whether qgemm_kernel runs on wgmma: built for sm_90a (ECOCOMPUTE_CUDA_WGMMA, CMakeLists.txt),
 * where the code that runs is sm_90a (ec_code_features), unless a test asks for mma.sync
 * (ec_cuda_test_path_choice, read at every launch, so one process can run both kernels). */
static inline bool ec_qgemm_wgmma_usable()
{
#ifdef ECOCOMPUTE_CUDA_WGMMA
    if (ec_cuda_test_path_choice.qgemm_mma_sync) return false;
    return (ec_code_features() & EC_GPU_WGMMA) != 0;
#else
    return false;
#endif
}

/* Column tiles of 8 tokens: 1 or 2 of them in qmma_kernel (up to 16 token rows), 4 or 8 in
 * qgemm_kernel (up to 32, 64, and chunks of 64 above). */
template <class F, typename T, int MODE, bool VEC>
static cudaError_t ec_qlaunch_mma(const ec_cuda_packed_weight &w, const T *x, int ldx, int batch,
                                  void *y, int ldy, const ec_cuda_qsplit *split,
                                  const ec_qcarry_args &qc, cudaStream_t stream)
{
    if (batch <= 8) {
        /* Two row tiles per warp share each activation fragment; a weight with fewer such row
         * groups than the device has SMs (a CTA per group: TinyLlama's o and down have 64) takes
         * one, so that every SM streams, and so does every weight of a format whose policy
         * says so at batch 1 (F::ONE_ROW_TILE_AT_BATCH1). */
        bool narrow = (F::ONE_ROW_TILE_AT_BATCH1 && batch == 1) ||
                      ec_qmma_groups<MODE>(w, QMMA_MTILES) < ec_sm_count();
        if constexpr (F::CARRY_NORM && VEC && MODE != EC_GEMV_ADD)
            if (qc.sumsq) /* a carried norm's consumer (checked: batch 1) */
                return narrow ? ec_qlaunch_mma_nt<F, T, 1, 1, MODE, true, true>(
                                    w, x, ldx, batch, y, ldy, qc, stream)
                              : ec_qlaunch_mma_nt<F, T, QMMA_MTILES, 1, MODE, true, true>(
                                    w, x, ldx, batch, y, ldy, qc, stream);
        if (narrow)
            return ec_qlaunch_mma_nt<F, T, 1, 1, MODE, VEC>(w, x, ldx, batch, y, ldy, qc, stream);
        return ec_qlaunch_mma_nt<F, T, QMMA_MTILES, 1, MODE, VEC>(w, x, ldx, batch, y, ldy, qc,
                                                                  stream);
    }
    if (batch <= 16)
        return ec_qlaunch_mma_nt<F, T, QMMA_MTILES, 2, MODE, VEC>(w, x, ldx, batch, y, ldy, qc,
                                                                  stream);
    if (ec_qgemm_wgmma_usable()) {
        if (batch <= 32)
            return ec_qlaunch_gemm_nt<F, T, 4, MODE, VEC, true>(w, x, ldx, batch, y, ldy, split,
                                                                1, stream);
        return ec_qlaunch_gemm<F, T, 8, MODE, VEC, true>(w, x, ldx, batch, y, ldy, split, stream);
    }
    if (batch <= 32)
        return ec_qlaunch_gemm_nt<F, T, 4, MODE, VEC, false>(w, x, ldx, batch, y, ldy, split, 1,
                                                             stream);
    return ec_qlaunch_gemm<F, T, 8, MODE, VEC, false>(w, x, ldx, batch, y, ldy, split, stream);
}
static_assert(EC_CUDA_QMMA_MAX_BATCH == 64, "ec_qlaunch_gemm_nt's widest tile is 8 x 8 tokens");

#endif
