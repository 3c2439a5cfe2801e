/* kernels_int8.cuh — the int8 formats' scalar arithmetic shared by the int8 kernels
 * (kernels_int8.cu: prepares, GEMV, GEMM epilogue; kernels_int8_mma.cu: the one-pass GEMM).
 * Each is src/quant/int8.c's expression with explicit roundings (__fmul_rn, ...), so nvcc cannot
 * contract it into an FMA the CPU does not do. */
#ifndef ECOCOMPUTE_CUDA_KERNELS_INT8_CUH
#define ECOCOMPUTE_CUDA_KERNELS_INT8_CUH

#include <cuda_fp16.h>
#include <stdint.h>

/* A weight row's dequantization step: row absmax / 127. */
__device__ __forceinline__ float row_step(const float *wscale, int r)
{
    return __fdiv_rn(wscale[r], 127.0f);
}

/* The weight value of the outlier path: fp16(q * row_absmax/127). */
__device__ __forceinline__ float dequant16(int8_t q, float step)
{
    return __half2float(__float2half_rn(__fmul_rn((float)q, step)));
}

/* acc * step * xscale, left to right, plus the outlier sum: the int8 formats' output. */
__device__ __forceinline__ float int8_output(int acc, float step, float xscale, float outlier)
{
    return __fadd_rn(__fmul_rn(__fmul_rn(__int2float_rn(acc), step), xscale), outlier);
}

/* Byte i (0..15, run-time) of a 16-byte chunk, as a signed code. */
__device__ __forceinline__ int8_t chunk_byte(const uint4 &v, int i)
{
    uint32_t wd = i < 8 ? (i < 4 ? v.x : v.y) : (i < 12 ? v.z : v.w);
    return (int8_t)(wd >> (8 * (i & 3)));
}

#endif
