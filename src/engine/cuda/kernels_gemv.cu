/* kernels_gemv.cu — the decode GEMV for batches of 1 to EC_CUDA_GEMV_MAX_BATCH sequences.
 *
 * Decode is bound by reading the weights, so the kernel streams each weight byte exactly once
 * for the whole batch and keeps HBM busy:
 *   - a warp works on two output rows at a time (two independent load streams per lane), a
 *     256-thread block holds 8 warps;
 *   - each lane issues 16-byte loads (8 weights) with the evict-first hint (__ldcs) so the weights
 *     do not push the activation vector out of L1; 4 loads per row (8 per lane) are in flight
 *     before the first use, the first 8 before waiting for the previous kernel; each warp streams
 *     its share of the row pairs back to back (ec_stream_pairs), and the grid is one wave;
 *   - the activations x [batch][cols] are read through the read-only cache (every warp reads the
 *     same x, so it is served from L1/L2, not HBM); at batch 1 the kernel may instead compute x
 *     itself, the RMSNorm of the residual stream (ec_cuda_norm), into shared memory: each block
 *     normalises the row once after the wait for the previous kernel, while its first weight
 *     loads travel, and the step loses the norm kernel's launch and round trip;
 *   - products are accumulated in fp32 and reduced with warp shuffles; the epilogue stores,
 *     adds into the fp32 residual stream, or applies SiLU(gate)·up for the fused gate/up weight
 *     (the warp's two rows are then gate row r and up row r). */
#include "cuda_check.h"
#include "kernels_common.cuh"
#include "kernels_norm.cuh"

enum { GEMV_WARPS = 8, GEMV_UNROLL = 4 };

/* NORM (B = 1): x is not read; the block normalises `norm`'s row into s_x (cols 16-bit values,
 * dynamic shared memory) instead. */
template <typename T, int B, int MODE, bool NORM>
__global__ void __launch_bounds__(GEMV_WARPS * 32)
    gemv_kernel(const T *__restrict__ w, const T *__restrict__ x, const ec_cuda_norm norm,
                int rows, int cols, void *y, int ldy)
{
    static_assert(!NORM || B == 1, "the fused norm serves one token row");
    extern __shared__ uint4 s_x[]; /* NORM: [cols / 8] */
    __shared__ float s_scratch[NORM ? 32 : 1];
    const uint4 *wv = reinterpret_cast<const uint4 *>(w);
    const uint4 *xv = NORM ? s_x : reinterpret_cast<const uint4 *>(x);
    int n16 = cols / 8, lane = threadIdx.x & 31; /* 16-byte chunks per row */

    float acc0[B], acc1[B];
#pragma unroll
    for (int b = 0; b < B; b++) acc0[b] = acc1[b] = 0.0f;
    ec_stream_pairs<GEMV_UNROLL, uint4>(
        ec_gemv_pairs(MODE, rows), n16,
        [&](int p, int k, uint4 &a, uint4 &c) { ec_load_pair_chunk<MODE>(wv, rows, n16, p, k, a, c); },
        [&] {
            ec_wait_inputs(false); /* x and y belong to the step (see ec_launch) */
            if constexpr (NORM)
                ec_rmsnorm_row_to_shared<T, GEMV_WARPS * 32>(norm.x, norm.w, cols, norm.eps,
                                                            reinterpret_cast<T *>(s_x), cols,
                                                            s_scratch);
        },
        [&](int, int k, const uint4 &a, const uint4 &c) {
#pragma unroll
            for (int b = 0; b < B; b++) {
                uint4 xb = NORM ? xv[k] : __ldg(xv + (size_t)b * n16 + k);
                acc0[b] += ec_dot8<T>(a, xb);
                acc1[b] += ec_dot8<T>(c, xb);
            }
        },
        [&](int p) {
            int2 r = ec_gemv_pair_rows<MODE>(p, rows);
#pragma unroll
            for (int b = 0; b < B; b++) {
                float v0 = ec_warp_sum(acc0[b]), v1 = ec_warp_sum(acc1[b]);
                /* Lane b writes sequence b (registers are indexed by unrolled constants only). */
                if (lane == b) ec_gemv_write<T, MODE>(y, ldy, b, r.x, r.y, v0, v1);
                acc0[b] = acc1[b] = 0.0f;
            }
        });
}

template <typename T, int B, int MODE, bool NORM>
static cudaError_t launch_batch(const T *w, const T *x, const ec_cuda_norm &norm, int rows,
                                int cols, void *y, int ldy, cudaStream_t stream)
{
    constexpr auto kernel = gemv_kernel<T, B, MODE, NORM>;
    /* residency asked once per kernel: with the widest row's shared memory */
    constexpr size_t smem_max = NORM ? EC_CUDA_NORM_FUSED_MAX_COLS * sizeof(T) : 0;
    unsigned blocks = ec_stream_blocks<kernel>(ec_gemv_pairs(MODE, rows), GEMV_WARPS,
                                               GEMV_WARPS * 32, smem_max);
    return ec_launch(kernel, dim3(blocks), dim3(GEMV_WARPS * 32), NORM ? cols * sizeof(T) : 0,
                     stream, w, x, norm, rows, cols, y, ldy);
}

template <typename T, int MODE>
static cudaError_t launch_mode(int batch, const T *w, const T *x, const ec_cuda_norm *norm,
                               int rows, int cols, void *y, int ldy, cudaStream_t stream)
{
    ec_cuda_norm none = {NULL, 0, NULL, 0.0f};
    if (norm) return launch_batch<T, 1, MODE, true>(w, x, *norm, rows, cols, y, ldy, stream);
#define EC_GEMV_CASE(B)                                                                            \
    case B:                                                                                        \
        return launch_batch<T, B, MODE, false>(w, x, none, rows, cols, y, ldy, stream);
    switch (batch) {
        EC_GEMV_CASE(1)
        EC_GEMV_CASE(2)
        EC_GEMV_CASE(3)
        EC_GEMV_CASE(4)
        EC_GEMV_CASE(5)
        EC_GEMV_CASE(6)
        EC_GEMV_CASE(7)
    default:
        EC_GEMV_CASE(8)
    }
#undef EC_GEMV_CASE
}

static_assert(EC_CUDA_GEMV_MAX_BATCH == 8, "launch_mode instantiates batches 1..8");

extern "C" int ec_cuda_gemv(ec_cuda_dtype t, ec_gemv_mode mode, const void *w, const void *x,
                            const ec_cuda_norm *norm, int batch, int rows, int cols, void *y,
                            int ldy, cudaStream_t stream)
{
    if (batch < 1 || batch > EC_CUDA_GEMV_MAX_BATCH || cols % 8 != 0 || rows < 1 || ldy < rows)
        return ec_set_error("GEMV: unsupported shape batch %d, rows %d, cols %d (needs batch 1-%d, "
                            "cols a multiple of 8)", batch, rows, cols, EC_CUDA_GEMV_MAX_BATCH);
    if (norm && (batch != 1 || cols > EC_CUDA_NORM_FUSED_MAX_COLS))
        return ec_set_error("GEMV: the fused RMSNorm needs batch 1 and at most %d columns "
                            "(batch %d, cols %d)", EC_CUDA_NORM_FUSED_MAX_COLS, batch, cols);
    return ec_dispatch_dtype(t, [&](auto tag) {
        typedef decltype(tag) T;
        const T *wt = (const T *)w, *xt = (const T *)x;
        cudaError_t e =
            mode == EC_GEMV_STORE
                ? launch_mode<T, EC_GEMV_STORE>(batch, wt, xt, norm, rows, cols, y, ldy, stream)
            : mode == EC_GEMV_ADD
                ? launch_mode<T, EC_GEMV_ADD>(batch, wt, xt, norm, rows, cols, y, ldy, stream)
                : launch_mode<T, EC_GEMV_SILU_MUL>(batch, wt, xt, norm, rows, cols, y, ldy, stream);
        EC_CUDA_TRY(e, "launch of GEMV kernel (batch %d, %d x %d%s)", batch, rows, cols,
                    norm ? ", RMSNorm fused" : "");
        return 0;
    });
}
