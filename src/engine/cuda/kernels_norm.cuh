/* kernels_norm.cuh — RMSNorm of one row by a whole block, shared by the RMSNorm kernel and the
 * int8 activation prepare that normalises its input itself (kernels_int8_quantize.cu). */
#ifndef ECOCOMPUTE_CUDA_KERNELS_NORM_CUH
#define ECOCOMPUTE_CUDA_KERNELS_NORM_CUH

#include "kernels_common.cuh"

/* Both callers run blocks of EC_NORM_THREADS threads, so that a row's sum of squares is added
 * in the same order, and the prepare's normalised row is bit-identical to the kernel's. */
enum { EC_NORM_THREADS = 1024, EC_NORM_HELD = 8 }; /* rows up to 8192 wide stay in registers */

/* The norm weights of the columns a thread normalises from registers (t, t + EC_NORM_THREADS,
 * ...: the first EC_NORM_HELD), 0 past dim. Weights are no step data (see ec_launch), so a
 * kernel loads them before ec_wait_inputs() and the load overlaps the previous kernel. */
__device__ __forceinline__ void ec_rmsnorm_held_w(const float *w, int dim, float held_w[EC_NORM_HELD])
{
#pragma unroll
    for (int i = 0; i < EC_NORM_HELD; i++) {
        int c = threadIdx.x + i * EC_NORM_THREADS;
        held_w[i] = c < dim ? w[c] : 0.0f;
    }
}

/* out [r][dim] (16-bit, rows ldo apart) = rows[r] [dim] * w [dim] / sqrt(mean(rows[r]^2) + eps)
 * for the n <= N rows rows + r * stride, by a block of EC_NORM_THREADS threads: thread t takes
 * columns t, t + EC_NORM_THREADS, ... of every row, and one block reduction serves all rows (a
 * row's arithmetic does not depend on N or n). With N = 1 (a decode step's one row: pure
 * latency) the first EC_NORM_HELD columns stay in registers between the two passes, so all
 * loads go out at once; otherwise, and for wider rows, the second pass reads them again from
 * L1/L2. held_w: ec_rmsnorm_held_w of w. scratch holds N x 32 floats. Every thread of the block
 * calls it. */
template <typename T, int N>
__device__ __forceinline__ void ec_rmsnorm_rows(const float *rows, size_t stride, int n,
                                                const float *w,
                                                const float held_w[EC_NORM_HELD], int dim,
                                                float eps, T *out, size_t ldo, float *scratch)
{
    constexpr int nt = EC_NORM_THREADS, HELD = EC_NORM_HELD;
    float held[N == 1 ? HELD : 1], ss[N];
#pragma unroll
    for (int r = 0; r < N; r++) {
        ss[r] = 0.0f;
        if (r >= n) continue;
        const float *row = rows + r * stride;
#pragma unroll
        for (int i = 0; i < HELD; i++) {
            int c = threadIdx.x + i * nt;
            float v = c < dim ? row[c] : 0.0f;
            if constexpr (N == 1) held[i] = v;
            ss[r] = fmaf(v, v, ss[r]);
        }
        for (int c = threadIdx.x + HELD * nt; c < dim; c += nt) ss[r] = fmaf(row[c], row[c], ss[r]);
    }
    ec_block_reduce_n<false, N>(ss, scratch);
#pragma unroll
    for (int r = 0; r < N; r++) {
        if (r >= n) break;
        const float *row = rows + r * stride;
        T *o = out + r * ldo;
        float inv = rsqrtf(ss[r] / (float)dim + eps);
#pragma unroll
        for (int i = 0; i < HELD; i++) {
            int c = threadIdx.x + i * nt;
            float v;
            if constexpr (N == 1) v = held[i];
            else v = c < dim ? row[c] : 0.0f;
            if (c < dim) o[c] = ec_from_f32<T>(v * inv * held_w[i]);
        }
        for (int c = threadIdx.x + HELD * nt; c < dim; c += nt)
            o[c] = ec_from_f32<T>(row[c] * inv * w[c]);
    }
}

#endif
