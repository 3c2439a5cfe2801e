/* kernels_norm.cu — RMSNorm from the fp32 residual stream to the 16-bit input of the next linear
 * layer. The residual add itself happens in the epilogue of the o-proj and down-proj linears
 * (they accumulate into the fp32 stream), so this kernel is the other half of the fused
 * "add + norm": one read of the stream, one 16-bit write. */
#include "cuda_check.h"
#include "kernels_common.cuh"

/* One block per row; the row is read twice (sum of squares, then scale), the second time from
 * L1/L2. */
template <typename T>
__global__ void rmsnorm_kernel(const float *x, size_t x_stride, const float *w, int dim, float eps,
                               T *out)
{
    __shared__ float scratch[32];
    const float *row = x + blockIdx.x * x_stride;
    float ss = 0.0f;
    for (int c = threadIdx.x; c < dim; c += blockDim.x) ss = fmaf(row[c], row[c], ss);
    ss = ec_block_reduce<false>(ss, scratch);
    float inv = rsqrtf(ss / (float)dim + eps);
    T *o = out + (size_t)blockIdx.x * dim;
    for (int c = threadIdx.x; c < dim; c += blockDim.x) o[c] = ec_from_f32<T>(row[c] * inv * w[c]);
}

extern "C" int ec_cuda_rmsnorm(ec_cuda_dtype t, const float *x, size_t x_stride, const float *w,
                               int rows, int dim, float eps, void *out, cudaStream_t stream)
{
    return ec_dispatch_dtype(t, [&](auto tag) {
        typedef decltype(tag) T;
        rmsnorm_kernel<T><<<rows, 256, 0, stream>>>(x, x_stride, w, dim, eps, (T *)out);
        EC_CUDA_LAUNCHED("launch of rmsnorm kernel (%d rows x %d)", rows, dim);
        return 0;
    });
}
