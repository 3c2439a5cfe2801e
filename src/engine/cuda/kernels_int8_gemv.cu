/* kernels_int8_gemv.cu — the fused int8 / int8-mixed GEMV of decode batches (dp4a over one pass
 * of the int8 rows, the outlier columns inside the kernel: ec_cuda_int8_gemv), and at batch 1 the
 * same GEMV quantizing its own token (ec_cuda_int8_gemv_own). Numerics: kernels_int8_act.cuh. */
#include "common/cuda_check.h"
#include "kernels_common.cuh"
#include "kernels_int8.cuh"
#include "kernels_int8_act.cuh"

#include <stdint.h>
#include <type_traits>

enum {
    I8_WARPS = 8,        /* GEMV: warps per block, two output rows per warp */
    I8_UNROLL = 4,       /* GEMV: 16-byte loads per row in flight per lane */
    OWN_VECS = 8,        /* GEMV quantizing its own token: 8-column vectors a thread holds */
    OWN_MAX_COLS = I8_WARPS * 32 * OWN_VECS * 8, /* ... so its widest input: 16384 */
};

/* Sum of the 16 int8 products of two 16-byte loads, added to acc. */
__device__ __forceinline__ int dot16(uint4 a, uint4 b, int acc)
{
    acc = __dp4a((int)a.x, (int)b.x, acc);
    acc = __dp4a((int)a.y, (int)b.y, acc);
    acc = __dp4a((int)a.z, (int)b.z, acc);
    return __dp4a((int)a.w, (int)b.w, acc);
}

__device__ __forceinline__ int warp_isum(int v)
{
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(FULL, v, o);
    return v;
}

/* Where a GEMV that quantizes its own token publishes what the prepare would have written:
 * block 0 writes the codes, the scale, the outlier mask and count, and adds to the statistics,
 * so the buffers (and test_cuda_int8's checks of them) are the same either way. */
struct int8_own {
    float threshold; /* > 0: int8-mixed's outlier columns */
    int8_t *xq;
    float *xscale;
    unsigned *mask;
    int *ocount;
    unsigned long long *stat;
};

/* Shared memory of such a GEMV: the codes [ld], then one flag byte per 8 columns, in whole
 * 32-column words (so a mask word, or a 16-column chunk's bits, is one aligned load). */
__host__ __device__ static inline int own_flags_bytes(int ld) { return 4 * ((ld + 31) / 32); }
static size_t own_smem_bytes(int ld) { return (size_t)ld + (size_t)own_flags_bytes(ld); }

/* After a block has made its codes [ld], flag words and scale in shared memory (and a barrier):
 * block 0 publishes them as the prepare would. count: this thread's share of the outlier
 * columns. Every thread of the block calls it. */
__device__ void own_publish(const uint4 *smem, int ld, float count, const int8_own &own,
                            const float *s_scale, float *scratch)
{
    if (blockIdx.x != 0) return;
    for (int i = threadIdx.x; i < ld / 16; i += blockDim.x)
        reinterpret_cast<uint4 *>(own.xq)[i] = smem[i];
    if (own.threshold > 0.0f) {
        const unsigned *words = reinterpret_cast<const unsigned *>(
            reinterpret_cast<const uint8_t *>(smem) + ld);
        for (int wd = threadIdx.x; wd < (ld + 31) / 32; wd += blockDim.x) own.mask[wd] = words[wd];
        count = ec_block_reduce<false>(count, scratch); /* exact: at most 16384 */
    }
    if (threadIdx.x == 0) {
        *own.xscale = *s_scale;
        report_outliers(own.threshold, (int)count, own.ocount, own.stat);
    }
}

/* The batch-1 prepare, done by every block of the GEMV for itself after its wait (a block of
 * I8_WARPS * 32 threads): the token x [cols] (cols % 8 == 0, at most OWN_MAX_COLS) is loaded in
 * 8-column vectors, thread t holding vectors t, t + blockDim.x, ...; then the outlier flags, one
 * block reduction for the absmax, and the codes into shared memory, with prepare_one_kernel's
 * arithmetic (the codes through act_code_rcp), and block 0 publishes them (own_publish). The
 * separate prepare launch cost 2.5-4.2 µs of every layer's int8 step after the attention and
 * after gate/up; here the token's loads overlap the weight
 * requests already in flight. Every block quantizes the whole token: with __fdiv_rn per value
 * that work made down's prologue cost more than the launch it saved. */
__device__ __forceinline__ void quantize_own(const __half *x, int cols, int ld,
                                             const int8_own &own, uint4 *smem, float *s_scale,
                                             unsigned *s_max, float *scratch)
{
    int8_t *codes = reinterpret_cast<int8_t *>(smem);
    uint8_t *flags = reinterpret_cast<uint8_t *>(smem) + ld;
    const uint4 *xv = reinterpret_cast<const uint4 *>(x);
    int nvec = cols / 8, nflags = own_flags_bytes(ld);
    bool mixed = own.threshold > 0.0f;
    uint4 v[OWN_VECS];
    unsigned f8[OWN_VECS]; /* bit q: column 8 * vector + q is an outlier */
    /* Every loop stops at the thread's last vector (o's 4,096 columns are 2 of 8): every block
     * runs this prologue after its wait. With the one-barrier absmax, o's own time fell from
     * 6.68 to 6.33 µs a layer and down's from 16.50 to 16.23. */
    load_token_vectors<OWN_VECS>(xv, nvec, v);
    if (threadIdx.x == 0) *s_max = 0;
    __syncthreads(); /* s_max cleared (the loads are in flight meanwhile) */
    float m = 0.0f, count = 0.0f;
    if (mixed) {
#pragma unroll
        for (int j = 0; j < OWN_VECS; j++) {
            if (threadIdx.x + j * blockDim.x >= nvec) break;
            float e[8];
            ec_unpack8<__half>(v[j], e);
            f8[j] = 0;
#pragma unroll
            for (int q = 0; q < 8; q++) {
                bool out = fabsf(e[q]) >= own.threshold;
                f8[j] |= (unsigned)out << q;
                if (!out) m = fmaxf(m, fabsf(e[q]));
            }
            count += (float)__popc(f8[j]);
        }
    } else { /* the max of |x| on half pairs: exact, and __hmax2 ignores a NaN as fmaxf does */
        __half2 m2 = __float2half2_rn(0.0f);
#pragma unroll
        for (int j = 0; j < OWN_VECS; j++) {
            if (threadIdx.x + j * blockDim.x >= nvec) break;
            f8[j] = 0;
            const __half2 *h = reinterpret_cast<const __half2 *>(&v[j]);
#pragma unroll
            for (int q = 0; q < 4; q++) m2 = __hmax2(m2, __habs2(h[q]));
        }
        m = fmaxf(__low2float(m2), __high2float(m2));
    }
    float absmax = ec_block_max_nonneg(m, s_max), r = __frcp_rn(absmax);
    store_token_codes<OWN_VECS>(v, f8, nvec, absmax, r, reinterpret_cast<uint2 *>(codes), flags);
    for (int i = nvec + threadIdx.x; i < nflags; i += blockDim.x) { /* the padding columns */
        if (i < ld / 8) reinterpret_cast<uint2 *>(codes)[i] = make_uint2(0, 0);
        flags[i] = 0;
    }
    if (threadIdx.x == 0) *s_scale = act_scale(absmax);
    __syncthreads();
    own_publish(smem, ld, count, own, s_scale, scratch);
}

/* As kernels_gemv.cu: a warp streams row pairs (gate row r and up row r + rows for SILU_MUL,
 * ec_stream_pairs: 16-byte evict-first weight loads, the first ones before waiting for the
 * previous kernel), the int8 activations through the read-only path. The outlier columns cost
 * no extra weight loads: the lane holding a chunk finds its outlier columns in the mask (16 bits
 * per chunk, L1-resident) and takes their codes from the chunk it already has, adding the fp16
 * products (the codes of xq are 0 there); the lanes' fp32 partial sums are then added up with
 * the int8 part's shuffles. That order differs from the CPU's ascending one by at most the fp32
 * bound of an n-term sum (the tensor-core epilogue keeps the ascending order). OWN (batch 1):
 * the block makes the codes, scale and outlier flags itself (quantize_own) and reads them from
 * shared memory; xq, xscale and mask are then unused. */
template <int B, int MODE, bool OWN>
__global__ void __launch_bounds__(I8_WARPS * 32)
    int8_gemv_kernel(const int8_t *__restrict__ w, const float *__restrict__ wscale, int rows,
                     int ld, const int8_t *__restrict__ xq, const float *__restrict__ xscale,
                     const __half *__restrict__ x, int cols, const unsigned *__restrict__ mask,
                     int8_own own, bool release, void *y, int ldy)
{
    static_assert(!OWN || B == 1, "a GEMV quantizes its own token at batch 1 only");
    extern __shared__ uint4 s_own[]; /* OWN: own_smem_bytes (the codes, then the outlier flags) */
    __shared__ float s_scale, scratch[32];
    __shared__ unsigned s_max; /* OWN: the token's absmax */
    int lane = threadIdx.x & 31, n16 = ld / 16;
    const uint4 *wv = reinterpret_cast<const uint4 *>(w);
    const uint4 *xv = reinterpret_cast<const uint4 *>(xq);
    const uint16_t *s_flags16 = reinterpret_cast<const uint16_t *>(
        reinterpret_cast<const uint8_t *>(s_own) + ld);
    bool outliers = OWN ? own.threshold > 0.0f : mask != nullptr; /* block-uniform */

    int acc0[B], acc1[B];
    float out0[B], out1[B]; /* the outlier columns' fp16 products */
    float ostep0 = 0.0f, ostep1 = 0.0f; /* their rows' dequantization steps, of pair step_pair */
    int step_pair = -1;
#pragma unroll
    for (int b = 0; b < B; b++) {
        acc0[b] = acc1[b] = 0;
        out0[b] = out1[b] = 0.0f;
    }
    /* One warp per row pair (ks = 1): pairs split over warps as in the fp16 GEMV made the small
     * shapes' batch-1 steps 1-3 % faster but the 7 B shapes' 2 % (batch 1, o and down) to 7 %
     * (batch 8) slower, and int8-mixed's outlier sums would depend on the split. */
    ec_stream_pairs<I8_UNROLL, uint4>(
        ec_gemv_pairs(MODE, rows), n16, 1,
        [&](int p, int k, uint4 &a, uint4 &c) { ec_load_pair_chunk<MODE>(wv, rows, n16, p, k, a, c); },
        [&] {
            ec_wait_inputs(release);
            if constexpr (OWN) quantize_own(x, cols, ld, own, s_own, &s_scale, &s_max, scratch);
        },
        [&](int p, int k, const uint4 &a, const uint4 &c) {
#pragma unroll
            for (int b = 0; b < B; b++) {
                uint4 xb = OWN ? s_own[k] : __ldg(xv + (size_t)b * n16 + k);
                acc0[b] = dot16(a, xb, acc0[b]);
                acc1[b] = dot16(c, xb, acc1[b]);
            }
            if (!outliers || 16 * k >= cols) return;
            unsigned bits = OWN ? s_flags16[k] : (__ldg(mask + k / 2) >> (16 * (k & 1))) & 0xffffu;
            if (!bits) return;
            if (p != step_pair) { /* the divisions once per pair, not per chunk */
                int2 r = ec_gemv_pair_rows<MODE>(p, rows);
                ostep0 = row_step(wscale, r.x);
                ostep1 = row_step(wscale, r.y);
                step_pair = p;
            }
            for (; bits; bits &= bits - 1) {
                int i = __ffs(bits) - 1, col = 16 * k + i;
                float wd0 = dequant16(chunk_byte(a, i), ostep0);
                float wd1 = dequant16(chunk_byte(c, i), ostep1);
#pragma unroll
                for (int b = 0; b < B; b++) {
                    float xo = __half2float(x[(size_t)b * cols + col]);
                    out0[b] = fmaf(xo, wd0, out0[b]);
                    out1[b] = fmaf(xo, wd1, out1[b]);
                }
            }
        },
        [&](int p) {
            int2 r = ec_gemv_pair_rows<MODE>(p, rows);
            float step0 = row_step(wscale, r.x), step1 = row_step(wscale, r.y);
#pragma unroll
            for (int b = 0; b < B; b++) {
                int i0 = warp_isum(acc0[b]), i1 = warp_isum(acc1[b]);
                float o0 = 0.0f, o1 = 0.0f;
                if (outliers) {
                    o0 = ec_warp_sum(out0[b]);
                    o1 = ec_warp_sum(out1[b]);
                }
                /* Lane b writes sequence b (registers are indexed by unrolled constants only). */
                if (lane == b) {
                    float xs = OWN ? s_scale : xscale[b];
                    ec_gemv_write<__half, MODE>(y, ldy, b, r.x, r.y,
                                                int8_output(i0, step0, xs, o0),
                                                int8_output(i1, step1, xs, o1));
                }
                acc0[b] = acc1[b] = 0;
                out0[b] = out1[b] = 0.0f;
            }
        });
}

template <int MODE>
static cudaError_t launch_gemv(int batch, cudaStream_t stream, const int8_t *w,
                               const float *wscale, int rows, int ld, const int8_t *xq,
                               const float *xscale, const __half *x, int cols,
                               const unsigned *mask, bool release, void *y, int ldy)
{
    dim3 block(I8_WARPS * 32);
    int pairs = ec_gemv_pairs(MODE, rows);
    int8_own none = {};
#define EC_I8_GEMV(B)                                                                          \
    {                                                                                          \
        unsigned blocks =                                                                      \
            ec_stream_blocks<int8_gemv_kernel<B, MODE, false>>(pairs, I8_WARPS, I8_WARPS * 32); \
        return ec_launch(int8_gemv_kernel<B, MODE, false>, dim3(blocks), block, 0, stream, w,  \
                         wscale, rows, ld, xq, xscale, x, cols, mask, none, release, y, ldy);   \
    }
    switch (batch) {
    case 1: EC_I8_GEMV(1);
    case 2: EC_I8_GEMV(2);
    case 3: EC_I8_GEMV(3);
    case 4: EC_I8_GEMV(4);
    case 5: EC_I8_GEMV(5);
    case 6: EC_I8_GEMV(6);
    case 7: EC_I8_GEMV(7);
    default: EC_I8_GEMV(8);
    }
#undef EC_I8_GEMV
}

static_assert(EC_CUDA_GEMV_MAX_BATCH == 8, "launch_gemv instantiates batches 1..8");

/* launch(std::integral_constant<int, MODE>()) for the run-time mode. */
template <typename Launch> static cudaError_t by_mode(ec_gemv_mode mode, Launch launch)
{
    if (mode == EC_GEMV_STORE) return launch(std::integral_constant<int, EC_GEMV_STORE>());
    if (mode == EC_GEMV_ADD) return launch(std::integral_constant<int, EC_GEMV_ADD>());
    return launch(std::integral_constant<int, EC_GEMV_SILU_MUL>());
}

static bool gemv_shape_ok(int batch, int rows, int cols, int ld, int ldy)
{
    if (batch >= 1 && batch <= EC_CUDA_GEMV_MAX_BATCH && ld % 16 == 0 && ld >= cols && rows >= 1 &&
        ldy >= rows)
        return true;
    ec_set_error("int8 GEMV: unsupported shape batch %d, rows %d, cols %d, ld %d (needs batch "
                 "1-%d, ld a multiple of 16)", batch, rows, cols, ld, EC_CUDA_GEMV_MAX_BATCH);
    return false;
}

extern "C" int ec_cuda_int8_gemv(ec_gemv_mode mode, const int8_t *w, const float *wscale,
                                 int rows, int ld, const int8_t *xq, const float *xscale,
                                 const void *x, int cols, const unsigned *mask, int batch,
                                 int release_next, void *y, int ldy, cudaStream_t stream)
{
    if (!gemv_shape_ok(batch, rows, cols, ld, ldy)) return -1;
    cudaError_t e = by_mode(mode, [&](auto m) {
        return launch_gemv<decltype(m)::value>(batch, stream, w, wscale, rows, ld, xq, xscale,
                                               (const __half *)x, cols, mask, release_next != 0, y,
                                               ldy);
    });
    EC_CUDA_TRY(e, "launch of int8 GEMV (batch %d, %d x %d)", batch, rows, cols);
    return 0;
}

extern "C" int ec_cuda_int8_gemv_own_fits(int cols, const void *x)
{
    return cols % 8 == 0 && cols <= OWN_MAX_COLS && (uintptr_t)x % 16 == 0;
}

template <int MODE>
static cudaError_t launch_gemv_own(cudaStream_t stream, const int8_t *w, const float *wscale,
                                   int rows, int ld, const __half *x, int cols, int8_own own,
                                   void *y, int ldy)
{
    /* the residency for the widest token (the blocks per SM are bound by registers anyway) */
    unsigned blocks = ec_stream_blocks<int8_gemv_kernel<1, MODE, true>>(
        ec_gemv_pairs(MODE, rows), I8_WARPS, I8_WARPS * 32, own_smem_bytes(OWN_MAX_COLS));
    return ec_launch(int8_gemv_kernel<1, MODE, true>, dim3(blocks), dim3(I8_WARPS * 32),
                     own_smem_bytes(ld), stream, w, wscale, rows, ld, (const int8_t *)nullptr,
                     (const float *)nullptr, x, cols, (const unsigned *)nullptr, own, false, y,
                     ldy);
}

extern "C" int ec_cuda_int8_gemv_own(ec_gemv_mode mode, const int8_t *w, const float *wscale,
                                     int rows, int ld, const void *x, int cols, float threshold,
                                     unsigned *mask, int *ocount, int8_t *xq, float *xscale,
                                     unsigned long long *stat, void *y, int ldy,
                                     cudaStream_t stream)
{
    if (!gemv_shape_ok(1, rows, cols, ld, ldy)) return -1;
    if (!ec_cuda_int8_gemv_own_fits(cols, x))
        return ec_set_error("int8 GEMV quantizing its own token: %d columns (needs a multiple of "
                            "8, at most %d, 16-byte aligned)", cols, (int)OWN_MAX_COLS);
    int8_own own = {threshold, xq, xscale, mask, ocount, stat};
    cudaError_t e = by_mode(mode, [&](auto m) {
        return launch_gemv_own<decltype(m)::value>(stream, w, wscale, rows, ld, (const __half *)x,
                                                   cols, own, y, ldy);
    });
    EC_CUDA_TRY(e, "launch of int8 GEMV quantizing its token (%d x %d)", rows, cols);
    return 0;
}
