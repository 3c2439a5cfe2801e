/* kernels_int8_reference.cu — the reference family's int8 kernels, bitsandbytes' separate
 * steps: int32 accumulators to fp32 outputs (ec_cuda_int8_dequant), and the outlier columns'
 * activations and fp16-dequantized weight columns gathered for a 16-bit GEMM
 * (ec_cuda_int8_gather_x, ec_cuda_int8_weight_cols). */
#include "common/cuda_check.h"
#include "kernels_common.cuh"
#include "kernels_int8.cuh"

#include <stdint.h>

__global__ void dequant_kernel(const int32_t *acc, int ldc, const float *wscale, int rows,
                               const float *xscale, float *y, int ldy, size_t total)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        int b = (int)(i / (size_t)rows), r = (int)(i % (size_t)rows);
        y[(size_t)b * ldy + r] =
            int8_output(acc[(size_t)b * ldc + r], row_step(wscale, r), xscale[b], 0.0f);
    }
}

/* The gathers' rows are ldo >= n wide, zeros after the n listed columns. */
__global__ void gather_x_kernel(const __half *x, int cols, const int *ocols, int n, int ldo,
                                __half *xo, size_t total)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t b = i / (size_t)ldo;
        int p = (int)(i % (size_t)ldo);
        xo[i] = p < n ? x[b * cols + ocols[p]] : __float2half_rn(0.0f);
    }
}

__global__ void weight_cols_kernel(const int8_t *w, const float *wscale, int ld, const int *ocols,
                                   int n, int ldo, __half *wo, size_t total)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        int r = (int)(i / (size_t)ldo), p = (int)(i % (size_t)ldo);
        wo[i] = p < n ? __float2half_rn(
                            __fmul_rn((float)w[(size_t)r * ld + ocols[p]], row_step(wscale, r)))
                      : __float2half_rn(0.0f);
    }
}

extern "C" int ec_cuda_int8_dequant(const int32_t *acc, int ldc, const float *wscale, int rows,
                                    const float *xscale, int ntok, float *y, int ldy,
                                    cudaStream_t stream)
{
    size_t total = (size_t)ntok * rows;
    dequant_kernel<<<ec_grid_for(total), 256, 0, stream>>>(acc, ldc, wscale, rows, xscale, y, ldy,
                                                           total);
    EC_CUDA_LAUNCHED("launch of int8 dequant (%d tokens x %d rows)", ntok, rows);
    return 0;
}

extern "C" int ec_cuda_int8_gather_x(const void *x, int ntok, int cols, const int *ocols, int n,
                                     int ldo, void *xo, cudaStream_t stream)
{
    size_t total = (size_t)ntok * ldo;
    gather_x_kernel<<<ec_grid_for(total), 256, 0, stream>>>((const __half *)x, cols, ocols, n,
                                                            ldo, (__half *)xo, total);
    EC_CUDA_LAUNCHED("launch of outlier activation gather (%d tokens x %d columns)", ntok, n);
    return 0;
}

extern "C" int ec_cuda_int8_weight_cols(const int8_t *w, const float *wscale, int rows, int ld,
                                        const int *ocols, int n, int ldo, void *wo,
                                        cudaStream_t stream)
{
    size_t total = (size_t)rows * ldo;
    weight_cols_kernel<<<ec_grid_for(total), 256, 0, stream>>>(w, wscale, ld, ocols, n, ldo,
                                                               (__half *)wo, total);
    EC_CUDA_LAUNCHED("launch of outlier weight-column dequant (%d rows x %d columns)", rows, n);
    return 0;
}
