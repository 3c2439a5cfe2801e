/* kernels_elementwise.cu — the element-wise kernels between linears: SiLU·mul after a cuBLAS
 * gate/up GEMM (ec_cuda_silu_mul) and the reference family's residual add (ec_cuda_add). */
#include "common/cuda_check.h"
#include "kernels_common.cuh"

#include <stdint.h>

template <typename T> __global__ void silu_mul_kernel(const float *gu, int hidden, T *h, int ldh)
{
    ec_wait_inputs();
    const float *g = gu + (size_t)blockIdx.y * 2 * hidden;
    T *out = h + (size_t)blockIdx.y * ldh;
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < hidden; j += gridDim.x * blockDim.x) {
        float a = g[j];
        out[j] = ec_from_f32<T>(a / (1.0f + expf(-a)) * g[hidden + j]);
    }
}

extern "C" int ec_cuda_silu_mul(ec_cuda_dtype t, const float *gu, int ntok, int hidden, void *h,
                                int ldh, cudaStream_t stream)
{
    return ec_dispatch_dtype(t, [&](auto tag) {
        typedef decltype(tag) T;
        dim3 grid((unsigned)((hidden + 255) / 256), (unsigned)ntok);
        EC_CUDA_TRY(ec_launch(silu_mul_kernel<T>, grid, dim3(256), 0, stream, gu, hidden, (T *)h,
                              ldh),
                    "launch of silu-mul kernel (%d tokens x %d)", ntok, hidden);
        return 0;
    });
}

__global__ void add_kernel(float *y, int ldy, const float *t, int ldt, int n, size_t total)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t row = i / (size_t)n, col = i % (size_t)n;
        y[row * ldy + col] += t[row * ldt + col];
    }
}

extern "C" int ec_cuda_add(float *y, int ldy, const float *t, int ldt, int ntok, int n,
                           cudaStream_t stream)
{
    size_t total = (size_t)ntok * n;
    add_kernel<<<ec_grid_for(total), 256, 0, stream>>>(y, ldy, t, ldt, n, total);
    EC_CUDA_LAUNCHED("launch of add kernel (%d tokens x %d)", ntok, n);
    return 0;
}
