/* kernels_quant.cuh — the fused weight-only quantized linear, written once for every format.
 *
 * A format is a small policy struct (Nf4<DQ> in kernels_nf4.cu, Fp8 in kernels_fp8.cu) that
 * loads packed codes and decodes them; the two kernels here own the dataflow:
 *
 *   qmma_kernel (batch 1..16) and qgemm_kernel (17..64 per launch, x staged in shared memory
 *     for 128-row CTAs, columns split across CTAs; see its section): tensor cores, weights read
 *     once per 64 token rows. Batch 1 runs on tensor cores too, with 7 of the 8 token columns
 *     empty: the MMA does the multiply-adds of 256 weights in one instruction, so a lane spends
 *     0.75 (fp8) to 1.5 (nf4) instructions per weight on decoding instead of the three or four of
 *     an fp32 GEMV.
 *     The MMA is "swapped": M = weight rows (16 per tile), N = token rows (8 per tile), K =
 *     columns, so y^T = W x^T needs no transposes (W row-major = A row-major, x [batch][cols] =
 *     B column-major) and small batches waste no M. In qmma_kernel a CTA holds 8 warps that split
 *     the columns in chunks of 128 and QMMA_MTILES row tiles per warp (one for narrow weights,
 *     see ec_qlaunch_mma); partial sums meet in shared memory, in a fixed order (see qmma_kernel
 *     for the streaming).
 *     Each lane loads, per 128-column chunk and per A row it owns (g and g+8 of each tile), the
 *     32 consecutive columns [32t, 32t+32) with 16-byte loads, and feeds them to the 8 k-steps of
 *     16 as columns {32t+4s .. 32t+4s+3} for step s. This is a fixed permutation of k inside the
 *     chunk (the dot product does not care about the order) chosen so that the A fragment
 *     (k = 2t, 2t+1, 2t+8, 2t+9 for lane t) is contiguous in memory; the activation B fragment
 *     uses the same permutation, so its lane reads 4 consecutive activations (8 bytes) per step.
 *     The codes are decoded in registers straight into the A fragments (Marlin's idea, without
 *     its offline weight reshuffle: the layout stays the CPU one): fp8 by the hardware pair
 *     conversion, nf4 by one shared-memory lookup per code byte in a per-lane table of 16-bit
 *     value pairs, then one 16-bit multiply by the block absmax (F::load_pairs).
 *
 * Shapes not aligned for vector loads (cols % 32 != 0, ldx % 8 != 0: tests, tiny models) run the
 * same kernels with bounds-checked byte loads (VEC = false); past the last column the codes read
 * as zero weights and the activations as 0, so nothing beyond a row is read. */
#ifndef ECOCOMPUTE_CUDA_KERNELS_QUANT_CUH
#define ECOCOMPUTE_CUDA_KERNELS_QUANT_CUH

#include <cuda_fp8.h>
#include <stdint.h>

#include "cuda_check.h"
#include "kernels_common.cuh"
#include "kernels_quant.h"
#include "kernels_wgmma.cuh"

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

/* Two E4M3 codes (bits 0-7 = first column) as an fp16 pair, exactly: the hardware pair
 * conversion cvt.rn.f16x2.e4m3x2 (sm_89+). */
__device__ __forceinline__ __half2 ec_e4m3x2_to_half2(uint32_t two)
{
    __half2_raw r = __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)(two & 0xffffu), __NV_E4M3);
    return __half2(r);
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
    __half2 lo = ec_e4m3x2_to_half2(four), hi = ec_e4m3x2_to_half2(four >> 16);
    return make_uint2(*reinterpret_cast<uint32_t *>(&lo), *reinterpret_cast<uint32_t *>(&hi));
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

/* ---- tensor cores, batch 1..16 (qmma_kernel; qgemm_kernel below takes 17..64) ----
 * A row group is MT row tiles (MT x 16 weight rows, or MT x 8 output features for SiLU·mul);
 * MT row tiles share each B fragment, NT column tiles of 8 tokens share each decoded A fragment,
 * and the KS warps of a CTA split the group's 128-column chunks, their partial sums meeting in
 * shared memory in a fixed order. A CTA streams its row groups (blockIdx.x, + gridDim.x, ...;
 * the grid is one wave) as one sequence per warp, S chunks deep: the first S requests go out
 * with the tables' fetch, before the wait for the previous kernel (weights are no step data),
 * and a stage is refilled as soon as it is decoded, also across a group boundary, so HBM keeps
 * S chunks per warp in flight while the SMs decode, multiply and reduce. */
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

/* NORM: the consumer of a carried norm (batch 1: the activations from qc instead of x); an ADD
 * with qc.sumsq_out (batch 1) is its producer. CTAS: the CTAs per SM it is compiled for (launch
 * bounds; 0 for none), from F::mma_ctas (ec_qlaunch_mma_nt). */
template <class F, typename T, int MT, int NT, int KS, int S, int MODE, bool VEC, bool NORM,
          int CTAS>
__global__ void __launch_bounds__(KS * 32, CTAS)
    qmma_kernel(const ec_cuda_packed_weight w, const T *__restrict__ x, int ldx, int batch, void *y,
                int ldy, const ec_qcarry_args qc)
{
    static_assert(!NORM || (VEC && NT == 1 && MODE != EC_GEMV_ADD), "a carried norm's consumer");
    constexpr int NACC = MT * NT * 4;
    constexpr bool SILU = MODE == EC_GEMV_SILU_MUL;
    static_assert(KS * 32 >= QTAB_MIN_THREADS, "ec_fetch_qtables needs the threads");
    __shared__ float s_tab[EC_CUDA_QTABLES_FLOATS];
    extern __shared__ __align__(16) uint32_t s_pairs[]; /* F::PAIR_BYTES, NORM: then T [cols] */
    __shared__ float s_red[KS][NACC][32]; /* every warp's partials of a group */
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    int out_rows = SILU ? w.rows / 2 : w.rows;
    int ngroups = (out_rows + MT * (SILU ? 8 : 16) - 1) / (MT * (SILU ? 8 : 16));
    int mygroups = (int)blockIdx.x < ngroups ? (ngroups - 1 - (int)blockIdx.x) / (int)gridDim.x + 1 : 0;
    auto group = [&](int j) { return (int)blockIdx.x + j * (int)gridDim.x; };

    /* This warp's chunks of a group: warp, warp + KS, ...; a lane's 32 columns of chunk i start
     * at col(i). A warp without chunks (narrow weights) still takes one empty unit per group, so
     * every warp reaches each group's barriers. */
    int nchunks = (w.cols + QMMA_CHUNK - 1) / QMMA_CHUNK;
    int mine = warp < nchunks ? (nchunks - 1 - warp) / KS + 1 : 0;
    int per = mine > 0 ? mine : 1, total = mygroups * per;
    auto col = [&](int i) { return (warp + i * KS) * QMMA_CHUNK + 32 * t; };

    float acc[MT][NT][4];
    float *flat = &acc[0][0][0];
#pragma unroll
    for (int i = 0; i < NACC; i++)
        flat[i] = 0.0f;

    /* F::RELEASE_AT_START: at batch 1 the next kernel launches (PDL) at once, not after this
     * CTA's last request (below) */
    const bool release_at_start = F::RELEASE_AT_START && NT == 1 && batch == 1;
    if (release_at_start) ec_release_next();
    ec_qtables_regs tables = ec_fetch_qtables<F>(w);
    ec_qmma_stage<F, MT> st[S];
    int rj = 0, ri = 0; /* the request cursor: group j, chunk i */
    auto request = [&](ec_qmma_stage<F, MT> &s) {
        ec_qmma_rows<MT> r = ec_qmma_rows_of<MT, SILU>(group(rj), out_rows, g);
        int c = col(ri);
        bool any = ri < mine && c < w.cols;
#pragma unroll
        for (int m = 0; m < MT; m++) {
            F::template load_piece<VEC>(w, r.a[m], c, any && r.va[m], s.a[m]);
            F::template load_piece<VEC>(w, r.b[m], c, any && r.vb[m], s.b[m]);
        }
        if (++ri == per) {
            ri = 0;
            rj++;
        }
    };
#pragma unroll
    for (int u = 0; u < S; u++)
        if (u < total) request(st[u]);
    ec_store_qtables<F, T>(tables, s_tab, s_pairs);
    ec_wait_inputs(false); /* x and y belong to the step (see ec_launch) */
    /* Once a CTA has requested its last chunk it lets the next kernel launch (PDL): that kernel's
     * blocks then take the SM slots this kernel's CTAs free in its tail and send their first
     * weight requests, instead of waiting for the last CTA to exit. */
    const bool release_late = !release_at_start;
    if (release_late && total <= S) ec_release_next();
    T *s_x = reinterpret_cast<T *>(reinterpret_cast<char *>(s_pairs) + F::PAIR_BYTES);
    if constexpr (NORM) {
        __shared__ float s_warp[KS];
        ec_stage_carried_row<T>(qc, w.cols, s_x, s_warp);
    }

    auto use = [&](int i, const ec_qmma_stage<F, MT> &s) {
        if (i >= mine) return;
        int c = col(i);
        uint32_t sa[MT], sb[MT];
        ec_qmma_scales<F, T, MT>(s_tab, s, sa, sb);
#pragma unroll
        for (int k = 0; k < 8; k++) {
            uint32_t a[MT][4];
            ec_qmma_afrags<F, T, MT>(s, sa, sb, k, s_pairs, a);
#pragma unroll
            for (int n = 0; n < NT; n++) {
                /* B column g of tile n, from L1/L2 per chunk: copying x to shared memory
                 * or prefetching it into L1 after the wait measured slower */
                int tok = 8 * n + g;
                uint2 bx = make_uint2(0, 0);
                if (NORM && tok == 0)
                    bx = *reinterpret_cast<const uint2 *>(s_x + c + 4 * k);
                else if (!NORM && tok < batch && c < w.cols)
                    bx = ec_load_x4<T, VEC>(x + (size_t)tok * ldx, c + 4 * k, w.cols);
#pragma unroll
                for (int m = 0; m < MT; m++)
                    ec_mma16816<T>(acc[m][n], a[m], bx);
            }
        }
    };

    /* Group j's column splits summed in warp order (deterministic), one output pair per warp:
     * warp (m NT + n) 2 + h sums entries h and 2 + h of tile (m, n) and writes them. It loads
     * their output scales and, for ADD, the values it adds to before the barrier, so those round
     * trips overlap the other warps' last chunks instead of following the sum. */
    constexpr int OUTS = MT * NT * 2;
    static_assert(OUTS <= KS, "a warp per output pair of a lane");
    auto finish = [&](int j) {
        ec_qmma_rows<MT> r = ec_qmma_rows_of<MT, SILU>(group(j), out_rows, g);
        ec_qmma_out o = {};
        int ia = 0;   /* the pair's entry h in the flat fragment; 2 + h is its row b */
        int tile = 0; /* the pair's 16-row tile of the weight */
#pragma unroll
        for (int m = 0; m < MT; m++)
#pragma unroll
            for (int n = 0; n < NT; n++)
#pragma unroll
                for (int h = 0; h < 2; h++)
                    if ((m * NT + n) * 2 + h == warp) {
                        o = ec_qmma_out_of<F, MT, MODE>(w, r, m, 8 * n + 2 * t + h, batch, y, ldy);
                        ia = (m * NT + n) * 4 + h;
                        tile = group(j) * MT + m;
                    }
#pragma unroll
        for (int i = 0; i < NACC; i++)
            s_red[warp][i][lane] = flat[i];
        __syncthreads();
        if (warp < OUTS) {
            float sa = s_red[0][ia][lane], sb = s_red[0][ia + 2][lane];
#pragma unroll
            for (int k = 1; k < KS; k++) {
                sa += s_red[k][ia][lane];
                sb += s_red[k][ia + 2][lane];
            }
            float sq = ec_qmma_put<T, MODE>(o, sa, sb, y, ldy);
            if (MODE == EC_GEMV_ADD && qc.sumsq_out) { /* batch 1 (checked) */
                sq = ec_sum_over_g(sq); /* the tile's 16 rows: the 8 lanes of this t */
                if (g == 0 && o.tok == 0 && tile * 16 < out_rows) qc.sumsq_out[tile] = sq;
            }
        }
        if (j + 1 < mygroups) __syncthreads(); /* s_red is free for the next group */
#pragma unroll
        for (int i = 0; i < NACC; i++)
            flat[i] = 0.0f;
    };

    int uj = 0, ui = 0; /* the use cursor */
    for (int s0 = 0; s0 < total; s0 += S) {
#pragma unroll
        for (int u = 0; u < S; u++) {
            if (s0 + u >= total) break;
            use(ui, st[u]);
            if (s0 + u + S < total) {
                request(st[u]);
                if (release_late && s0 + u + S == total - 1) ec_release_next();
            }
            if (++ui == per) {
                finish(uj);
                ui = 0;
                uj++;
            }
        }
    }
}

/* ---- tensor cores, 17..64 token rows: x staged in shared memory, columns split across CTAs ----
 * At 64 tokens the activations outweigh the weights: a 128-column chunk of x is 16 KB against
 * 2 KB of nf4 codes for 32 rows, so qmma_kernel's CTAs, each re-reading x from L2 for their 32
 * rows, streamed the weights at 0.3 TB/s. Here a CTA of
 * 4 warps holds 128 weight rows (64 features for SiLU·mul), each warp 2 row tiles of
 * the same column chunk, and copies the chunk's x tile once into shared memory (cp.async, double
 * buffered) for all of them. The weights still travel through registers, S chunks deep per warp,
 * first requests before the PDL wait.
 * On sm_90a the kernel runs as two warpgroups instead (WG = true, ec_qgemm_cfg): 8 warps of one
 * row tile each, whose A fragments (the same decode) feed wgmma against the x tile in shared
 * memory, stored there in wgmma's layout (ec_qwg_store_x). One wgmma per k-step replaces 8 (NT 8)
 * mma.sync per warp, runs while the warp stages the next x tile and requests weights, and leaves
 * registers for 16 warps per SM instead of 8. Both builds stay bound by the latency of each
 * warp's decode and address arithmetic (ncu: DRAM at ~20 %, 12 cycles per issued instruction
 * here); this one is 2-4 % faster per step at 64 tokens.
 * 128 rows per CTA leave too few CTAs for a 4096-row weight, so the work is split stream-K style:
 * the units (row block, chunk) in row-block order are dealt out in equal contiguous runs of
 * per_cta, one run per CTA of a one-wave grid. A CTA that holds a whole row block writes it;
 * one that holds part of it stores its partial sums in the split scratch (slot 0 for the block
 * it starts in, slot 1 for the one it ends in), and the last of the block's CTAs to arrive
 * (a counter per row block, reset by that CTA) adds the partials in CTA order, so the sums do
 * not depend on timing, and writes the block. A launch may also split the tokens into groups
 * (blockIdx.y, 8 NT tokens each; ec_qlaunch_mma says when), each with its own partials and
 * counters. */
enum {
    QGEMM_STAGES = 2, /* weight chunks in flight per warp */
    QGEMM_ROWS = 128  /* weight rows of a CTA, which share its x tile */
};
/* Warps per CTA and row tiles per warp: 4 x 2 with mma.sync, two warpgroups of 4 x 1 with wgmma
 * (whose m64 tile is one row tile per warp). */
template <bool WG> struct ec_qgemm_cfg {
    static constexpr int WARPS = WG ? 8 : 4, MT = WG ? 1 : QMMA_MTILES;
    static_assert(WARPS * MT * 16 == QGEMM_ROWS, "a CTA's rows");
    static_assert(2 * WARPS * MT * 8 * 4 * 32 == EC_CUDA_QSPLIT_FLOATS_PER_CTA,
                  "kernels_quant.h's scratch size: 2 slots of partial sums at NT 8");
};

/* The x tile of one chunk: [token][16-byte granule of columns c0 + 8q .. +8], granule q of
 * token tok stored at ec_qgemm_swz(q, tok). A lane (g, t) of the MMA loop reads, for k-steps 2kk
 * and 2kk + 1, granule 4t + kk of token 8n + g (its B fragments, in qmma_kernel's permuted k
 * order). 16-byte shared loads are served a quarter warp (lanes g = 2j, 2j + 1, t = 0..3) at a
 * time, and without the swizzle those 8 lanes meet in 4 bank groups (the token rows are 256 B
 * apart, granules 4t + kk and 4(t + 2) + kk 128 B): bit 3 of q moved into bit 1 and the token's
 * parity into bit 0 give each of them its own group, one wavefront per quarter (measured:
 * nf4 linears 214 -> 200 µs per Llama-2-7B layer at 64 tokens, against q ^ (tok & 3)). Past the
 * batch or the columns the tile holds zeros. */
template <int NT> struct __align__(128) ec_qgemm_xtile {
    uint4 q[NT * 8][QMMA_CHUNK / 8];
};

__device__ __forceinline__ int ec_qgemm_swz(int q, int tok) /* a permutation of q in 0..15 */
{
    return q ^ ((q >> 2) & 2) ^ (tok & 1);
}

/* Columns col .. col + 8 of token tok's activations; zeros past the batch and the columns. VEC:
 * cols % 32 == 0 and 16-byte aligned rows, so a granule is all in or all out. Read through L2
 * only (ld.global.cg): with __ldg the wgmma build got test_cuda_model's batch-4 nf4 prefill wrong
 * under PDL and right without it. A stale L1 line of x (the kernel starts before its predecessor
 * has written x) is the inferred cause, not a proven one. */
template <typename T, bool VEC>
__device__ __forceinline__ uint4 ec_qgemm_x8(const T *__restrict__ x, int ldx, int nb, int cols,
                                             int tok, int col)
{
    if constexpr (VEC) {
        return tok < nb && col < cols
                   ? __ldcg(reinterpret_cast<const uint4 *>(x + (size_t)tok * ldx + col))
                   : make_uint4(0, 0, 0, 0);
    } else {
        uint32_t h[8];
#pragma unroll
        for (int e = 0; e < 8; e++)
            h[e] = tok < nb && col + e < cols
                       ? __ldcg(reinterpret_cast<const unsigned short *>(x) +
                                (size_t)tok * ldx + col + e)
                       : 0u;
        return make_uint4(h[0] | h[1] << 16, h[2] | h[3] << 16, h[4] | h[5] << 16,
                          h[6] | h[7] << 16);
    }
}

template <typename T, int NT, bool VEC>
__device__ __forceinline__ void ec_qgemm_stage_x(ec_qgemm_xtile<NT> &dst, const T *__restrict__ x,
                                                 int ldx, int nb, int cols, int c0)
{
    /* the CTA's size as a constant: a thread's granule q is the same in every round */
    constexpr int THREADS = ec_qgemm_cfg<false>::WARPS * 32;
    for (int i = threadIdx.x; i < NT * 8 * (QMMA_CHUNK / 8); i += THREADS) {
        int tok = i / (QMMA_CHUNK / 8), q = i % (QMMA_CHUNK / 8), col = c0 + 8 * q;
        uint4 *d = &dst.q[tok][ec_qgemm_swz(q, tok)];
        if constexpr (VEC) {
            bool in = tok < nb && col < cols;
            ec_cp_async16(d, in ? x + (size_t)tok * ldx + col : x, in);
        } else {
            *d = ec_qgemm_x8<T, false>(x, ldx, nb, cols, tok, col);
        }
    }
    ec_cp_async_commit();
}

/* The x tile for wgmma (WG): its B operand of k-step s (0..7) at byte s * 256 NT, core matrices
 * [half j of the step's 16 k][token group n][token r][8 k] (the leading byte offset 128 NT, the
 * stride byte offset 128). The A fragments take k in qmma's permuted order (columns 32t + 4s ..
 * + 3 for lane t at step s), so B must too: position 2t + e of half j is column 32t + 4s + 2j + e.
 * A thread copies 16-byte pieces, columns 32t + 8sp .. + 8 of one token: 4-byte parts of four
 * core matrices (steps 2sp and 2sp + 1, both halves). The 32 lanes of a warp are t (0..3) x
 * r (0..7) of one token group n, so each store meets 32 different banks; a thread's token, t and
 * its pieces' sp (one every 8 / NT) are the same for every chunk (ec_qwg_xlane). The pieces are
 * fetched into registers before the MMAs of the current chunk and stored after them. */
enum { QWG_X_ITEMS = 4 }; /* 16-byte pieces per thread of a 64-token tile (half at NT 4) */
struct ec_qwg_xlane {
    int tok, col, word; /* token row, first piece's column in the chunk, its first word */
};
template <int NT> __device__ __forceinline__ ec_qwg_xlane ec_qwg_xlane_of()
{
    int t = threadIdx.x & 3, r = (threadIdx.x >> 2) & 7, n = (threadIdx.x >> 5) % NT,
        sp = (threadIdx.x >> 5) / NT;
    return {8 * n + r, 32 * t + 8 * sp, ((4 * sp) * NT + n) * 32 + 4 * r + t};
}
template <typename T, int NT, bool VEC>
__device__ __forceinline__ void ec_qwg_fetch_x(uint4 (&v)[QWG_X_ITEMS], ec_qwg_xlane xl,
                                               const T *__restrict__ x, int ldx, int nb, int cols,
                                               int c0)
{
#pragma unroll
    for (int k = 0; k < NT / 2; k++) /* sp advances by 8 / NT: columns by 64 / NT */
        v[k] = ec_qgemm_x8<T, VEC>(x, ldx, nb, cols, xl.tok, c0 + xl.col + k * (64 / NT));
}
template <int NT>
__device__ __forceinline__ void ec_qwg_store_x(ec_qgemm_xtile<NT> &dst, ec_qwg_xlane xl,
                                               const uint4 (&v)[QWG_X_ITEMS])
{
    uint32_t *words = reinterpret_cast<uint32_t *>(&dst) + xl.word;
    /* word of (step 2sp + h, half j): core matrix (2 (2sp + h) + j) NT + n, 32 words each */
#pragma unroll
    for (int k = 0; k < NT / 2; k++) {
        uint32_t *at = words + k * (8 / NT) * 4 * NT * 32;
        at[0] = v[k].x;
        at[NT * 32] = v[k].y;
        at[2 * NT * 32] = v[k].z;
        at[3 * NT * 32] = v[k].w;
    }
}

template <class F, typename T, int NT, int S, int MODE, bool VEC, bool WG>
__global__ void __launch_bounds__(ec_qgemm_cfg<WG>::WARPS * 32, 2)
    qgemm_kernel(const ec_cuda_packed_weight w, const T *__restrict__ x, int ldx, int nb, void *y,
                 int ldy, const ec_cuda_qsplit split, int per_cta)
{
    constexpr int WARPS = ec_qgemm_cfg<WG>::WARPS, MT = ec_qgemm_cfg<WG>::MT, NACC = MT * NT * 4;
    constexpr bool SILU = MODE == EC_GEMV_SILU_MUL;
    static_assert(WARPS * 32 >= QTAB_MIN_THREADS, "ec_fetch_qtables needs the threads");
    __shared__ float s_tab[EC_CUDA_QTABLES_FLOATS];
    extern __shared__ __align__(16) uint32_t s_pairs[]; /* F::PAIR_BYTES */
    __shared__ ec_qgemm_xtile<NT> s_x[2];
    __shared__ bool s_last;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    int out_rows = SILU ? w.rows / 2 : w.rows;
    int nchunks = (w.cols + QMMA_CHUNK - 1) / QMMA_CHUNK;
    int nblocks = (w.rows + QGEMM_ROWS - 1) / QGEMM_ROWS, units = nblocks * nchunks;
    /* Token group blockIdx.y: rows [8 NT y, 8 NT (y + 1)) of x and y (see ec_qlaunch_gemm_nt) */
    int tok0 = (int)blockIdx.y * 8 * NT;
    x += (size_t)tok0 * ldx;
    y = (char *)y + (size_t)tok0 * ldy * (SILU ? sizeof(T) : sizeof(float));
    nb = nb - tok0 < 8 * NT ? nb - tok0 : 8 * NT;
    int u0 = blockIdx.x * per_cta, total = units - u0 < per_cta ? units - u0 : per_cta;
    /* Unit u is chunk u % nchunks of row block u / nchunks; the cursors below step through
     * (row block, chunk) pairs without dividing. rows_of: this warp's rows in row block rb. */
    struct cursor {
        int rb, chunk;
    };
    auto advance = [&](cursor &k) {
        if (++k.chunk == nchunks) {
            k.chunk = 0;
            k.rb++;
        }
    };
    auto rows_of = [&](int rb) {
        return ec_qmma_rows_of<MT, SILU>(rb * WARPS + warp, out_rows, g);
    };

    float acc[MT][NT][4];
    float *flat = &acc[0][0][0];
#pragma unroll
    for (int i = 0; i < NACC; i++)
        flat[i] = 0.0f;

    ec_qtables_regs tables = ec_fetch_qtables<F>(w);
    ec_qmma_stage<F, MT> st[S];
    cursor rq = {u0 / nchunks, u0 % nchunks}; /* the request cursor */
    auto request = [&](ec_qmma_stage<F, MT> &s) {
        ec_qmma_rows<MT> r = rows_of(rq.rb);
        int c = rq.chunk * QMMA_CHUNK + 32 * t;
        advance(rq);
#pragma unroll
        for (int m = 0; m < MT; m++) {
            F::template load_piece<VEC>(w, r.a[m], c, c < w.cols && r.va[m], s.a[m]);
            F::template load_piece<VEC>(w, r.b[m], c, c < w.cols && r.vb[m], s.b[m]);
        }
    };
#pragma unroll
    for (int u = 0; u < S; u++)
        if (u < total) request(st[u]);
    ec_store_qtables<F, T>(tables, s_tab, s_pairs);
    ec_wait_inputs(false); /* x, y and the split scratch belong to the step (see ec_launch) */
    cursor at = {u0 / nchunks, u0 % nchunks}; /* the unit in use */
    uint4 xnext[QWG_X_ITEMS]; /* WG: the next chunk's x on its way to shared memory */
    ec_qwg_xlane xl = ec_qwg_xlane_of<NT>();
    if constexpr (WG) {
        ec_qwg_fetch_x<T, NT, VEC>(xnext, xl, x, ldx, nb, w.cols, at.chunk * QMMA_CHUNK);
        ec_qwg_store_x<NT>(s_x[0], xl, xnext);
        ec_fence_proxy_async();
        __syncthreads();
    } else {
        ec_qgemm_stage_x<T, NT, VEC>(s_x[0], x, ldx, nb, w.cols, at.chunk * QMMA_CHUNK);
    }

    auto use = [&](const ec_qmma_stage<F, MT> &s, const ec_qgemm_xtile<NT> &xt) {
        uint32_t sa[MT], sb[MT];
        ec_qmma_scales<F, T, MT>(s_tab, s, sa, sb);
#pragma unroll
        for (int kk = 0; kk < 4; kk++) {
            uint4 bx[NT]; /* k-steps 2kk (.x, .y) and 2kk + 1 (.z, .w) of token 8n + g */
#pragma unroll
            for (int n = 0; n < NT; n++)
                bx[n] = xt.q[8 * n + g][ec_qgemm_swz(4 * t + kk, g)];
#pragma unroll
            for (int h = 0; h < 2; h++) {
                uint32_t a[MT][4];
                ec_qmma_afrags<F, T, MT>(s, sa, sb, 2 * kk + h, s_pairs, a);
#pragma unroll
                for (int n = 0; n < NT; n++) {
                    uint2 b = h ? make_uint2(bx[n].z, bx[n].w) : make_uint2(bx[n].x, bx[n].y);
#pragma unroll
                    for (int m = 0; m < MT; m++)
                        ec_mma16816<T>(acc[m][n], a[m], b);
                }
            }
        }
    };

    /* WG: the chunk's 8 k-steps decoded into afr, then one wgmma each, issued and committed as a
     * batch. The code writes afr again only after the wait (the next chunk's decode); the sums
     * are held at the wait (hold_sums), so that no read of them moves above it. */
    uint32_t afr[8][MT][4];
    auto issue_wg = [&](const ec_qmma_stage<F, MT> &s, const ec_qgemm_xtile<NT> &xt) {
        uint32_t sa[MT], sb[MT];
        ec_qmma_scales<F, T, MT>(s_tab, s, sa, sb);
#pragma unroll
        for (int k = 0; k < 8; k++)
            ec_qmma_afrags<F, T, MT>(s, sa, sb, k, s_pairs, afr[k]);
        ec_wgmma_fence();
        uint64_t desc = ec_wgmma_desc(&xt, 128 * NT, 128);
#pragma unroll
        for (int k = 0; k < 8; k++)
            ec_wgmma_rs<T, NT>(acc[0], afr[k][0], desc + (uint64_t)(k * 256 * NT / 16));
        ec_wgmma_commit();
    };
    auto hold_sums = [&]() {
#pragma unroll
        for (int i = 0; i < NACC; i++)
            ec_wgmma_hold(flat[i]);
    };

    /* The end of this CTA's part of row block rb: write it, or store the partial and, if the
     * last to arrive, add all partials in CTA order and write the sum. */
    auto finish = [&](int rb) {
        int first = rb * nchunks / per_cta,
            last = ((rb + 1) * nchunks - 1) / per_cta;
        if (first < last) {
            auto partial = [&](int cta) {
                int slot = cta * per_cta >= rb * nchunks ? 0 : 1; /* started in rb, or ends in it */
                size_t at = ((blockIdx.y * gridDim.x + cta) * 2 + slot) * WARPS + warp;
                return split.partial + at * NACC * 32;
            };
            float *mine = partial(blockIdx.x);
#pragma unroll
            for (int i = 0; i < NACC; i++)
                mine[i * 32 + lane] = flat[i];
            __threadfence();
            __syncthreads();
            if (threadIdx.x == 0) {
                unsigned *arrived = split.arrived + blockIdx.y * nblocks + rb;
                s_last = atomicAdd(arrived, 1u) == (unsigned)(last - first);
                if (s_last) *arrived = 0;
            }
            __syncthreads();
            if (s_last) {
                __threadfence();
#pragma unroll
                for (int i = 0; i < NACC; i++)
                    flat[i] = 0.0f;
                for (int cta = first; cta <= last; cta++) {
                    const float *p = partial(cta);
#pragma unroll
                    for (int i = 0; i < NACC; i++)
                        flat[i] += __ldcg(p + i * 32 + lane);
                }
            }
        }
        if (first == last || s_last)
            ec_qmma_write<F, T, MT, NT, MODE>(w, rows_of(rb), acc, t, nb, y, ldy);
#pragma unroll
        for (int i = 0; i < NACC; i++)
            flat[i] = 0.0f;
    };

    for (int s0 = 0; s0 < total; s0 += S) {
#pragma unroll
        for (int v = 0; v < S; v++) {
            int i = s0 + v;
            if (i >= total) break;
            bool block_ends = at.chunk + 1 == nchunks;
            int next_c0 = block_ends ? 0 : (at.chunk + 1) * QMMA_CHUNK;
            if constexpr (WG) {
                /* s_x[i & 1] is ready; the next x travels while the tensor cores work. The proxy
                 * fence is a memory barrier (MEMBAR.ALL.CTA), so the weight requests follow it
                 * rather than precede it. */
                if (i + 1 < total)
                    ec_qwg_fetch_x<T, NT, VEC>(xnext, xl, x, ldx, nb, w.cols, next_c0);
                issue_wg(st[v], s_x[i & 1]);
                if (i + 1 < total) {
                    ec_qwg_store_x<NT>(s_x[(i + 1) & 1], xl, xnext);
                    ec_fence_proxy_async();
                }
                if (i + S < total) request(st[v]);
                ec_wgmma_wait<0>();
                hold_sums();
                if (block_ends || i + 1 == total) finish(at.rb);
                advance(at);
                __syncthreads(); /* s_x[(i + 1) & 1] is complete, s_x[i & 1] free */
                continue;
            }
            if (i + 1 < total) { /* the next chunk's x into the other buffer, then wait for ours */
                ec_qgemm_stage_x<T, NT, VEC>(s_x[(i + 1) & 1], x, ldx, nb, w.cols, next_c0);
                ec_cp_async_wait<1>();
            } else {
                ec_cp_async_wait<0>();
            }
            __syncthreads();
            use(st[v], s_x[i & 1]);
            if (i + S < total) request(st[v]);
            if (block_ends || i + 1 == total) finish(at.rb);
            advance(at);
            __syncthreads(); /* s_x[i & 1] is free for chunk i + 2 */
        }
    }
}

/* ---- launch: tensor cores at every batch ---- */

/* Row groups of MT row tiles (16 weight rows, 8 SiLU·mul features each) of a weight. */
template <int MODE> static int ec_qmma_groups(const ec_cuda_packed_weight &w, int mt)
{
    int out_rows = MODE == EC_GEMV_SILU_MUL ? w.rows / 2 : w.rows;
    int per_group = mt * (MODE == EC_GEMV_SILU_MUL ? 8 : 16);
    return (out_rows + per_group - 1) / per_group;
}

/* Up to 16 token rows: 8 warps split the columns, each with F::mma_stages(MT, NT) chunks in
 * flight, in CTAs bounded for CTAS per SM. */
template <class F, typename T, int MT, int NT, int MODE, bool VEC, bool NORM, int CTAS>
static cudaError_t ec_qlaunch_qmma(const ec_cuda_packed_weight &w, const T *x, int ldx, int batch,
                                   void *y, int ldy, const ec_qcarry_args &qc, cudaStream_t stream)
{
    constexpr int KS = 8;
    constexpr auto kernel =
        qmma_kernel<F, T, MT, NT, KS, F::mma_stages(MT, NT), MODE, VEC, NORM, CTAS>;
    constexpr size_t most = F::PAIR_BYTES + (NORM ? EC_CUDA_QCARRY_MAX_COLS * sizeof(T) : 0);
    cudaError_t e = ec_smem_optin<kernel>(most);
    if (e != cudaSuccess) return e;
    size_t smem = F::PAIR_BYTES + (NORM ? (size_t)w.cols * sizeof(T) : 0);
    int groups = ec_qmma_groups<MODE>(w, MT);
    return ec_launch(kernel, dim3(ec_stream_blocks<kernel>(groups, 1, KS * 32, smem)),
                     dim3(KS * 32), smem, stream, w, x, ldx, batch, y, ldy, qc);
}

/* A kernel of one token tile (NT 1) is bounded to F::mma_ctas(MT, batch == 1) CTAs per SM, one
 * of two token tiles not at all. A format whose bound does not depend on the batch compiles one
 * kernel for both. */
template <class F, typename T, int MT, int NT, int MODE, bool VEC, bool NORM = false>
static cudaError_t ec_qlaunch_mma_nt(const ec_cuda_packed_weight &w, const T *x, int ldx,
                                     int batch, void *y, int ldy, const ec_qcarry_args &qc,
                                     cudaStream_t stream)
{
    constexpr int at_batch1 = NT == 1 ? F::mma_ctas(MT, true) : 0;
    constexpr int above = NT == 1 ? F::mma_ctas(MT, false) : 0;
    return batch == 1
               ? ec_qlaunch_qmma<F, T, MT, NT, MODE, VEC, NORM, at_batch1>(w, x, ldx, batch, y,
                                                                           ldy, qc, stream)
               : ec_qlaunch_qmma<F, T, MT, NT, MODE, VEC, NORM, above>(w, x, ldx, batch, y, ldy,
                                                                       qc, stream);
}

/* qgemm_kernel over `groups` x 8 x NT token rows per launch (token group blockIdx.y; more in
 * launches of 64): runs of per_cta units for a one-wave grid, longer where the split scratch holds
 * fewer CTAs, whole row blocks without one. A run is at least QGEMM_MIN_RUN chunks: a partial
 * (32 KB at 64 tokens) then follows at least as many bytes of nf4 weights, and a row block has at
 * most cols / 512 partials for its last CTA to add one after another (with runs of one chunk,
 * TinyLlama's 2048-column weights gave 16 per block, whose traffic and serial sum outweighed the
 * weights). */
enum { QGEMM_MIN_RUN = 4, QGEMM_MAX_PARTIALS = 4 };
template <class F, typename T, int NT, int MODE, bool VEC, bool WG>
static int ec_qgemm_grid(const ec_cuda_packed_weight &w, const ec_cuda_qsplit *split, int groups,
                         int *per_cta)
{
    constexpr auto kernel = qgemm_kernel<F, T, NT, QGEMM_STAGES, MODE, VEC, WG>;
    constexpr int threads = ec_qgemm_cfg<WG>::WARPS * 32;
    int nchunks = (w.cols + QMMA_CHUNK - 1) / QMMA_CHUNK;
    int units = (w.rows + QGEMM_ROWS - 1) / QGEMM_ROWS * nchunks;
    *per_cta = nchunks;
    if (split && split->ctas > 0) {
        /* the CTAs of one group that a one-wave grid, and the scratch, hold */
        int wave =
            (int)ec_stream_blocks<kernel>(groups * units, 1, threads, F::PAIR_BYTES);
        int hold = split->ctas * (EC_CUDA_QMMA_MAX_BATCH / (8 * NT)) / groups;
        int run = (groups * units + wave - 1) / wave;
        if (run < (units + hold - 1) / hold) run = (units + hold - 1) / hold;
        *per_cta = run >= QGEMM_MIN_RUN ? run : nchunks < QGEMM_MIN_RUN ? nchunks : QGEMM_MIN_RUN;
    }
    return (units + *per_cta - 1) / *per_cta;
}

template <class F, typename T, int NT, int MODE, bool VEC, bool WG>
static cudaError_t ec_qlaunch_gemm_nt(const ec_cuda_packed_weight &w, const T *x, int ldx,
                                      int batch, void *y, int ldy, const ec_cuda_qsplit *split,
                                      int groups, cudaStream_t stream)
{
    constexpr auto kernel = qgemm_kernel<F, T, NT, QGEMM_STAGES, MODE, VEC, WG>;
    cudaError_t e = ec_smem_optin<kernel>(F::PAIR_BYTES);
    if (e != cudaSuccess) return e;
    int per_cta, grid = ec_qgemm_grid<F, T, NT, MODE, VEC, WG>(w, split, groups, &per_cta);
    ec_cuda_qsplit none = {NULL, NULL, 0};
    size_t y_elem = MODE == EC_GEMV_SILU_MUL ? sizeof(T) : sizeof(float);
    int per_launch = groups * 8 * NT;
    for (int b0 = 0; b0 < batch; b0 += per_launch) {
        int nb = batch - b0 < per_launch ? batch - b0 : per_launch;
        e = ec_launch(kernel, dim3((unsigned)grid, (unsigned)((nb + 8 * NT - 1) / (8 * NT))),
                      dim3(ec_qgemm_cfg<WG>::WARPS * 32), F::PAIR_BYTES, stream, w,
                      x + (size_t)b0 * ldx, ldx,
                      nb, (void *)((char *)y + (size_t)b0 * ldy * y_elem), ldy,
                      split ? *split : none, per_cta);
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}

/* qgemm_kernel over up to 8 x NT token rows: one group of NT column tiles, or two of NT / 2, each
 * decoding the weights again, where one group's grid would leave SMs without a CTA (narrow
 * weights: TinyLlama's qkv and o make 64-80 of them at 64 tokens) or a row block would collect
 * more than QGEMM_MAX_PARTIALS partials (at 64 tokens o and down of the 7B shapes, down of the
 * small ones: 8-15) for its last CTA to add one after another: the halves' partials are half the
 * bytes, and their runs are longer. Taken at 33-64 tokens only:
 * at 17-32, groups of 16 tokens made nf4 6-16 % slower per step (its decode, then paid once per
 * 16 tokens, outweighs the parallelism; fp8 gained 2-5 %). */
template <class F, typename T, int NT, int MODE, bool VEC, bool WG>
static cudaError_t ec_qlaunch_gemm(const ec_cuda_packed_weight &w, const T *x, int ldx, int batch,
                                   void *y, int ldy, const ec_cuda_qsplit *split,
                                   cudaStream_t stream)
{
    int per_cta, grid = ec_qgemm_grid<F, T, NT, MODE, VEC, WG>(w, split, 1, &per_cta);
    int nchunks = (w.cols + QMMA_CHUNK - 1) / QMMA_CHUNK;
    if (grid < ec_sm_count() || (nchunks + per_cta - 1) / per_cta > QGEMM_MAX_PARTIALS)
        return ec_qlaunch_gemm_nt<F, T, NT / EC_CUDA_QSPLIT_GROUPS, MODE, VEC, WG>(
            w, x, ldx, batch, y, ldy, split, EC_CUDA_QSPLIT_GROUPS, stream);
    return ec_qlaunch_gemm_nt<F, T, NT, MODE, VEC, WG>(w, x, ldx, batch, y, ldy, split, 1,
                                                       stream);
}

/* Whether qgemm_kernel runs on wgmma: built for sm_90a (ECOCOMPUTE_CUDA_WGMMA, CMakeLists.txt),
 * on a device of compute capability 9.0, unless a test asks for mma.sync
 * (ec_cuda_test_path_choice, read at every launch, so one process can run both kernels). */
static inline bool ec_qgemm_wgmma_usable()
{
#ifdef ECOCOMPUTE_CUDA_WGMMA
    if (ec_cuda_test_path_choice.qgemm_mma_sync) return false;
    return ec_per_device([](int dev) {
        int major = 0, minor = 0;
        return cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) ==
                   cudaSuccess &&
               cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) ==
                   cudaSuccess &&
               major == 9 && minor == 0;
    }) != 0;
#else
    return false;
#endif
}

/* Column tiles of 8 tokens: 1 or 2 of them in qmma_kernel (up to 16 token rows), 4 or 8 in
 * qgemm_kernel (up to 32, 64, and chunks of 64 above). */
template <class F, typename T, int MODE, bool VEC>
static cudaError_t ec_qlaunch_mma(const ec_cuda_packed_weight &w, const T *x, int ldx, int batch,
                                  void *y, int ldy, const ec_cuda_qsplit *split,
                                  const ec_qcarry_args &qc, cudaStream_t stream)
{
    if (batch <= 8) {
        /* Two row tiles per warp share each activation fragment; a weight with fewer such row
         * groups than the device has SMs (a CTA per group: TinyLlama's o and down have 64) takes
         * one, so that every SM streams, and so does every weight of a format whose policy
         * says so at batch 1 (F::ONE_ROW_TILE_AT_BATCH1). */
        bool narrow = (F::ONE_ROW_TILE_AT_BATCH1 && batch == 1) ||
                      ec_qmma_groups<MODE>(w, QMMA_MTILES) < ec_sm_count();
        if constexpr (F::CARRY_NORM && VEC && MODE != EC_GEMV_ADD)
            if (qc.sumsq) /* a carried norm's consumer (checked: batch 1) */
                return narrow ? ec_qlaunch_mma_nt<F, T, 1, 1, MODE, true, true>(
                                    w, x, ldx, batch, y, ldy, qc, stream)
                              : ec_qlaunch_mma_nt<F, T, QMMA_MTILES, 1, MODE, true, true>(
                                    w, x, ldx, batch, y, ldy, qc, stream);
        if (narrow)
            return ec_qlaunch_mma_nt<F, T, 1, 1, MODE, VEC>(w, x, ldx, batch, y, ldy, qc, stream);
        return ec_qlaunch_mma_nt<F, T, QMMA_MTILES, 1, MODE, VEC>(w, x, ldx, batch, y, ldy, qc,
                                                                  stream);
    }
    if (batch <= 16)
        return ec_qlaunch_mma_nt<F, T, QMMA_MTILES, 2, MODE, VEC>(w, x, ldx, batch, y, ldy, qc,
                                                                  stream);
    if (ec_qgemm_wgmma_usable()) {
        if (batch <= 32)
            return ec_qlaunch_gemm_nt<F, T, 4, MODE, VEC, true>(w, x, ldx, batch, y, ldy, split,
                                                                1, stream);
        return ec_qlaunch_gemm<F, T, 8, MODE, VEC, true>(w, x, ldx, batch, y, ldy, split, stream);
    }
    if (batch <= 32)
        return ec_qlaunch_gemm_nt<F, T, 4, MODE, VEC, false>(w, x, ldx, batch, y, ldy, split, 1,
                                                             stream);
    return ec_qlaunch_gemm<F, T, 8, MODE, VEC, false>(w, x, ldx, batch, y, ldy, split, stream);
}
static_assert(EC_CUDA_QMMA_MAX_BATCH == 64, "ec_qlaunch_gemm_nt's widest tile is 8 x 8 tokens");

template <class F, typename T, int MODE>
static cudaError_t ec_qlaunch_mode(const ec_cuda_packed_weight &w, const T *x, int ldx, int batch,
                                   void *y, int ldy, const ec_cuda_qsplit *split,
                                   const ec_qcarry_args &qc, cudaStream_t stream)
{
    /* 16-byte loads need rows of codes and of activations on 16-byte boundaries (a carried
     * norm's row: checked by ec_cuda_packed_linear_fused). */
    bool vec = w.cols % 32 == 0 && (ldx % 8 == 0 || qc.sumsq);
    return vec ? ec_qlaunch_mma<F, T, MODE, true>(w, x, ldx, batch, y, ldy, split, qc, stream)
               : ec_qlaunch_mma<F, T, MODE, false>(w, x, ldx, batch, y, ldy, split, qc, stream);
}

/* The fused linear of format F: dtype and mode dispatch, launch check. */
template <class F>
static int ec_qlinear_fused_format(ec_cuda_dtype t, ec_gemv_mode mode,
                                   const ec_cuda_packed_weight *w, const void *x, int ldx,
                                   int batch, void *y, int ldy, const ec_cuda_qsplit *split,
                                   const ec_cuda_qcarry *carry, cudaStream_t stream)
{
    const ec_cuda_norm *n = carry ? carry->norm : NULL;
    if (!F::CARRY_NORM && carry && (carry->sumsq_out || n))
        return ec_set_error("fused %s linear: the format does not carry the norm",
                            ec_precision_name(w->prec));
    ec_qcarry_args qc = {carry ? carry->sumsq_out : NULL, n ? n->x : NULL, n ? n->w : NULL,
                         n ? n->sumsq : NULL, n ? n->eps : 0.0f};
    return ec_dispatch_dtype(t, [&](auto tag) {
        typedef decltype(tag) T;
        const T *xt = (const T *)x;
        cudaError_t e =
            mode == EC_GEMV_STORE
                ? ec_qlaunch_mode<F, T, EC_GEMV_STORE>(*w, xt, ldx, batch, y, ldy, split, qc,
                                                       stream)
            : mode == EC_GEMV_ADD
                ? ec_qlaunch_mode<F, T, EC_GEMV_ADD>(*w, xt, ldx, batch, y, ldy, split, qc, stream)
                : ec_qlaunch_mode<F, T, EC_GEMV_SILU_MUL>(*w, xt, ldx, batch, y, ldy, split, qc,
                                                          stream);
        EC_CUDA_TRY(e, "launch of fused %s linear (batch %d, %d x %d, mode %d)",
                    ec_precision_name(w->prec), batch, w->rows, w->cols, (int)mode);
        return 0;
    });
}

#endif
