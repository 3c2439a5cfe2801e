/* kernels_gemv.cu — the decode GEMV (ec_cuda_gemv) for 1 to EC_CUDA_GEMV_MAX_BATCH token rows:
 * one row on the CUDA cores in fp32 (this file's kernel), 2 or more on tensor cores
 * (kernels_gemv_mma.cu).
 *
 * Decode is bound by reading the weights, so the kernel streams each weight byte exactly once
 * and keeps HBM busy:
 *   - a warp works on two output rows at a time (two independent load streams per lane), a
 *     256-thread block holds 8 warps; a weight of few rows (o, down) gives each row pair to 2,
 *     4 or 8 warps, which split its columns and add their sums at the end (ec_gemv_split): a
 *     grid of one warp per pair held too few warps to stream at the HBM rate;
 *   - each lane issues 16-byte loads (8 weights) with the evict-first hint (__ldcs) so the weights
 *     do not push the activation vector out of L1; 4 loads per row (8 per lane) are in flight
 *     before the first use, the first 8 before waiting for the previous kernel; each warp streams
 *     its share of the row pairs back to back (ec_stream_pairs), and the grid is one wave;
 *   - the activations x [cols] are read through the read-only cache (every warp reads the
 *     same x, so it is served from L1/L2, not HBM);
 *   - products are accumulated in fp32 and reduced with warp shuffles; the epilogue stores,
 *     adds into the fp32 residual stream, or applies SiLU(gate)·up for the fused gate/up weight
 *     (the warp's two rows are then gate row r and up row r). */
#include "common/cuda_check.h"
#include "kernels_common.cuh"

enum { GEMV_WARPS = 8, GEMV_UNROLL = 4 };

template <typename T, int MODE>
__global__ void __launch_bounds__(GEMV_WARPS * 32)
    gemv_kernel(const T *__restrict__ w, const T *__restrict__ x, int rows, int cols, void *y,
                bool release, int ks)
{
    __shared__ float2 s_part[GEMV_WARPS]; /* ks > 1: each warp's sums of its pair's two rows */
    const uint4 *wv = reinterpret_cast<const uint4 *>(w);
    const uint4 *xv = reinterpret_cast<const uint4 *>(x);
    int n16 = cols / 8, lane = threadIdx.x & 31; /* 16-byte chunks per row */

    float acc0 = 0.0f, acc1 = 0.0f;
    ec_stream_pairs<GEMV_UNROLL, uint4>(
        ec_gemv_pairs(MODE, rows), n16, ks,
        [&](int p, int k, uint4 &a, uint4 &c) {
            ec_load_pair_chunk<MODE>(wv, rows, n16, p, k, a, c);
        },
        [&] { ec_wait_inputs(release); }, /* x and y belong to the step (see ec_launch) */
        [&](int, int k, const uint4 &a, const uint4 &c) {
            uint4 xk = __ldg(xv + k);
            acc0 += ec_dot8<T>(a, xk);
            acc1 += ec_dot8<T>(c, xk);
        },
        [&](int p) {
            int2 r = ec_gemv_pair_rows<MODE>(p, rows);
            float v0 = ec_warp_sum(acc0), v1 = ec_warp_sum(acc1);
            acc0 = acc1 = 0.0f;
            if (ks > 1) { /* the pair's ks warps meet; the first adds their sums in part order */
                int wib = threadIdx.x >> 5, first = wib - wib % ks, id = 1 + wib / ks;
                if (lane == 0) s_part[wib] = make_float2(v0, v1);
                ec_named_barrier(id, ks * 32);
                if (wib == first)
                    for (int q = 1; q < ks; q++) {
                        v0 += s_part[first + q].x;
                        v1 += s_part[first + q].y;
                    }
                ec_named_barrier(id, ks * 32); /* s_part is free for the next pair */
                if (wib != first) return;
            }
            if (lane == 0) ec_gemv_write<T, MODE>(y, 0, 0, r.x, r.y, v0, v1);
        });
}

template <typename T, int MODE>
static cudaError_t launch_mode(const T *w, const T *x, int rows, int cols, void *y,
                               cudaStream_t stream)
{
    int pairs = ec_gemv_pairs(MODE, rows);
    /* A stored output is the QKV row or the head's logits: the attention's (or the argmax's)
     * blocks may launch at this GEMV's start and wait resident (0.65 % faster fp16 steps on an
     * H100); the other GEMVs release at their end. */
    bool release = MODE == EC_GEMV_STORE;
    int ks = ec_gemv_split(pairs, (cols / 8 + 31) / 32);
    unsigned blocks =
        ec_stream_blocks<gemv_kernel<T, MODE>>(pairs * ks, GEMV_WARPS, GEMV_WARPS * 32);
    return ec_launch(gemv_kernel<T, MODE>, dim3(blocks), dim3(GEMV_WARPS * 32), 0, stream, w, x,
                     rows, cols, y, release, ks);
}

extern "C" int ec_cuda_gemv(ec_cuda_dtype t, ec_gemv_mode mode, const void *w, const void *x,
                            int batch, int rows, int cols, void *y, int ldy, cudaStream_t stream)
{
    if (batch < 1 || batch > EC_CUDA_GEMV_MAX_BATCH || cols % 8 != 0 || rows < 1 || ldy < rows)
        return ec_set_error("GEMV: unsupported shape batch %d, rows %d, cols %d (needs batch 1-%d, "
                            "cols a multiple of 8)", batch, rows, cols, EC_CUDA_GEMV_MAX_BATCH);
    if (batch > 1) return ec_cuda_gemv_mma(t, mode, w, x, batch, rows, cols, y, ldy, stream);
    return ec_dispatch_dtype(t, [&](auto tag) {
        typedef decltype(tag) T;
        const T *wt = (const T *)w, *xt = (const T *)x;
        cudaError_t e =
            mode == EC_GEMV_STORE ? launch_mode<T, EC_GEMV_STORE>(wt, xt, rows, cols, y, stream)
            : mode == EC_GEMV_ADD ? launch_mode<T, EC_GEMV_ADD>(wt, xt, rows, cols, y, stream)
                                  : launch_mode<T, EC_GEMV_SILU_MUL>(wt, xt, rows, cols, y, stream);
        EC_CUDA_TRY(e, "launch of GEMV kernel (batch 1, %d x %d)", rows, cols);
        return 0;
    });
}
