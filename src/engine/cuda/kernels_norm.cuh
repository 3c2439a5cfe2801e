/* kernels_norm.cuh — RMSNorm of one row by a whole block, shared by the RMSNorm kernel and the
 * int8 activation prepare that normalises its input itself (kernels_int8.cu). */
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

/* out [dim] (16-bit) = row [dim] * w [dim] / sqrt(mean(row^2) + eps), by a block of
 * EC_NORM_THREADS threads: thread t takes columns t, t + EC_NORM_THREADS, ...; the first
 * EC_NORM_HELD of them stay in registers between the two passes (a decode step normalises one
 * row, so this is pure latency: all loads go out at once), wider rows read the rest again from
 * L1/L2. held_w: ec_rmsnorm_held_w of w. scratch holds 32 floats. Every thread of the block
 * calls it. */
template <typename T>
__device__ __forceinline__ void ec_rmsnorm_row(const float *row, const float *w,
                                               const float held_w[EC_NORM_HELD], int dim,
                                               float eps, T *out, float *scratch)
{
    constexpr int n = EC_NORM_THREADS, HELD = EC_NORM_HELD;
    float held[HELD], ss = 0.0f;
#pragma unroll
    for (int i = 0; i < HELD; i++) {
        int c = threadIdx.x + i * n;
        held[i] = c < dim ? row[c] : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < HELD; i++) ss = fmaf(held[i], held[i], ss);
    for (int c = threadIdx.x + HELD * n; c < dim; c += n) ss = fmaf(row[c], row[c], ss);
    ss = ec_block_reduce<false>(ss, scratch);
    float inv = rsqrtf(ss / (float)dim + eps);
#pragma unroll
    for (int i = 0; i < HELD; i++) {
        int c = threadIdx.x + i * n;
        if (c < dim) out[c] = ec_from_f32<T>(held[i] * inv * held_w[i]);
    }
    for (int c = threadIdx.x + HELD * n; c < dim; c += n)
        out[c] = ec_from_f32<T>(row[c] * inv * w[c]);
}

#endif
