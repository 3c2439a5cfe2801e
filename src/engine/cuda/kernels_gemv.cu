/* kernels_gemv.cu — the decode GEMV for batches of 1 to EC_CUDA_GEMV_MAX_BATCH sequences.
 *
 * Decode is bound by reading the weights, so the kernel streams each weight byte exactly once
 * for the whole batch and keeps HBM busy:
 *   - one warp owns two output rows (two independent load streams per lane), a 256-thread block
 *     holds 8 warps, and the grid is rows/16 blocks, enough to fill every SM for real shapes;
 *   - each lane issues 16-byte loads (8 weights) with the evict-first hint (__ldcs) so the weights
 *     do not push the activation vector out of L1; 4 loads per row (8 per lane) are in flight
 *     before the first use, the first 8 before waiting for the previous kernel
 *     (ec_stream_rows);
 *   - the activations x [batch][cols] are read through the read-only cache (every warp reads the
 *     same x, so it is served from L1/L2, not HBM);
 *   - products are accumulated in fp32 and reduced with warp shuffles; the epilogue stores,
 *     adds into the fp32 residual stream, or applies SiLU(gate)·up for the fused gate/up weight
 *     (the warp's two rows are then gate row r and up row r). */
#include "cuda_check.h"
#include "kernels_common.cuh"

enum { GEMV_WARPS = 8, GEMV_UNROLL = 4 };

template <typename T, int B, int MODE>
__global__ void __launch_bounds__(GEMV_WARPS * 32)
    gemv_kernel(const T *__restrict__ w, const T *__restrict__ x, int rows, int cols, void *y,
                int ldy)
{
    int warp = blockIdx.x * GEMV_WARPS + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    int r0 = MODE == EC_GEMV_SILU_MUL ? warp : 2 * warp;
    if (r0 >= rows) return; /* warp-uniform: no shuffle below loses a partner */
    int r1 = MODE == EC_GEMV_SILU_MUL ? warp + rows : (r0 + 1 < rows ? r0 + 1 : r0);
    const uint4 *w0 = reinterpret_cast<const uint4 *>(w + (size_t)r0 * cols);
    const uint4 *w1 = reinterpret_cast<const uint4 *>(w + (size_t)r1 * cols);
    const uint4 *xv = reinterpret_cast<const uint4 *>(x);
    int n16 = cols / 8; /* 16-byte chunks per row */

    float acc0[B], acc1[B];
#pragma unroll
    for (int b = 0; b < B; b++) acc0[b] = acc1[b] = 0.0f;
    ec_stream_rows<GEMV_UNROLL, uint4>(
        n16,
        [&](int k, uint4 &a, uint4 &c) {
            a = __ldcs(w0 + k);
            c = __ldcs(w1 + k);
        },
        [] { ec_wait_inputs(); }, /* x and y belong to the step (see ec_launch) */
        [&](int k, const uint4 &a, const uint4 &c) {
#pragma unroll
            for (int b = 0; b < B; b++) {
                uint4 xb = __ldg(xv + (size_t)b * n16 + k);
                acc0[b] += ec_dot8<T>(a, xb);
                acc1[b] += ec_dot8<T>(c, xb);
            }
        });
#pragma unroll
    for (int b = 0; b < B; b++) {
        acc0[b] = ec_warp_sum(acc0[b]);
        acc1[b] = ec_warp_sum(acc1[b]);
    }
    /* Lane b writes sequence b's outputs (registers are indexed by unrolled constants only). */
#pragma unroll
    for (int b = 0; b < B; b++) {
        if (lane == b) ec_gemv_write<T, MODE>(y, ldy, b, r0, r1, acc0[b], acc1[b]);
    }
}

template <typename T, int MODE>
static cudaError_t launch_mode(int batch, const T *w, const T *x, int rows, int cols, void *y, int ldy,
                        cudaStream_t stream)
{
    int warps = MODE == EC_GEMV_SILU_MUL ? rows : (rows + 1) / 2;
    dim3 grid((unsigned)((warps + GEMV_WARPS - 1) / GEMV_WARPS)), block(GEMV_WARPS * 32);
    switch (batch) {
    case 1: return ec_launch(gemv_kernel<T, 1, MODE>, grid, block, 0, stream, w, x, rows, cols, y, ldy);
    case 2: return ec_launch(gemv_kernel<T, 2, MODE>, grid, block, 0, stream, w, x, rows, cols, y, ldy);
    case 3: return ec_launch(gemv_kernel<T, 3, MODE>, grid, block, 0, stream, w, x, rows, cols, y, ldy);
    case 4: return ec_launch(gemv_kernel<T, 4, MODE>, grid, block, 0, stream, w, x, rows, cols, y, ldy);
    case 5: return ec_launch(gemv_kernel<T, 5, MODE>, grid, block, 0, stream, w, x, rows, cols, y, ldy);
    case 6: return ec_launch(gemv_kernel<T, 6, MODE>, grid, block, 0, stream, w, x, rows, cols, y, ldy);
    case 7: return ec_launch(gemv_kernel<T, 7, MODE>, grid, block, 0, stream, w, x, rows, cols, y, ldy);
    default: return ec_launch(gemv_kernel<T, 8, MODE>, grid, block, 0, stream, w, x, rows, cols, y, ldy);
    }
}

static_assert(EC_CUDA_GEMV_MAX_BATCH == 8, "launch_mode instantiates batches 1..8");

extern "C" int ec_cuda_gemv(ec_cuda_dtype t, ec_gemv_mode mode, const void *w, const void *x,
                            int batch, int rows, int cols, void *y, int ldy, cudaStream_t stream)
{
    if (batch < 1 || batch > EC_CUDA_GEMV_MAX_BATCH || cols % 8 != 0 || rows < 1 || ldy < rows)
        return ec_set_error("GEMV: unsupported shape batch %d, rows %d, cols %d (needs batch 1-%d, "
                            "cols a multiple of 8)", batch, rows, cols, EC_CUDA_GEMV_MAX_BATCH);
    return ec_dispatch_dtype(t, [&](auto tag) {
        typedef decltype(tag) T;
        const T *wt = (const T *)w, *xt = (const T *)x;
        cudaError_t e =
            mode == EC_GEMV_STORE ? launch_mode<T, EC_GEMV_STORE>(batch, wt, xt, rows, cols, y, ldy, stream)
            : mode == EC_GEMV_ADD ? launch_mode<T, EC_GEMV_ADD>(batch, wt, xt, rows, cols, y, ldy, stream)
                                  : launch_mode<T, EC_GEMV_SILU_MUL>(batch, wt, xt, rows, cols, y, ldy, stream);
        EC_CUDA_TRY(e, "launch of GEMV kernel (batch %d, %d x %d)", batch, rows, cols);
        return 0;
    });
}
