/* kernels_rope.cuh — one rotary-embedding pair, shared by the rope/KV kernel (prefill) and the
 * fused decode attention, so both rotate bit-identically: element pair j of a head sits at
 * offsets (j*step, j*step + partner) — interleaved pairs (2j, 2j+1) as in llama2.c, or halves
 * (j, j + head_dim/2) as in Hugging Face — and is rotated by the angle (float)position *
 * inv_freq[j] with full-precision sincosf, as on the CPU. */
#ifndef ECOCOMPUTE_CUDA_KERNELS_ROPE_CUH
#define ECOCOMPUTE_CUDA_KERNELS_ROPE_CUH

#include "kernels.h"

struct ec_rope_pairing {
    int step, partner;
};
__device__ __forceinline__ ec_rope_pairing ec_rope_pairing_of(const ec_cuda_attn_shape &s)
{
    return s.interleaved ? ec_rope_pairing{2, 1} : ec_rope_pairing{1, s.head_dim / 2};
}

/* (sin, cos) of position p's angle at frequency inv_freq. */
__device__ __forceinline__ float2 ec_rope_sincos(int p, float inv_freq)
{
    float sn, cs;
    sincosf((float)p * inv_freq, &sn, &cs);
    return make_float2(sn, cs);
}

/* The pair at offsets off and off + partner of an fp32 qkv row, plus bias (may be NULL),
 * rotated by the angle of ec_rope_sincos, computed apart: before its wait for the row in the
 * decode attention, once per token row for all its heads in the rope/KV kernel. */
__device__ __forceinline__ float2 ec_rope_rotate(const float *row, const float *bias, int off,
                                                 int partner, float2 sincos)
{
    float x0 = row[off], x1 = row[off + partner];
    if (bias) {
        x0 += bias[off];
        x1 += bias[off + partner];
    }
    float sn = sincos.x, cs = sincos.y;
    return make_float2(x0 * cs - x1 * sn, x0 * sn + x1 * cs);
}

#endif
