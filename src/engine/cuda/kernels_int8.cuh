/* kernels_int8.cuh — the int8 formats' scalar arithmetic shared by the int8 kernels
 * (kernels_int8_gemv.cu, kernels_int8_gemm.cu's epilogue, kernels_int8_reference.cu, and
 * kernels_int8_mma.cu's one-pass GEMM).
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

/* The same weight as a half, for the tensor-core paths: __float2half_rn(dequant16(...)) keeps a
 * conversion round trip (cuda_fp16's conversions are inline asm, which nvcc does not fold). */
__device__ __forceinline__ __half dequant16_half(int8_t q, float step)
{
    return __float2half_rn(__fmul_rn((float)q, step));
}

/* dequant16_half of the 16 codes of a 16-byte load (byte j: code j), as 8 half pairs (pair i:
 * codes 2i, 2i + 1), with fewer conversions: a code becomes a float without the conversion
 * unit's int-to-float, as q + 128 (the byte with its top bit flipped) in the low byte of the
 * float 2^23, bits 0x4B0000uu, which is exactly 2^23 + 128 + q; and a pair is rounded in one
 * conversion (the int8 epilogue's PTX: 297 → 75 conversions, 2,813 → 1,864 lines). */
__device__ __forceinline__ void dequant16_x16(uint4 v, float step, __half2 (&d)[8])
{
    const uint32_t w[4] = {v.x ^ 0x80808080u, v.y ^ 0x80808080u, v.z ^ 0x80808080u,
                           v.w ^ 0x80808080u};
#pragma unroll
    for (int i = 0; i < 8; i++) {
        uint32_t b = 2 * (i % 2); /* __byte_perm selector 0x765b: byte b of w, then 00 00 4B */
        float lo = __fsub_rn(__uint_as_float(__byte_perm(w[i / 2], 0x4B000000u, 0x7650u + b)),
                             8388736.0f);
        float hi = __fsub_rn(__uint_as_float(__byte_perm(w[i / 2], 0x4B000000u, 0x7651u + b)),
                             8388736.0f);
        d[i] = __floats2half2_rn(__fmul_rn(lo, step), __fmul_rn(hi, step));
    }
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
