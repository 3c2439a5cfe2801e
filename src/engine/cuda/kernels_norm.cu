/* kernels_norm.cu — RMSNorm from the fp32 residual stream to the 16-bit input of the next linear
 * layer. The residual add itself happens in the epilogue of the o-proj and down-proj linears
 * (they accumulate into the fp32 stream), so this kernel is the other half of the fused
 * "add + norm": one read of the stream, one 16-bit write. */
#include "cuda_check.h"
#include "kernels_common.cuh"

enum { NORM_THREADS = 512, NORM_HELD = 16 }; /* rows up to 8192 wide stay in registers */

/* One block per row. A decode step normalises a single row, so the kernel is pure latency: each
 * thread issues all its loads at once and keeps the values in registers for the scaling pass
 * (rows wider than NORM_THREADS * NORM_HELD read the rest again from L1/L2). */
template <typename T>
__global__ void __launch_bounds__(NORM_THREADS)
    rmsnorm_kernel(const float *x, size_t x_stride, const float *w, int dim, float eps, T *out)
{
    __shared__ float scratch[32];
    ec_wait_inputs();
    const float *row = x + blockIdx.x * x_stride;
    float held[NORM_HELD], ss = 0.0f;
#pragma unroll
    for (int i = 0; i < NORM_HELD; i++) {
        int c = threadIdx.x + i * NORM_THREADS;
        held[i] = c < dim ? row[c] : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < NORM_HELD; i++) ss = fmaf(held[i], held[i], ss);
    for (int c = threadIdx.x + NORM_HELD * NORM_THREADS; c < dim; c += NORM_THREADS)
        ss = fmaf(row[c], row[c], ss);
    ss = ec_block_reduce<false>(ss, scratch);
    float inv = rsqrtf(ss / (float)dim + eps);
    T *o = out + (size_t)blockIdx.x * dim;
#pragma unroll
    for (int i = 0; i < NORM_HELD; i++) {
        int c = threadIdx.x + i * NORM_THREADS;
        if (c < dim) o[c] = ec_from_f32<T>(held[i] * inv * w[c]);
    }
    for (int c = threadIdx.x + NORM_HELD * NORM_THREADS; c < dim; c += NORM_THREADS)
        o[c] = ec_from_f32<T>(row[c] * inv * w[c]);
}

extern "C" int ec_cuda_rmsnorm(ec_cuda_dtype t, const float *x, size_t x_stride, const float *w,
                               int rows, int dim, float eps, void *out, cudaStream_t stream)
{
    return ec_dispatch_dtype(t, [&](auto tag) {
        typedef decltype(tag) T;
        EC_CUDA_TRY(ec_launch(rmsnorm_kernel<T>, dim3(rows), dim3(NORM_THREADS), 0, stream, x,
                              x_stride, w, dim, eps, (T *)out),
                    "launch of rmsnorm kernel (%d rows x %d)", rows, dim);
        return 0;
    });
}
