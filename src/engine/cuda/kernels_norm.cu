/* kernels_norm.cu — RMSNorm from the fp32 residual stream to the 16-bit input of the next linear
 * layer. The residual add itself happens in the epilogue of the o-proj and down-proj linears
 * (they accumulate into the fp32 stream), so this kernel is the other half of the fused
 * "add + norm": one read of the stream, one 16-bit write. */
#include "common/cuda_check.h"
#include "kernels_norm.cuh"

/* One block per row (ec_rmsnorm_rows of one row). */
template <typename T>
__global__ void __launch_bounds__(EC_NORM_THREADS, 1) /* else ptxas spills to reach 2 blocks per SM */
    rmsnorm_kernel(const float *x, size_t x_stride, const float *w, int dim, float eps, T *out)
{
    __shared__ float scratch[32];
    float held_w[EC_NORM_HELD];
    ec_rmsnorm_held_w(w, dim, held_w);
    ec_wait_inputs();
    ec_rmsnorm_rows<T, 1>(x + blockIdx.x * x_stride, 0, 1, w, held_w, dim, eps,
                          out + (size_t)blockIdx.x * dim, 0, scratch);
}

extern "C" int ec_cuda_rmsnorm(ec_cuda_dtype t, const float *x, size_t x_stride, const float *w,
                               int rows, int dim, float eps, void *out, cudaStream_t stream)
{
    return ec_dispatch_dtype(t, [&](auto tag) {
        typedef decltype(tag) T;
        EC_CUDA_TRY(ec_launch(rmsnorm_kernel<T>, dim3(rows), dim3(EC_NORM_THREADS), 0, stream, x,
                              x_stride, w, dim, eps, (T *)out),
                    "launch of rmsnorm kernel (%d rows x %d)", rows, dim);
        return 0;
    });
}
