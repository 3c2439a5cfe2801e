/* kernels_convert.cu — fp32 -> 16-bit conversion of a weight at upload (ec_cuda_convert_f32). */
#include "common/cuda_check.h"
#include "kernels_common.cuh"

#include <stdint.h>

template <typename T>
__global__ void convert_kernel(const float *src, T *dst, int cols, int ld, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dst[i / cols * ld + i % cols] = ec_from_f32<T>(src[i]);
}

extern "C" int ec_cuda_convert_f32(ec_cuda_dtype t, const float *src, void *dst, int rows,
                                   int cols, int ld, cudaStream_t stream)
{
    return ec_dispatch_dtype(t, [&](auto tag) {
        typedef decltype(tag) T;
        size_t n = (size_t)rows * cols;
        convert_kernel<T><<<ec_grid_for(n), 256, 0, stream>>>(src, (T *)dst, cols, ld, n);
        EC_CUDA_LAUNCHED("launch of convert kernel (%d x %d values)", rows, cols);
        return 0;
    });
}
