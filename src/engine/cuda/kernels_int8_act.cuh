/* kernels_int8_act.cuh — the int8 activation side shared by the int8 kernel files: a token's
 * codes and scale (src/quant/int8.c's arithmetic), loading a token in 8-column vectors and storing
 * its codes, the block-wide exclusive scan (outlier lists, GEMM epilogue chunk lists) and the
 * outlier count's report. Users: kernels_int8_outliers.cu, kernels_int8_quantize.cu,
 * kernels_int8_gemv.cu, kernels_int8_gemm.cu.
 *
 * Numerics are those of src/quant/int8.c, operation for operation, so that on fp16-representable
 * activations the codes, scales and (for the fused kernels, without outlier columns) the outputs
 * are bit-identical to ec_qmatrix_matmul_rows: the scaled values use __fdiv_rn / __fmul_rn /
 * __fadd_rn so nvcc cannot contract them into FMAs the CPU does not do, and the int32 dot
 * products are exact in any order. The outlier columns' products are exact in fp32 (two halves),
 * but their sum has its own order: per lane in the GEMV (int8_gemv_kernel), on tensor cores in
 * the GEMM epilogue (int8_epilogue_kernel). */
#ifndef ECOCOMPUTE_CUDA_KERNELS_INT8_ACT_CUH
#define ECOCOMPUTE_CUDA_KERNELS_INT8_ACT_CUH

#include "kernels_common.cuh"

#include <stdint.h>

enum {
    PREP_THREADS = 1024, /* a decode prepare block (RMSNorm order: EC_NORM_THREADS) */
    PREP_MAX_COLS = PREP_THREADS * 32, /* widest input of the prepare (32 columns a thread) */
};
static const unsigned FULL = 0xffffffffu;

/* round_q8 of src/quant/int8.c: nearest even, NaN -> 0, clamp to ±127. */
__device__ __forceinline__ int8_t round_q8(float v)
{
    v = rintf(v);
    if (isnan(v)) return 0;
    return (int8_t)(v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v);
}

/* The activation code of v in a token of absmax (0 for an outlier column or an all-zero token):
 * rne(v / absmax * 127), and the token's scale absmax / 127 — src/quant/int8.c's arithmetic. */
__device__ __forceinline__ int8_t act_code(float v, float absmax, bool outlier)
{
    return absmax > 0.0f && !outlier ? round_q8(__fmul_rn(__fdiv_rn(v, absmax), 127.0f)) : 0;
}
__device__ __forceinline__ float act_scale(float absmax) { return __fdiv_rn(absmax, 127.0f); }

/* act_code of a value with |v| <= absmax (any non-outlier value of its token) through r =
 * __frcp_rn(absmax): the product v·r corrected by one fma (Markstein) is exactly
 * __fdiv_rn(v, absmax) for every such pair of fp16 values (test_quant_int8 checks the IEEE
 * arithmetic on the CPU, all 10^9 pairs with EC_TEST_EXHAUSTIVE=1; only the sign of a zero
 * quotient differs, which gives the same code); times 127 it stays within ±127, so the
 * conversion needs no clamp, and it turns NaN (absmax inf) into 0, as round_q8 does. A multiply
 * and two fmas instead of a division per value: every block of a GEMV that quantizes its own
 * token does the whole token (quantize_own; down's own time fell from 23.3 to 20.0 µs a layer
 * on Llama-2-7B). */
__device__ __forceinline__ int act_code_rcp(float v, float absmax, float r)
{
    float q0 = __fmul_rn(v, r);
    float q = __fmaf_rn(__fmaf_rn(-q0, absmax, v), r, q0);
    return __float2int_rn(__fmul_rn(q, 127.0f));
}

/* The codes of 8 values e of a token with its absmax and r = __frcp_rn(absmax), as 8 bytes,
 * e[0]'s lowest: act_code_rcp, or 0 for an outlier column (f8 bit q) or an all-zero token. */
__device__ __forceinline__ uint2 codes8(const float e[8], unsigned f8, float absmax, float r)
{
    int c[8];
#pragma unroll
    for (int q = 0; q < 8; q++)
        c[q] = absmax > 0.0f && !((f8 >> q) & 1u) ? act_code_rcp(e[q], absmax, r) : 0;
    auto pack4 = [](const int *k) { /* the low bytes of k[0..3], k[0] lowest */
        return __byte_perm(__byte_perm(k[0], k[1], 0x0040), __byte_perm(k[2], k[3], 0x0040),
                           0x5410);
    };
    return make_uint2(pack4(c), pack4(c + 4));
}

/* A block's share of a token of nvec 8-column vectors: thread t loads vectors t, t + blockDim.x,
 * ... (at most N) into v, from L2 (each block reads a token once). */
template <int N>
__device__ __forceinline__ void load_token_vectors(const uint4 *xv, int nvec, uint4 v[N])
{
#pragma unroll
    for (int j = 0; j < N; j++) {
        int i = threadIdx.x + j * blockDim.x;
        if (i >= nvec) break;
        v[j] = __ldcg(xv + i);
    }
}

/* Their codes (codes8) into codes[vector], and, where flags is given, their outlier bits into
 * flags[vector]. */
template <int N>
__device__ __forceinline__ void store_token_codes(const uint4 v[N], const unsigned f8[N], int nvec,
                                                  float absmax, float r, uint2 *codes,
                                                  uint8_t *flags)
{
#pragma unroll
    for (int j = 0; j < N; j++) {
        int i = threadIdx.x + j * blockDim.x;
        if (i >= nvec) break;
        float e[8];
        ec_unpack8<__half>(v[j], e);
        codes[i] = codes8(e, f8[j], absmax, r);
        if (flags) flags[i] = (uint8_t)f8[j];
    }
}

/* Exclusive prefix sum of v over the block (blockDim.x a multiple of 32); *total = block sum. */
__device__ int block_exclusive_scan(int v, int *total)
{
    __shared__ int warp_off[33];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    int inc = v;
    for (int o = 1; o < 32; o <<= 1) {
        int up = __shfl_up_sync(FULL, inc, o);
        if (lane >= o) inc += up;
    }
    __syncthreads(); /* warp_off may still be read by a previous scan */
    if (lane == 31) warp_off[warp] = inc;
    __syncthreads();
    if (warp == 0) {
        int wv = lane < nwarps ? warp_off[lane] : 0, winc = wv;
        for (int o = 1; o < 32; o <<= 1) {
            int up = __shfl_up_sync(FULL, winc, o);
            if (lane >= o) winc += up;
        }
        __syncwarp();
        warp_off[lane] = winc - wv;
        if (lane == 31) warp_off[32] = winc;
    }
    __syncthreads();
    *total = warp_off[32];
    return warp_off[warp] + inc - v;
}

/* Thread 0 of a prepare, or of block 0 of a GEMV quantizing its own token, once a barrier has
 * closed the outlier count: the count for the caller (0 without outlier columns) and the
 * statistics (stat[0] += count, stat[1] += 1). */
__device__ __forceinline__ void report_outliers(float threshold, int count, int *ocount,
                                                unsigned long long *stat)
{
    *ocount = threshold > 0.0f ? count : 0;
    if (threshold > 0.0f && stat) {
        atomicAdd(stat, (unsigned long long)count);
        atomicAdd(stat + 1, 1ull);
    }
}

#endif
