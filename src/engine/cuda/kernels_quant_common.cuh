/* kernels_quant_common.cuh — device helpers of the fused quantized kernels (kernels_qmma.cuh,
 * kernels_qgemm.cuh), their format policies (kernels_nf4.cu, kernels_fp8.cu) and the reference
 * family's decode (kernels_dequant.cu): 16-bit pair arithmetic, exact E4M3 decode,
 * bounds-checked code and activation loads, the carried norm's staged row, the format tables in
 * shared memory, the nf4 block absmax, and the MMA fragments of a row group (stages, scales, A
 * fragments, output pairs). */
#ifndef ECOCOMPUTE_CUDA_KERNELS_QUANT_COMMON_CUH
#define ECOCOMPUTE_CUDA_KERNELS_QUANT_COMMON_CUH

#include <cuda_fp8.h>
#include <stdint.h>
#include <type_traits>

#include "common/cuda_check.h"
#include "kernels_common.cuh"
#include "kernels_quant.h"

enum {
    QMMA_MTILES = 2,  /* 16-row MMA tiles per warp (activation fragments shared by both) */
    QMMA_CHUNK = 128  /* columns per k-chunk: 32 per lane t, 8 MMA k-steps of 16 */
};

/* 32-bit word j (0..3) of a 16-byte load; j is an unrolled constant, so this is a register. */
__device__ __forceinline__ uint32_t ec_word(uint4 v, int j)
{
    return j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w;
}

/* The 16-bit pair type's bits from two fp32 values, rounded to nearest even (lo = first). */
template <typename T> __device__ __forceinline__ uint32_t ec_pack2(float lo, float hi);
template <> __device__ __forceinline__ uint32_t ec_pack2<__half>(float lo, float hi)
{
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&h);
}
template <> __device__ __forceinline__ uint32_t ec_pack2<__nv_bfloat16>(float lo, float hi)
{
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&h);
}

/* The product of two 16-bit pairs (bits as ec_pack2 makes them), each rounded once to nearest. */
template <typename T> __device__ __forceinline__ uint32_t ec_hmul2(uint32_t a, uint32_t b);
template <> __device__ __forceinline__ uint32_t ec_hmul2<__half>(uint32_t a, uint32_t b)
{
    __half2 p = __hmul2_rn(*reinterpret_cast<const __half2 *>(&a), *reinterpret_cast<const __half2 *>(&b));
    return *reinterpret_cast<uint32_t *>(&p);
}
template <> __device__ __forceinline__ uint32_t ec_hmul2<__nv_bfloat16>(uint32_t a, uint32_t b)
{
    __nv_bfloat162 p = __hmul2_rn(*reinterpret_cast<const __nv_bfloat162 *>(&a),
                                  *reinterpret_cast<const __nv_bfloat162 *>(&b));
    return *reinterpret_cast<uint32_t *>(&p);
}

/* Below sm_89 there is no E4M3 conversion instruction, and cuda_fp8.h's software one branches
 * per code (compute_80's fused fp8 decoded 4x slower than fp16 on an H200). Instead: E4M3's sign
 * moved to bit 15 and its other seven bits (exponent 4, mantissa 3) to bits 7-13 read as an fp16
 * (1.5.10) of the code's value times 2^-8 (the exponent biases are 7 and 15), subnormals
 * included, and one multiplication by 256 makes it exact. `w` holds the two codes in bits 8-15
 * and 24-31. The NaN codes 0x7f / 0xff, which the quantizer never writes (it saturates at 448),
 * read +-480. */
__device__ __forceinline__ uint32_t ec_e4m3_fields_to_half2(uint32_t w)
{
    uint32_t h = (w & 0x80008000u) | ((w >> 1) & 0x3f803f80u);
    __half2 v = __hmul2(*reinterpret_cast<__half2 *>(&h), __float2half2_rn(256.0f));
    return *reinterpret_cast<uint32_t *>(&v);
}

/* Two E4M3 codes (bits 0-7 = first column) as an fp16 pair, exactly: the hardware pair
 * conversion cvt.rn.f16x2.e4m3x2 on sm_89+, ec_e4m3_fields_to_half2 before. */
__device__ __forceinline__ __half2 ec_e4m3x2_to_half2(uint32_t two)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 890
    uint32_t h = ec_e4m3_fields_to_half2(__byte_perm(two, 0, 0x1404)); /* bytes 0, 1 -> 1, 3 */
    return *reinterpret_cast<__half2 *>(&h);
#else
    __half2_raw r = __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)(two & 0xffffu), __NV_E4M3);
    return __half2(r);
#endif
}

/* A word's four E4M3 codes as two fp16 pairs, exactly: bytes 0-1 in .x, bytes 2-3 in .y. On
 * sm_89+ the upper pair is converted from the register's high half in place (the conversion's
 * .H1 operand) instead of after the shift the compiler emits for `four >> 16`, 32 of the 271
 * instructions a warp spent on a chunk of fp8's batch-1 gate/up: fp8 steps 0.6-1.4 % shorter. */
__device__ __forceinline__ uint2 ec_e4m3x4_to_half2x2(uint32_t four)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    uint2 r;
    asm("{\n\t.reg .b16 lo, hi;\n\tmov.b32 {lo, hi}, %2;\n\t"
        "cvt.rn.f16x2.e4m3x2 %0, lo;\n\tcvt.rn.f16x2.e4m3x2 %1, hi;\n\t}"
        : "=r"(r.x), "=r"(r.y)
        : "r"(four));
    return r;
#else
    return make_uint2(ec_e4m3_fields_to_half2(__byte_perm(four, 0, 0x1404)),  /* bytes 0, 1 */
                      ec_e4m3_fields_to_half2(__byte_perm(four, 0, 0x3424))); /* bytes 2, 3 */
#endif
}

/* Bytes [byte0, byte0 + 4N) of a row of rb bytes as N little-endian words, bounds-checked:
 * `pad` past the row (a code that decodes to 0), so an unaligned load never reads another row's
 * bytes. */
template <int N>
__device__ __forceinline__ void ec_load_code_bytes(const uint8_t *row, int rb, int byte0,
                                                   uint32_t pad, uint32_t (&v)[N])
{
#pragma unroll
    for (int i = 0; i < N; i++) {
        v[i] = 0;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            int at = byte0 + 4 * i + j;
            v[i] |= (at < rb ? (uint32_t)row[at] : pad) << (8 * j);
        }
    }
}

/* 16 bytes of a row of rb bytes from byte byte0: one 16-byte load where the shape allows it
 * (VEC), else ec_load_code_bytes. */
template <bool VEC>
__device__ __forceinline__ uint4 ec_load_codes16(const uint8_t *row, int rb, int byte0, uint32_t pad)
{
    if constexpr (VEC) {
        return __ldcs(reinterpret_cast<const uint4 *>(row + byte0));
    } else {
        uint32_t v[4];
        ec_load_code_bytes<4>(row, rb, byte0, pad, v);
        return make_uint4(v[0], v[1], v[2], v[3]);
    }
}

/* The column, inside a 128-column chunk, of lane t's 4 columns at MMA k-step s (0..7). A lane
 * owns 32 columns of a chunk. By default they are consecutive, [32t, 32t + 32); a policy with
 * INTERLEAVED = true (16-bit weights, kernels_gemv_mma.cu) takes them in 8-column pieces 32
 * apart, 32p + 8t .. + 7 for p = 0..3: a 16-byte load of a row's 4 lanes t then reads 64
 * consecutive bytes within one 128-byte line, where pieces 64 bytes apart span two, and so does
 * the activation load of a token. */
template <class F, class = void> struct ec_qmma_interleaved : std::false_type {
};
template <class F>
struct ec_qmma_interleaved<F, std::void_t<decltype(F::INTERLEAVED)>>
    : std::bool_constant<F::INTERLEAVED> {
};
template <class F> __device__ __forceinline__ constexpr int ec_qmma_kcol(int t, int s)
{
    if constexpr (ec_qmma_interleaved<F>::value)
        return 32 * (s >> 1) + 8 * t + 4 * (s & 1);
    else
        return 32 * t + 4 * s;
}

/* 4 activations xr[col .. col+4) as two 16-bit pairs (an MMA B fragment); 0 past cols. */
template <typename T, bool VEC>
__device__ __forceinline__ uint2 ec_load_x4(const T *__restrict__ xr, int col, int cols)
{
    if constexpr (VEC) {
        return __ldg(reinterpret_cast<const uint2 *>(xr + col));
    } else {
        uint32_t h[4];
#pragma unroll
        for (int i = 0; i < 4; i++)
            h[i] = col + i < cols ? reinterpret_cast<const uint16_t *>(xr)[col + i] : 0u;
        return make_uint2(h[0] | h[1] << 16, h[2] | h[3] << 16);
    }
}

/* The sum over the 8 lanes of an MMA fragment that share t (lane = 4 g + t): one row tile's
 * rows g and g + 8, g = 0..7, in an order fixed by the lane pattern. */
__device__ __forceinline__ float ec_sum_over_g(float v)
{
    for (int o = 4; o < 32; o *= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* The carried norm of a launch (ec_cuda_qcarry) as kernel arguments: the producer's sumsq_out,
 * and the consumer's fp32 row x, norm weight w, tile sums sumsq [ceil(cols / 16)] and eps. */
struct ec_qcarry_args {
    float *sumsq_out;
    const float *x, *w, *sumsq;
    float eps;
};

/* A carried norm's consumer stages its normalised row once per CTA, T [cols] in shared memory
 * after the format's pair table: normalising each activation where the MMA loads it, per group
 * and k-step, made fp8 steps 9-11 % and nf4 steps 25 % slower than the norm's launch.
 * Writes T(x * inv * w) for the consumer's row into s_x [cols], inv from the producer's tile sums
 * added in a fixed order (thread i adds tiles i, i + blockDim.x, ..., then the warps' sums in
 * warp order), so every CTA stages the same row; the row and sums are step data written by the
 * kernel before, read through L2. Every thread calls it; it ends with a barrier. The first HELD
 * float4 of each thread's columns are loaded with the sums, so that one round trip serves both
 * for rows up to HELD * 4 * blockDim.x columns. */
template <typename T>
__device__ __forceinline__ void ec_stage_carried_row(const ec_qcarry_args &c, int cols, T *s_x,
                                                     float *s_warp /* [blockDim.x / 32] */)
{
    constexpr int HELD = 4;
    int n4 = cols / 4, nt = (int)blockDim.x;
    float4 v[HELD], g[HELD];
#pragma unroll
    for (int h = 0; h < HELD; h++) {
        int i = (int)threadIdx.x + h * nt;
        if (i < n4) {
            v[h] = __ldcg(reinterpret_cast<const float4 *>(c.x) + i);
            g[h] = __ldg(reinterpret_cast<const float4 *>(c.w) + i);
        }
    }
    float ss = 0.0f;
    for (int i = threadIdx.x; i < (cols + 15) / 16; i += nt) ss += __ldcg(c.sumsq + i);
    ss = ec_warp_sum(ss);
    if ((threadIdx.x & 31) == 0) s_warp[threadIdx.x >> 5] = ss;
    __syncthreads();
    ss = 0.0f;
    for (int k = 0; k < nt / 32; k++) ss += s_warp[k];
    float inv = rsqrtf(ss / (float)cols + c.eps);
    auto put = [&](int i, float4 a, float4 b) {
        uint2 o = make_uint2(ec_pack2<T>(a.x * inv * b.x, a.y * inv * b.y),
                             ec_pack2<T>(a.z * inv * b.z, a.w * inv * b.w));
        reinterpret_cast<uint2 *>(s_x)[i] = o;
    };
#pragma unroll
    for (int h = 0; h < HELD; h++) {
        int i = (int)threadIdx.x + h * nt;
        if (i < n4) put(i, v[h], g[h]);
    }
    for (int i = (int)threadIdx.x + HELD * nt; i < n4; i += nt)
        put(i, __ldcg(reinterpret_cast<const float4 *>(c.x) + i),
            __ldg(reinterpret_cast<const float4 *>(c.w) + i));
    __syncthreads();
}

/* The format tables (nf4 values, dynamic map) of a kernel, in two steps: ec_fetch_qtables reads
 * each thread's share into registers at the kernel's start, so the load travels with the first
 * weight requests instead of queueing behind them (a CTA's first chunks wait for the tables);
 * ec_store_qtables puts them into shared memory and builds the format's per-lane lookup table
 * for activation type T from them (F::load_pairs, in the kernel's F::PAIR_BYTES of dynamic shared
 * memory). Blocks have at least QTAB_MIN_THREADS threads; every thread must call both (the
 * second ends with __syncthreads). */
enum {
    QTAB_MIN_THREADS = 128,
    QTAB_PER_THREAD = (EC_CUDA_QTABLES_FLOATS + QTAB_MIN_THREADS - 1) / QTAB_MIN_THREADS
};
struct ec_qtables_regs {
    float v[QTAB_PER_THREAD];
};

template <class F>
__device__ __forceinline__ ec_qtables_regs ec_fetch_qtables(const ec_cuda_packed_weight &w)
{
    ec_qtables_regs r;
#pragma unroll
    for (int k = 0; k < QTAB_PER_THREAD; k++) {
        int i = threadIdx.x + k * blockDim.x;
        r.v[k] = F::TABLES && i < EC_CUDA_QTABLES_FLOATS ? __ldg(w.tables + i) : 0.0f;
    }
    return r;
}

template <class F, typename T>
__device__ __forceinline__ void ec_store_qtables(const ec_qtables_regs &r,
                                                 float *s_tab /* [272] */, uint32_t *s_pairs)
{
    if (F::TABLES) {
#pragma unroll
        for (int k = 0; k < QTAB_PER_THREAD; k++) {
            int i = threadIdx.x + k * blockDim.x;
            if (i < EC_CUDA_QTABLES_FLOATS) s_tab[i] = r.v[k];
        }
        __syncthreads();
        F::template load_pairs<T>(s_tab, s_pairs);
    }
    __syncthreads();
}

/* The nf4 block absmax of (row, block blk) in two halves, so a kernel can request the bytes
 * before the tables are in shared memory: ec_nf4_absmax_load reads the fp32 absmax (nf4) or the
 * 8-bit code, its second-level scale and its segment's offset (nf4-dq); ec_nf4_absmax_decode
 * turns the latter into map[q] * absmax2 + offset with two roundings, no fma, as the CPU does
 * (map = the dynamic map [256], in shared memory). */
struct ec_nf4_absmax_raw {
    float v;      /* nf4: the absmax; nf4-dq: the segment's second-level absmax of the block */
    unsigned q;   /* nf4-dq: the block's 8-bit code */
    float offset; /* nf4-dq: the segment's offset */
};

/* The nf4-dq segment of a row (constant indices only: a dynamic index would copy the parameter
 * struct to local memory). */
__device__ __forceinline__ ec_cuda_dq_segment ec_nf4_segment_of(const ec_cuda_packed_weight &w,
                                                               int row)
{
    int s = (w.nseg > 1 && row >= w.seg[1].row0) + (w.nseg > 2 && row >= w.seg[2].row0);
    return s == 2 ? w.seg[2] : s == 1 ? w.seg[1] : w.seg[0];
}

template <bool DQ>
__device__ __forceinline__ ec_nf4_absmax_raw ec_nf4_absmax_load(const ec_cuda_packed_weight &w,
                                                                int row, int blk)
{
    int nb = (w.cols + EC_NF4_BLOCK - 1) / EC_NF4_BLOCK;
    if (!DQ) return {__ldg(w.scales + (size_t)row * nb + blk), 0u, 0.0f};
    ec_cuda_dq_segment sg = ec_nf4_segment_of(w, row);
    size_t i = (size_t)(row - sg.row0) * nb + blk;
    return {__ldg(sg.qscale_absmax + i / EC_NF4_DQ_BLOCK), (unsigned)__ldg(sg.qscales + i),
            sg.qscale_offset};
}

template <bool DQ>
__device__ __forceinline__ float ec_nf4_absmax_decode(const float *map, ec_nf4_absmax_raw a)
{
    if (!DQ) return a.v;
    return __fadd_rn(__fmul_rn(map[a.q], a.v), a.offset);
}

template <bool DQ>
__device__ __forceinline__ float ec_nf4_block_absmax(const ec_cuda_packed_weight &w,
                                                     const float *map, int row, int blk)
{
    return ec_nf4_absmax_decode<DQ>(map, ec_nf4_absmax_load<DQ>(w, row, blk));
}

/* ---- MMA fragments of a row group, shared by qmma_kernel and qgemm_kernel ---- */
template <class F, int MT> struct ec_qmma_stage {
    typename F::Piece a[MT], b[MT]; /* rows g and g+8 of each row tile */
};

/* The rows a lane works on in row group j of a CTA: tile m's rows a[m] (g) and b[m] (g + 8, or
 * for SiLU·mul the up row of the same feature), and whether they exist. */
template <int MT> struct ec_qmma_rows {
    int a[MT], b[MT];
    bool va[MT], vb[MT];
};
template <int MT, bool SILU>
__device__ __forceinline__ ec_qmma_rows<MT> ec_qmma_rows_of(int group, int out_rows, int g)
{
    constexpr int tile_out = SILU ? 8 : 16;
    ec_qmma_rows<MT> r;
#pragma unroll
    for (int m = 0; m < MT; m++) {
        int o = (group * MT + m) * tile_out + g;
        r.a[m] = o;
        r.b[m] = SILU ? o + out_rows : o + 8;
        r.va[m] = o < out_rows;
        r.vb[m] = SILU ? r.va[m] : o + 8 < out_rows;
    }
    return r;
}

/* The block scales of a stage's pieces as 16-bit pairs of type T; unused by formats that scale
 * the finished sums instead (out_scale). */
template <class F, typename T, int MT>
__device__ __forceinline__ void ec_qmma_scales(const float *s_tab, const ec_qmma_stage<F, MT> &s,
                                               uint32_t (&sa)[MT], uint32_t (&sb)[MT])
{
#pragma unroll
    for (int m = 0; m < MT; m++) {
        sa[m] = F::template piece_scale<T>(s_tab, s.a[m]);
        sb[m] = F::template piece_scale<T>(s_tab, s.b[m]);
    }
}

/* The A fragments of k-step k (0..7 of a 128-column chunk) of every row tile of a stage. */
template <class F, typename T, int MT>
__device__ __forceinline__ void ec_qmma_afrags(const ec_qmma_stage<F, MT> &s,
                                               const uint32_t (&sa)[MT], const uint32_t (&sb)[MT],
                                               int k, const uint32_t *s_pairs, uint32_t (&a)[MT][4])
{
#pragma unroll
    for (int m = 0; m < MT; m++) {
        uint2 fa = F::template afrag<T>(s.a[m], sa[m], k, s_pairs);
        uint2 fb = F::template afrag<T>(s.b[m], sb[m], k, s_pairs);
        a[m][0] = fa.x; /* row g,   k 2t, 2t+1 */
        a[m][1] = fb.x; /* row g+8, k 2t, 2t+1 */
        a[m][2] = fa.y; /* row g,   k 2t+8, 2t+9 */
        a[m][3] = fb.y; /* row g+8, k 2t+8, 2t+9 */
    }
}

/* One output pair of a lane's finished C fragments: tile m's row a (entries h of the fragment)
 * and row b (entries 2 + h: row g + 8, or for SiLU·mul the up row of the same feature) for
 * token tok = 8n + 2t + h, with what its write needs besides the two sums: the format's output
 * scales and, for ADD, the values of y it adds to. ec_qmma_out_of loads those, so a kernel can
 * issue them early; ec_qmma_put writes (the mode's store, add or SiLU·mul). */
struct ec_qmma_out {
    int ra, rb, tok;
    bool va, vb; /* rows exist (va false: nothing to write; also past the batch) */
    float sca, scb, ya0, yb0;
};
template <class F, int MT, int MODE>
__device__ __forceinline__ ec_qmma_out ec_qmma_out_of(const ec_cuda_packed_weight &w,
                                                      const ec_qmma_rows<MT> &r, int m, int tok,
                                                      int nb, const void *y, int ldy)
{
    ec_qmma_out o = {r.a[m], r.b[m], tok, r.va[m] && tok < nb, r.vb[m] && tok < nb,
                     0.0f, 0.0f, 0.0f, 0.0f};
    if (o.va) o.sca = F::out_scale(w, o.ra);
    if (o.vb) o.scb = F::out_scale(w, o.rb);
    if (MODE == EC_GEMV_ADD) {
        const float *row = reinterpret_cast<const float *>(y) + (size_t)tok * ldy;
        if (o.va) o.ya0 = row[o.ra];
        if (o.vb) o.yb0 = row[o.rb];
    }
    return o;
}
/* Returns the sum of the squares of the fp32 values it wrote (0 for SiLU·mul): the pair's share
 * of a carried norm. */
template <typename T, int MODE>
__device__ __forceinline__ float ec_qmma_put(const ec_qmma_out &o, float sum_a, float sum_b,
                                             void *y, int ldy)
{
    if (!o.va) return 0.0f;
    size_t at = (size_t)o.tok * ldy;
    float ya = sum_a * o.sca, yb = sum_b * o.scb;
    if (MODE == EC_GEMV_SILU_MUL) {
        reinterpret_cast<T *>(y)[at + o.ra] = ec_from_f32<T>(ya / (1.0f + expf(-ya)) * yb);
        return 0.0f;
    }
    float *out = reinterpret_cast<float *>(y) + at;
    float va = MODE == EC_GEMV_ADD ? o.ya0 + ya : ya, vb = MODE == EC_GEMV_ADD ? o.yb0 + yb : yb;
    out[o.ra] = va;
    if (!o.vb) return va * va;
    out[o.rb] = vb;
    return fmaf(vb, vb, va * va);
}

/* A warp's finished tiles to y: the C fragment acc[m][n][0..1] is row r.a[m] for tokens
 * 8n + 2t and 8n + 2t + 1, acc[m][n][2..3] row r.b[m]. */
template <class F, typename T, int MT, int NT, int MODE>
__device__ __forceinline__ void ec_qmma_write(const ec_cuda_packed_weight &w,
                                              const ec_qmma_rows<MT> &r,
                                              const float (&acc)[MT][NT][4], int t, int nb,
                                              void *y, int ldy)
{
#pragma unroll
    for (int m = 0; m < MT; m++)
#pragma unroll
        for (int n = 0; n < NT; n++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                int tok = 8 * n + 2 * t + h;
                ec_qmma_put<T, MODE>(ec_qmma_out_of<F, MT, MODE>(w, r, m, tok, nb, y, ldy),
                                     acc[m][n][h], acc[m][n][2 + h], y, ldy);
            }
}

#endif
