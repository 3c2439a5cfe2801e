/* kernels_int8.cu — the LLM.int8() kernels: outlier-column scan, per-token activation
 * quantization (at decode one "prepare" block, which may run the layer's RMSNorm first; at batch
 * 1 without a norm, inside the GEMV), the fused int8 GEMV (dp4a, outlier columns inside the
 * kernel), the int8
 * tensor-core GEMM through cuBLAS with its fused epilogue, and the reference family's separate
 * dequant / gather / weight-column kernels.
 *
 * Numerics are those of src/quant/int8.c, operation for operation, so that on fp16-representable
 * activations the codes, scales and (for the fused kernels, without outlier columns) the outputs
 * are bit-identical to ec_qmatrix_matmul_rows: the scaled values use __fdiv_rn / __fmul_rn /
 * __fadd_rn so nvcc cannot contract them into FMAs the CPU does not do, and the int32 dot
 * products are exact in any order. The outlier columns' products are exact in fp32 (two halves),
 * but their sum has its own order: per lane in the GEMV (int8_gemv_kernel), on tensor cores in
 * the GEMM epilogue (int8_epilogue_kernel). */
#include "cuda_check.h"
#include "kernels_common.cuh"
#include "kernels_int8.cuh"
#include "kernels_norm.cuh"

#include <cooperative_groups.h>
#include <stdint.h>
#include <type_traits>

namespace cg = cooperative_groups;

enum {
    SCAN_WARPS = 8,      /* outlier scan: warps per block, each a share of the tokens */
    SCAN_WORDS = 4,      /* outlier scan: 32-column mask words per block */
    SCAN_TOKENS = 64,    /* outlier scan: tokens per block (more: blocks OR their words) */
    PREP_THREADS = 1024, /* a decode prepare block (RMSNorm order: EC_NORM_THREADS) */
    PREP_MAX_COLS = PREP_THREADS * 32, /* widest input of the prepare (32 columns a thread) */
    PREP_HELD = 14,      /* the decode prepares: columns a thread keeps in registers (14336 wide) */
    PREP_HELD_COLS = PREP_THREADS * PREP_HELD,
    QUANT_THREADS = 256, /* scalar quantization: one block per token */
    QUANT_MAX_THREADS = 1024, /* vector quantization: one block per token, ... */
    QUANT_VECS = 4,      /* ... 8-column vectors a thread holds: 32768 columns at most */
    EPI_ROWS = 32,       /* GEMM epilogue: output rows per block (two 16-row MMA tiles) */
    EPI_WARPS = 4,       /* GEMM epilogue: warps per block, 16 tokens each */
    EPI_TOKS = EPI_WARPS * 16, /* GEMM epilogue: tokens per block */
    EPI_THREADS = EPI_WARPS * 32,
    EPI_K = 64,          /* GEMM epilogue: weight columns per chunk */
    EPI_LD = EPI_K + 8,  /* GEMM epilogue: shared row stride in halves (conflict-free fragments) */
    EPI_PLD = EPI_ROWS + 4, /* GEMM epilogue: partial sums' row stride in floats (conflict-free) */
    EPI_WAVE_CTAS = 8,   /* GEMM epilogue: blocks per SM a split grid may fill */
    EPI_STAGES = 2,      /* GEMM epilogue: outlier chunks whose loads are in flight */
    EPI_MAX_CHUNKS = PREP_MAX_COLS / EPI_K, /* GEMM epilogue: chunks of the widest input */
    I8_WARPS = 8,        /* GEMV: warps per block, two output rows per warp */
    I8_UNROLL = 4,       /* GEMV: 16-byte loads per row in flight per lane */
    OWN_VECS = 8,        /* GEMV quantizing its own token: 8-column vectors a thread holds */
    OWN_MAX_COLS = I8_WARPS * 32 * OWN_VECS * 8, /* ... so its widest input: 16384 */
};
static const unsigned FULL = 0xffffffffu;

static_assert((int)PREP_THREADS == (int)EC_NORM_THREADS, "the prepare's RMSNorm runs on the whole block");

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

/* ---- outlier columns: a bitmask (bit c % 32 of word c / 32), then an ascending list ---- */

__device__ __forceinline__ bool is_outlier(const unsigned *mask, int c)
{
    return mask && ((mask[c >> 5] >> (c & 31)) & 1u);
}

/* Lane l's verdict on column 32 * (word0 + j) + l for tokens t0, t0 + tstep, ... < t1, j < W.
 * No early exit: all W loads of a token are independent, so a warp keeps them in flight. */
template <int W>
__device__ __forceinline__ void outlier_words(const __half *x, int t0, int t1, int tstep,
                                              int cols, float threshold, int word0, bool f[W])
{
    int lane = threadIdx.x & 31;
#pragma unroll
    for (int j = 0; j < W; j++) f[j] = false;
    for (int b = t0; b < t1; b += tstep)
#pragma unroll
        for (int j = 0; j < W; j++) {
            int c = 32 * (word0 + j) + lane;
            if (c < cols) f[j] |= fabsf(__half2float(x[(size_t)b * cols + c])) >= threshold;
        }
}

/* The set bits of mask [nwords], ascending, into ocols; *ocount = how many (a whole block).
 * Thread i owns the contiguous words [i*per, (i+1)*per), so the prefix sum of the per-thread
 * counts places every column in order. volatile: in outliers_kernel other blocks wrote mask. */
__device__ void list_outliers(const volatile unsigned *mask, int nwords, int *ocols, int *ocount,
                              unsigned long long *stat)
{
    int per = (nwords + (int)blockDim.x - 1) / (int)blockDim.x;
    int w0 = threadIdx.x * per, w1 = min(w0 + per, nwords), mine = 0;
    for (int w = w0; w < w1; w++) mine += __popc(mask[w]);
    int total, at = block_exclusive_scan(mine, &total);
    for (int w = w0; w < w1; w++)
        for (unsigned m = mask[w]; m; m &= m - 1) ocols[at++] = 32 * w + __ffs(m) - 1;
    if (threadIdx.x == 0) {
        *ocount = total;
        if (stat) {
            atomicAdd(stat, (unsigned long long)total);
            atomicAdd(stat + 1, 1ull);
        }
    }
}

/* Block-wide quantization of one token row xr [cols] into qr [ld]. */
__device__ void quantize_token(const __half *xr, int cols, int ld, const unsigned *mask,
                               int8_t *qr, float *scale)
{
    __shared__ float red[32];
    float m = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        if (!is_outlier(mask, c)) m = fmaxf(m, fabsf(__half2float(xr[c])));
    float absmax = ec_block_reduce<true>(m, red);
    for (int c = threadIdx.x; c < ld; c += blockDim.x)
        qr[c] = c < cols ? act_code(__half2float(xr[c]), absmax, is_outlier(mask, c)) : 0;
    if (threadIdx.x == 0) *scale = act_scale(absmax);
}

/* Many tokens: block (i, j) ORs the 32 * SCAN_WORDS columns from word SCAN_WORDS * i over the
 * tokens [SCAN_TOKENS * j, ...), its warps taking every SCAN_WARPS-th token; the last block to
 * finish (a ticket, reset for the next launch and graph replay) lists the columns. With more
 * than SCAN_TOKENS tokens (prefill) several blocks OR into one word, so the caller clears the
 * mask first. Without ocols the kernel ends with the mask: no fence, ticket or list, whose round
 * trips were half of a batch-64 scan (the quantization counts the columns instead). */
__global__ void __launch_bounds__(SCAN_WARPS * 32)
    outliers_kernel(const __half *x, int ntok, int cols, float threshold, unsigned *mask,
                    int *ocols, int *ocount, unsigned *ticket, unsigned long long *stat)
{
    __shared__ unsigned s_or[SCAN_WORDS];
    __shared__ bool s_last;
    int nwords = (cols + 31) / 32, word0 = blockIdx.x * SCAN_WORDS, warp = threadIdx.x >> 5;
    int t0 = blockIdx.y * SCAN_TOKENS, t1 = min(ntok, t0 + SCAN_TOKENS);
    if (threadIdx.x < SCAN_WORDS) s_or[threadIdx.x] = 0;
    ec_wait_inputs();
    __syncthreads();
    bool f[SCAN_WORDS];
    outlier_words<SCAN_WORDS>(x, t0 + warp, t1, SCAN_WARPS, cols, threshold, word0, f);
#pragma unroll
    for (int j = 0; j < SCAN_WORDS; j++) {
        unsigned m = __ballot_sync(FULL, f[j]);
        if ((threadIdx.x & 31) == 0 && m) atomicOr(&s_or[j], m);
    }
    __syncthreads();
    if (threadIdx.x < SCAN_WORDS && word0 + (int)threadIdx.x < nwords) {
        if (gridDim.y > 1)
            atomicOr(&mask[word0 + threadIdx.x], s_or[threadIdx.x]);
        else
            mask[word0 + threadIdx.x] = s_or[threadIdx.x];
    }
    if (!ocols) return;
    __threadfence(); /* this block's words before its ticket */
    __syncthreads();
    if (threadIdx.x == 0) s_last = atomicAdd(ticket, 1u) == gridDim.x * gridDim.y - 1;
    __syncthreads();
    if (!s_last) return;
    __threadfence();
    list_outliers(mask, nwords, ocols, ocount, stat);
    if (threadIdx.x == 0) *ticket = 0;
}

/* Token xr's outlier activations at the listed columns into its row xo_r of the one-pass GEMM's
 * gathered buffer, zeros up to the next multiple of 16 positions (it reads groups of 16). */
__device__ __forceinline__ void gather_outlier_acts(const __half *xr, const int *ocols,
                                                    const int *ocount, __half *xo_r)
{
    int n = *ocount, n16 = (n + 15) & ~15;
    for (int p = threadIdx.x; p < n16; p += blockDim.x)
        xo_r[p] = p < n ? xr[ocols[p]] : __float2half_rn(0.0f);
}

/* The call's outlier count, where the scan left only the mask: *count = n and, with stat,
 * stat[0] += n and stat[1] += 1, as list_outliers does. mine: this thread's share of the set
 * bits; s_count: cleared before a barrier that precedes this call. One block. */
__device__ __forceinline__ void publish_count(int mine, int *s_count, int *count,
                                              unsigned long long *stat)
{
    mine = __reduce_add_sync(FULL, mine);
    if ((threadIdx.x & 31) == 0 && mine) atomicAdd(s_count, mine);
    __syncthreads();
    if (threadIdx.x == 0) {
        *count = *s_count;
        if (stat) {
            atomicAdd(stat, (unsigned long long)*s_count);
            atomicAdd(stat + 1, 1ull);
        }
    }
}

/* Any row width: block b quantizes token b with scalar loads (quantize_vec_kernel where the rows
 * are whole 8-column vectors). count: see ec_cuda_int8_quantize. */
__global__ void __launch_bounds__(QUANT_THREADS)
    quantize_kernel(const __half *x, int cols, int ld, const unsigned *mask, int8_t *xq,
                    float *xscale, const int *ocols, const int *ocount, __half *xo, int *count,
                    unsigned long long *stat)
{
    __shared__ int s_count;
    int b = blockIdx.x;
    if (threadIdx.x == 0) s_count = 0;
    ec_wait_inputs();
    quantize_token(x + (size_t)b * cols, cols, ld, mask, xq + (size_t)b * ld, xscale + b);
    if (xo) gather_outlier_acts(x + (size_t)b * cols, ocols, ocount, xo + (size_t)b * ld);
    if (count && b == 0) { /* block-uniform; quantize_token's barriers published s_count */
        int mine = 0;
        for (int w = threadIdx.x; w < (cols + 31) / 32; w += blockDim.x) mine += __popc(mask[w]);
        publish_count(mine, &s_count, count, stat);
    }
}

/* Rows of whole 8-column vectors (16-byte aligned): block b quantizes token b, thread t holding
 * vectors t, t + blockDim.x, ... (at most QUANT_VECS) in registers from their one load to their
 * codes, so a token costs one round trip to memory and one block max; the codes go out 8 bytes
 * at a time through act_code_rcp. quantize_kernel loads every value twice, a half at a time, and
 * divides per value: at 64 tokens its calls took 7-34 µs of each layer's int8 GEMM path, on 64
 * blocks of 256 threads. mask: the call's outlier columns, or
 * NULL. */
__global__ void __launch_bounds__(QUANT_MAX_THREADS)
    quantize_vec_kernel(const __half *x, int cols, int ld, const unsigned *mask, int8_t *xq,
                        float *xscale, const int *ocols, const int *ocount, __half *xo,
                        int *count, unsigned long long *stat)
{
    __shared__ unsigned s_max;
    __shared__ int s_count;
    int b = blockIdx.x, nvec = cols / 8;
    const uint4 *xv = reinterpret_cast<const uint4 *>(x + (size_t)b * cols);
    if (threadIdx.x == 0) {
        s_max = 0;
        s_count = 0;
    }
    ec_wait_inputs();
    uint4 v[QUANT_VECS];
    unsigned f8[QUANT_VECS]; /* bit q: column 8 * vector + q is an outlier */
    load_token_vectors<QUANT_VECS>(xv, nvec, v);
#pragma unroll
    for (int j = 0; j < QUANT_VECS; j++) {
        int i = threadIdx.x + j * blockDim.x;
        f8[j] = mask && i < nvec ? (mask[i / 4] >> (8 * (i % 4))) & 0xffu : 0u;
    }
    __syncthreads(); /* s_max cleared (the loads are in flight meanwhile) */
    float m = 0.0f;
#pragma unroll
    for (int j = 0; j < QUANT_VECS; j++) {
        if (threadIdx.x + j * blockDim.x >= nvec) break;
        float e[8];
        ec_unpack8<__half>(v[j], e);
#pragma unroll
        for (int q = 0; q < 8; q++)
            if (!((f8[j] >> q) & 1u)) m = fmaxf(m, fabsf(e[q])); /* fmaxf ignores a NaN */
    }
    float absmax = ec_block_max_nonneg(m, &s_max), r = __frcp_rn(absmax);
    uint2 *qr = reinterpret_cast<uint2 *>(xq + (size_t)b * ld);
    store_token_codes<QUANT_VECS>(v, f8, nvec, absmax, r, qr, NULL);
    for (int i = nvec + threadIdx.x; i < ld / 8; i += blockDim.x) qr[i] = make_uint2(0, 0);
    if (threadIdx.x == 0) xscale[b] = act_scale(absmax);
    if (xo) gather_outlier_acts(x + (size_t)b * cols, ocols, ocount, xo + (size_t)b * ld);
    if (count && b == 0) { /* block-uniform: the bits are every column's, held in f8 */
        int mine = 0;
#pragma unroll
        for (int j = 0; j < QUANT_VECS; j++) mine += __popc(f8[j]);
        publish_count(mine, &s_count, count, stat);
    }
}

/* The prepares' outlier bookkeeping. flags bit i: column threadIdx.x + i * PREP_THREADS is an
 * outlier. Writes the mask words of the block's columns with ballots (the GEMV reads them; the
 * block never does) and adds their count to *s_count, which must be cleared before and is read
 * after a barrier. */
__device__ __forceinline__ void publish_outliers(unsigned flags, int per, int cols, unsigned *mask,
                                                 int *s_count)
{
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, count = 0;
    for (int i = 0; i < per; i++) {
        unsigned m = __ballot_sync(FULL, (flags >> i) & 1u);
        int word = i * (PREP_THREADS / 32) + warp; /* columns 32 * word + lane */
        if (lane == 0 && 32 * word < cols) {
            mask[word] = m;
            count += __popc(m);
        }
    }
    if (lane == 0 && count) atomicAdd(s_count, count);
}
/* Thread 0, after that barrier: the count for the caller and the statistics. */
__device__ __forceinline__ void report_outliers(float threshold, int count, int *ocount,
                                                unsigned long long *stat)
{
    *ocount = threshold > 0.0f ? count : 0;
    if (threshold > 0.0f && stat) {
        atomicAdd(stat, (unsigned long long)count);
        atomicAdd(stat + 1, 1ull);
    }
}

/* Decode batches (<= EC_CUDA_GEMV_MAX_BATCH tokens) of rows wider than prepare_token_kernel
 * holds: scan, count and quantize in one block.
 * Thread t owns columns t, t + PREP_THREADS, ... of every token, so it knows which of its
 * columns are outliers (any token |x| >= threshold) from its own loads: the mask is written for
 * the GEMV and never read back, and the scan costs no extra round trip before the quantization
 * (an earlier version scanned by mask words, wrote them, synchronised the block and read the
 * mask per element while quantizing). Up to 32 owned columns (flags bits): cols <=
 * PREP_MAX_COLS. The tokens go through each phase together, one block reduction for all of
 * them (the norm's sums, the absmax); what a batch still costs here are the dependent L2 round
 * trips of its phases (25-35 µs at batch 8). */
__global__ void __launch_bounds__(PREP_THREADS)
    prepare_kernel(ec_cuda_norm norm, __half *x, int ntok, int cols, int ld, float threshold,
                   unsigned *mask, int *ocount, int8_t *xq, float *xscale,
                   unsigned long long *stat)
{
    constexpr int NB = EC_CUDA_GEMV_MAX_BATCH;
    __shared__ int s_count;
    __shared__ float scratch[NB * 32];
    if (threadIdx.x == 0) s_count = 0;
    __syncthreads(); /* cleared before any warp adds to it (under PDL while the inputs wait) */
    float held_w[EC_NORM_HELD];
    if (norm.x) ec_rmsnorm_held_w(norm.w, cols, held_w);
    ec_wait_inputs();
    if (norm.x) {
        ec_rmsnorm_rows<__half, NB>(norm.x, norm.x_stride, ntok, norm.w, held_w, cols, norm.eps,
                                    x, cols, scratch);
        __syncthreads(); /* the block's writes of x before anyone reads them */
    }
    int per = (cols + PREP_THREADS - 1) / PREP_THREADS; /* owned columns, block-uniform */
    unsigned flags = 0; /* bit i: column threadIdx.x + i * PREP_THREADS is an outlier */
    if (threshold > 0.0f) {
#pragma unroll 4
        for (int i = 0; i < per; i++) {
            int c = threadIdx.x + i * PREP_THREADS;
            bool f = false;
            for (int b = 0; c < cols && b < ntok; b++)
                f |= fabsf(__half2float(x[(size_t)b * cols + c])) >= threshold;
            flags |= (unsigned)f << i;
        }
        publish_outliers(flags, per, cols, mask, &s_count);
    }
    /* quantize_token's arithmetic, with the outlier test on the thread's own flags */
    float absmax[NB];
#pragma unroll
    for (int b = 0; b < NB; b++) {
        absmax[b] = 0.0f;
        if (b >= ntok) continue;
        for (int i = 0; i < per; i++) {
            int c = threadIdx.x + i * PREP_THREADS;
            if (c < cols && !((flags >> i) & 1u))
                absmax[b] = fmaxf(absmax[b], fabsf(__half2float(x[(size_t)b * cols + c])));
        }
    }
    ec_block_reduce_n<true, NB>(absmax, scratch); /* its barriers order the count's atomics */
    if (threadIdx.x == 0) report_outliers(threshold, s_count, ocount, stat);
#pragma unroll
    for (int b = 0; b < NB; b++) {
        if (b >= ntok) break;
        const __half *xr = x + (size_t)b * cols;
        int8_t *qr = xq + (size_t)b * ld;
        for (int i = 0; i < per; i++) { /* ld <= per * PREP_THREADS: ld rounds cols to 16 */
            int c = threadIdx.x + i * PREP_THREADS;
            if (c >= ld) break;
            qr[c] = c < cols ? act_code(__half2float(xr[c]), absmax[b], (flags >> i) & 1u) : 0;
        }
        if (threadIdx.x == 0) xscale[b] = act_scale(absmax[b]);
    }
}

/* Decode batches of 2..EC_CUDA_GEMV_MAX_BATCH rows of at most PREP_HELD_COLS columns: block b
 * prepares token b, and every value of it stays in a register from its one load to its code, so
 * the chain is load → (norm: block sum) → outlier flags and block max → codes, one round trip to
 * L2 and one or two block reductions, whatever the batch (prepare_kernel, one block for all
 * tokens, walks them through L2 round trips: 25-35 µs at batch 8). An outlier column is one
 * where any token reaches the threshold, so each block also tests the other tokens' values of
 * its columns (for a normed input it computes their norms too: all sums in one block
 * reduction), and block 0 publishes the mask and the count. The arithmetic is prepare_kernel's
 * (and with norm ec_rmsnorm_rows's, term for term: the sum of squares in the same order), so
 * the results are identical. */
__global__ void __launch_bounds__(PREP_THREADS)
    prepare_token_kernel(ec_cuda_norm norm, __half *x, int ntok, int cols, int ld,
                         float threshold, unsigned *mask, int *ocount, int8_t *xq, float *xscale,
                         unsigned long long *stat)
{
    constexpr int NB = EC_CUDA_GEMV_MAX_BATCH;
    __shared__ int s_count;
    __shared__ float scratch[NB * 32], s_inv[NB];
    const int me = blockIdx.x; /* this block's token */
    if (threadIdx.x == 0) s_count = 0;
    __syncthreads(); /* cleared before any warp adds to it (under PDL while the inputs wait) */
    float v[PREP_HELD]; /* column threadIdx.x + i * PREP_THREADS, 0 past cols */
    auto col = [](int i) { return (int)threadIdx.x + i * PREP_THREADS; };
    /* the norm weights are read where needed (a thread of 1024 has 64 registers) */
    auto g = [&](int i) { return col(i) < cols ? __ldg(norm.w + col(i)) : 0.0f; };
    ec_wait_inputs();
    if (norm.x) {
        float ss[NB]; /* the tokens' sums of squares */
#pragma unroll
        for (int r = 0; r < NB; r++) {
            ss[r] = 0.0f;
            if (r >= ntok) continue;
#pragma unroll
            for (int i = 0; i < PREP_HELD; i++) {
                float a = col(i) < cols ? norm.x[r * norm.x_stride + col(i)] : 0.0f;
                if (r == me) v[i] = a;
                ss[r] = fmaf(a, a, ss[r]);
            }
        }
        ec_block_reduce_n<false, NB>(ss, scratch);
        float inv_me = 0.0f;
#pragma unroll
        for (int r = 0; r < NB; r++) {
            float inv = rsqrtf(ss[r] / (float)cols + norm.eps);
            if (r == me) inv_me = inv;
            if (threadIdx.x == 0) s_inv[r] = inv; /* the other tokens' outlier tests */
        }
#pragma unroll
        for (int i = 0; i < PREP_HELD; i++) {
            __half h = __float2half_rn(v[i] * inv_me * g(i));
            v[i] = __half2float(h);
            if (col(i) < cols) x[(size_t)me * cols + col(i)] = h;
        }
        __syncthreads(); /* s_inv */
    } else {
#pragma unroll
        for (int i = 0; i < PREP_HELD; i++)
            v[i] = col(i) < cols ? __half2float(x[(size_t)me * cols + col(i)]) : 0.0f;
    }
    unsigned flags = 0; /* bit i: column col(i) is an outlier (v is 0 past cols: never) */
    if (threshold > 0.0f) {
#pragma unroll
        for (int i = 0; i < PREP_HELD; i++) {
            bool f = fabsf(v[i]) >= threshold;
#pragma unroll 1
            for (int r = 0; r < ntok; r++) {
                if (r == me || col(i) >= cols) continue;
                float a = norm.x ? __half2float(__float2half_rn(
                                       norm.x[r * norm.x_stride + col(i)] * s_inv[r] * g(i)))
                                 : __half2float(x[(size_t)r * cols + col(i)]);
                f |= fabsf(a) >= threshold;
            }
            flags |= (unsigned)f << i;
        }
        if (me == 0)
            publish_outliers(flags, (cols + PREP_THREADS - 1) / PREP_THREADS, cols, mask,
                             &s_count);
    }
    float m = 0.0f;
#pragma unroll
    for (int i = 0; i < PREP_HELD; i++)
        if (!((flags >> i) & 1u)) m = fmaxf(m, fabsf(v[i]));
    float absmax = ec_block_reduce<true>(m, scratch); /* its barriers order the count's atomics */
    if (threadIdx.x == 0) {
        xscale[me] = act_scale(absmax);
        if (me == 0) report_outliers(threshold, s_count, ocount, stat);
    }
#pragma unroll
    for (int i = 0; i < PREP_HELD; i++) {
        if (col(i) >= ld) break;
        xq[(size_t)me * ld + col(i)] =
            col(i) < cols ? act_code(v[i], absmax, (flags >> i) & 1u) : 0;
    }
}

/* One token of at most PREP_HELD_COLS columns (the batch-1 prepare), thread t holding columns
 * t + i * PREP_THREADS, i < n: with norm.x, x = rmsnorm(norm) first (ec_rmsnorm_rows's
 * arithmetic, the sum of squares in its order, so x is bit-identical to ec_cuda_rmsnorm's; the
 * norm weights are loaded before the wait, as there); else x is the input. Then the outlier
 * flags and mask words, the absmax (ec_block_max_nonneg), the scale and the codes through
 * act_code_rcp (equal to act_code for every non-outlier value). The whole token runs on one SM,
 * so the loops stop at the thread's last column (4 of PREP_HELD at 4,096 columns) instead of
 * predicating the rest away: with the same loop exits in quantize_own, the prepares' own time
 * fell from 5.38 / 5.10 to 5.15 / 4.92 µs a layer. */
__global__ void __launch_bounds__(PREP_THREADS)
    prepare_one_kernel(ec_cuda_norm norm, __half *x, int cols, int ld, float threshold,
                       unsigned *mask, int *ocount, int8_t *xq, float *xscale,
                       unsigned long long *stat)
{
    __shared__ int s_count;
    __shared__ unsigned s_max;
    __shared__ float scratch[32];
    if (threadIdx.x == 0) s_count = 0, s_max = 0;
    __syncthreads(); /* cleared before any warp adds to them (under PDL while the inputs wait) */
    auto col = [](int i) { return (int)threadIdx.x + i * PREP_THREADS; };
    const int n = (cols - (int)threadIdx.x + PREP_THREADS - 1) / PREP_THREADS; /* my columns */
    float v[PREP_HELD], g[PREP_HELD]; /* the norm weights are no step data: before the wait */
#pragma unroll
    for (int i = 0; i < PREP_HELD && i < n; i++) g[i] = norm.x ? norm.w[col(i)] : 0.0f;
    ec_wait_inputs();
    if (norm.x) {
        float ss = 0.0f;
#pragma unroll
        for (int i = 0; i < PREP_HELD && i < n; i++) v[i] = norm.x[col(i)];
#pragma unroll
        for (int i = 0; i < PREP_HELD && i < n; i++) ss = fmaf(v[i], v[i], ss);
        float inv = rsqrtf(ec_block_reduce<false>(ss, scratch) / (float)cols + norm.eps);
#pragma unroll
        for (int i = 0; i < PREP_HELD && i < n; i++) {
            __half h = __float2half_rn(v[i] * inv * g[i]);
            v[i] = __half2float(h);
            x[col(i)] = h;
        }
    } else {
#pragma unroll
        for (int i = 0; i < PREP_HELD && i < n; i++) v[i] = __half2float(x[col(i)]);
    }
    unsigned flags = 0; /* bit i: column col(i) is an outlier */
    if (threshold > 0.0f) {
#pragma unroll
        for (int i = 0; i < PREP_HELD && i < n; i++)
            flags |= (unsigned)(fabsf(v[i]) >= threshold) << i;
        publish_outliers(flags, (cols + PREP_THREADS - 1) / PREP_THREADS, cols, mask, &s_count);
    }
    float m = 0.0f;
#pragma unroll
    for (int i = 0; i < PREP_HELD && i < n; i++)
        if (!((flags >> i) & 1u)) m = fmaxf(m, fabsf(v[i]));
    float absmax = ec_block_max_nonneg(m, &s_max); /* its barrier orders the count's atomics */
    if (threadIdx.x == 0) {
        *xscale = act_scale(absmax);
        report_outliers(threshold, s_count, ocount, stat);
    }
    float r = __frcp_rn(absmax);
#pragma unroll
    for (int i = 0; i < PREP_HELD && i < n; i++) {
        bool zero = absmax == 0.0f || ((flags >> i) & 1u);
        xq[col(i)] = zero ? 0 : (int8_t)act_code_rcp(v[i], absmax, r);
    }
    for (int c = cols + (int)threadIdx.x; c < ld; c += PREP_THREADS) xq[c] = 0; /* padding */
}

extern "C" int ec_cuda_int8_outliers(const void *x, int ntok, int cols, float threshold,
                                     unsigned *mask, int *ocols, int *ocount, unsigned *ticket,
                                     unsigned long long *stat, cudaStream_t stream)
{
    int nwords = (cols + 31) / 32;
    dim3 grid((unsigned)((nwords + SCAN_WORDS - 1) / SCAN_WORDS),
              (unsigned)((ntok + SCAN_TOKENS - 1) / SCAN_TOKENS));
    if (grid.y > 1)
        EC_CUDA_TRY(cudaMemsetAsync(mask, 0, (size_t)nwords * sizeof *mask, stream),
                    "clearing the outlier mask");
    EC_CUDA_TRY(ec_launch(outliers_kernel, grid, dim3(SCAN_WARPS * 32), 0, stream,
                          (const __half *)x, ntok, cols, threshold, mask, ocols, ocount, ticket,
                          stat),
                "launch of int8 outlier scan (%d tokens x %d)", ntok, cols);
    return 0;
}

extern "C" int ec_cuda_int8_quantize(const void *x, int ntok, int cols, int ld,
                                     const unsigned *mask, int8_t *xq, float *xscale,
                                     const int *ocols, const int *ocount, void *xo, int *count,
                                     unsigned long long *stat, cudaStream_t stream)
{
    if (count && !mask) return ec_set_error("int8 quantization: an outlier count without a mask");
    /* Two vectors a thread where the block allows (more loads in flight per token), whole
     * warps, at least two of them. */
    int nvec = cols / 8, threads = (nvec / 2 + 31) / 32 * 32;
    threads = threads < 64 ? 64 : threads > QUANT_MAX_THREADS ? QUANT_MAX_THREADS : threads;
    bool vec = cols % 8 == 0 && ld % 8 == 0 && nvec <= QUANT_VECS * QUANT_MAX_THREADS &&
               (uintptr_t)x % 16 == 0 && (uintptr_t)xq % 8 == 0;
    EC_CUDA_TRY(vec ? ec_launch(quantize_vec_kernel, dim3(ntok), dim3(threads), 0, stream,
                                (const __half *)x, cols, ld, mask, xq, xscale, ocols, ocount,
                                (__half *)xo, count, stat)
                    : ec_launch(quantize_kernel, dim3(ntok), dim3(QUANT_THREADS), 0, stream,
                                (const __half *)x, cols, ld, mask, xq, xscale, ocols, ocount,
                                (__half *)xo, count, stat),
                "launch of int8 activation quantization (%d tokens x %d)", ntok, cols);
    return 0;
}

extern "C" int ec_cuda_int8_prepare(const ec_cuda_norm *norm, void *x, int ntok, int cols,
                                    int ld, float threshold, unsigned *mask, int *ocount,
                                    int8_t *xq, float *xscale, unsigned long long *stat,
                                    cudaStream_t stream)
{
    if (cols > PREP_MAX_COLS || ld > PREP_MAX_COLS)
        return ec_set_error("int8 activation prepare: %d columns, at most %d", cols,
                            (int)PREP_MAX_COLS);
    ec_cuda_norm none = {NULL, 0, NULL, 0.0f, NULL};
    cudaError_t e =
        ld <= PREP_HELD_COLS
            ? ntok == 1 ? ec_launch(prepare_one_kernel, dim3(1), dim3(PREP_THREADS), 0, stream,
                                    norm ? *norm : none, (__half *)x, cols, ld, threshold, mask,
                                    ocount, xq, xscale, stat)
                        : ec_launch(prepare_token_kernel, dim3(ntok), dim3(PREP_THREADS), 0,
                                    stream, norm ? *norm : none, (__half *)x, ntok, cols, ld,
                                    threshold, mask, ocount, xq, xscale, stat)
            : ec_launch(prepare_kernel, dim3(1), dim3(PREP_THREADS), 0, stream,
                        norm ? *norm : none, (__half *)x, ntok, cols, ld, threshold, mask,
                        ocount, xq, xscale, stat);
    EC_CUDA_TRY(e,
                "launch of int8 activation prepare (%d tokens x %d)", ntok, cols);
    return 0;
}

/* ---- the fused GEMV ---- */

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

/* ---- tensor-core path: cuBLAS int8 GEMM + one epilogue kernel ---- */

extern "C" int ec_cuda_int8_gemm(cublasHandle_t cublas, const int8_t *w, int rows, int ld,
                                 const int8_t *xq, int ntok, int32_t *acc, int ldc)
{
    /* Column-major view as in linear.cu: acc^T (rows x ntok) = op_T(W) * xq^T. m is rounded up
     * to 4 (int8 weights are allocated with 3 zero rows after the last, see qlinear.c) so every
     * dimension meets the int8 tensor-core alignment rules; the extra output rows are never
     * read. */
    const int32_t alpha = 1, beta = 0;
    int m = (rows + 3) / 4 * 4;
    EC_CUBLAS_TRY(cublasGemmEx(cublas, CUBLAS_OP_T, CUBLAS_OP_N, m, ntok, ld, &alpha, w,
                               CUDA_R_8I, ld, xq, CUDA_R_8I, ld, &beta, acc, CUDA_R_32I, ldc,
                               CUBLAS_COMPUTE_32I, CUBLAS_GEMM_DEFAULT),
                  "cublasGemmEx int8 (%d x %d weight, %d token rows)", rows, ld, ntok);
    return 0;
}

/* The epilogue of the int8 GEMM, y = acc * step * xscale + the outlier columns' 16-bit product,
 * for a tile of EPI_ROWS output rows (x2 weight rows for SILU_MUL: gate and up) by EPI_TOKS
 * tokens. The outlier part is LLM.int8's 16-bit matmul: a few columns at decode, but up to half
 * of them at batch 64 and in the prefill, since a column is an outlier when any token of the call
 * crosses the threshold. It runs on tensor cores over the weight in chunks of EPI_K columns,
 * skipping the chunks without an outlier column (the mask is the call's, so the skip is uniform):
 * the block loads the chunk's weight rows and activations with 16-byte loads, the weights
 * dequantized to fp16 and the activations of non-outlier columns zeroed, into shared memory
 * k-contiguous (the order of the A and B fragments), and warp w multiplies every row of the tile
 * by tokens 16w..16w+15 with m16n8k16 MMAs (M = weight rows, N = tokens, fp32 accumulation).
 * The block lists its chunks with an outlier column first, then keeps the loads of the next
 * EPI_STAGES chunks in flight while a chunk's MMAs run. Reading whole chunks instead
 * of gathering the listed columns costs MMAs on zeros, but the loads are vectors: a gather of
 * single bytes and halves made the epilogue of the down projection at batch 64 take 10x the GEMM.
 * Multiplying only a chunk's listed columns (activations gathered in list order), four cp.async
 * stages instead of the register stages, and tiles of 64 rows were each slower at batch 64.
 * A narrow weight has too few tiles to fill the GPU (at batch 64, 128 tiles of the 4096-row down
 * projection, whose input carries the most outlier columns), so the chunks of a tile may be split
 * over a cluster of gridDim.z blocks (chunk i to block i % gridDim.z). Each block leaves its
 * partial sums in shared memory; after a cluster barrier block q adds up, in rank order, the
 * partials of its share of the tile's tokens from every block's shared memory and writes them.
 * A warp writes 32 consecutive rows of a token (lane = row). The outlier sum is a tensor-core sum
 * in its own order, as in the reference family's 16-bit GEMM, not the CPU's sequential one;
 * test_cuda_int8 bounds the difference. The grid's x runs over token tiles, so the blocks that
 * read the same weight rows run together and share them through L2. OUTLIERS false (mask NULL:
 * int8, or osum given): compiled without the chunk loop, whose registers cost int8's plain
 * epilogue two blocks per SM. A call whose outlier count is 0 has no partial sums at all: no
 * shared memory, no barriers (int8's epilogue, and int8-mixed's where no token crossed the
 * threshold: on the synthetic models, o at every batch, and all but down on the models without
 * injected outlier dims). VEC: x rows 16-byte aligned (cols % 8 == 0); else element loads. */
template <int MODE, bool VEC, bool OUTLIERS>
__global__ void __launch_bounds__(EPI_THREADS)
    int8_epilogue_kernel(const int32_t *acc, int ldc, const float *wscale, int rows,
                         const int8_t *w, int ld, const float *xscale, const __half *x, int cols,
                         const unsigned *mask, const int *ocount, const float *osum, int ldo,
                         int ntok, void *y, int ldy)
{
    constexpr int WR = MODE == EC_GEMV_SILU_MUL ? 2 : 1; /* weight rows per output row */
    constexpr int XSEG = EPI_TOKS * EPI_K / 8 / EPI_THREADS; /* x segments of 8 a thread loads */
    typedef __half WeightTile[WR * EPI_ROWS][EPI_LD];    /* [weight row][column in chunk] */
    typedef __half ActTile[EPI_TOKS][EPI_LD];            /* [token][column in chunk] */
    typedef float SumTile[WR][EPI_TOKS][EPI_PLD];        /* [gate/up][token][row] */
    constexpr size_t LOADS = sizeof(WeightTile) + sizeof(ActTile);
    __shared__ __align__(16) unsigned char smem[LOADS > sizeof(SumTile) ? LOADS : sizeof(SumTile)];
    WeightTile &s_w = *reinterpret_cast<WeightTile *>(smem);
    ActTile &s_x = *reinterpret_cast<ActTile *>(smem + sizeof(WeightTile));
    SumTile &s_sum = *reinterpret_cast<SumTile *>(smem);
    static_assert(EPI_K == 64 && EPI_THREADS == 4 * EPI_ROWS,
                  "a thread loads a quarter weight row");
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    int b0 = blockIdx.x * EPI_TOKS, row0 = blockIdx.y * EPI_ROWS;
    int nb = min(EPI_TOKS, ntok - b0), split = gridDim.z;
    /* Loads: weight row threadIdx.x / 4 (+ EPI_ROWS: up) bytes 16 (threadIdx.x % 4).., and
     * x segment threadIdx.x % 8 (columns 8s..) of tokens threadIdx.x / 8 + 16i. */
    int wseg = threadIdx.x % 4, xs8 = threadIdx.x % 8;
    int wrow[WR];
    float step[WR]; /* the weights are constant: read before waiting on the inputs */
#pragma unroll
    for (int h = 0; h < WR; h++) {
        int r = row0 + threadIdx.x / 4;
        wrow[h] = r >= rows ? -1 : r + h * rows;
        step[h] = wrow[h] < 0 ? 0.0f : row_step(wscale, wrow[h]);
    }
    ec_wait_inputs();
    float o[WR][2][2][4] = {}; /* [gate/up][row tile][token tile][C fragment] */
    /* Partial sums to add up: only where the call has outlier columns (the count is the call's,
     * so every block of the grid decides alike). Without them the blocks of a split skip the
     * cluster barriers, and no block stages zeros through shared memory. */
    const bool partials = OUTLIERS && *ocount > 0;
    if (partials) {
        int nchunks = (cols + EPI_K - 1) / EPI_K, nwords = (cols + 31) / 32;
        auto chunk_mask = [&](int i) { /* the outlier bits of chunk i's 64 columns */
            unsigned lo = mask[2 * i], hi = 2 * i + 1 < nwords ? mask[2 * i + 1] : 0u;
            return (unsigned long long)hi << 32 | lo;
        };
        /* This block's chunks (z, z + split, ...) that hold an outlier column, ascending, listed
         * by the whole block in one pass over the mask: a walk from one chunk to the next with
         * an outlier made every block wait for a chain of mask loads. */
        __shared__ short s_list[EPI_MAX_CHUNKS];
        int nlist = 0,
            mine = nchunks > (int)blockIdx.z ? (nchunks - blockIdx.z + split - 1) / split : 0;
        for (int j0 = 0; j0 < mine; j0 += EPI_THREADS) {
            int j = j0 + threadIdx.x, i = blockIdx.z + split * j;
            int has = j < mine && chunk_mask(i) != 0, total;
            int at = block_exclusive_scan(has, &total);
            if (has) s_list[nlist + at] = (short)i;
            nlist += total;
        }
        __syncthreads(); /* the list before anyone reads it */
        uint4 wv[EPI_STAGES][WR], xv[EPI_STAGES][XSEG]; /* EPI_STAGES chunks in flight */
        auto load = [&](int s, int i) {
            int c0 = i * EPI_K;
#pragma unroll
            for (int h = 0; h < WR; h++) {
                int c = c0 + 16 * wseg;
                wv[s][h] = wrow[h] >= 0 && c < ld
                               ? __ldg(reinterpret_cast<const uint4 *>(w + (size_t)wrow[h] * ld
                                                                       + c))
                               : make_uint4(0, 0, 0, 0);
            }
#pragma unroll
            for (int k = 0; k < XSEG; k++) {
                int bb = threadIdx.x / 8 + (EPI_THREADS / 8) * k, c = c0 + 8 * xs8;
                const __half *xr = x + (size_t)(b0 + bb) * cols + c;
                if (VEC) {
                    xv[s][k] = bb < nb && c < cols ? *reinterpret_cast<const uint4 *>(xr)
                                                   : make_uint4(0, 0, 0, 0);
                } else {
                    __half e[8];
#pragma unroll
                    for (int j = 0; j < 8; j++)
                        e[j] = bb < nb && c + j < cols ? xr[j] : __float2half_rn(0.0f);
                    xv[s][k] = *reinterpret_cast<const uint4 *>(e);
                }
            }
        };
        auto store = [&](int s, unsigned long long bits) { /* dequantize, zero the non-outliers */
#pragma unroll
            for (int h = 0; h < WR; h++) {
                __half2 d[8];
                dequant16_x16(wv[s][h], step[h], d);
                uint4 *dst =
                    reinterpret_cast<uint4 *>(&s_w[h * EPI_ROWS + threadIdx.x / 4][16 * wseg]);
                dst[0] = reinterpret_cast<const uint4 *>(d)[0];
                dst[1] = reinterpret_cast<const uint4 *>(d)[1];
            }
            /* the segment's columns are the same in every token: one mask word per half pair,
             * all ones where the column is an outlier (AND leaves +0 elsewhere, as a store of 0) */
            unsigned seg = (unsigned)(bits >> (8 * xs8)) & 0xffu;
            uint32_t keep[4];
#pragma unroll
            for (int p = 0; p < 4; p++)
                keep[p] = ((seg >> (2 * p)) & 1u ? 0x0000ffffu : 0u) |
                          ((seg >> (2 * p + 1)) & 1u ? 0xffff0000u : 0u);
#pragma unroll
            for (int k = 0; k < XSEG; k++) {
                uint4 e = xv[s][k];
                e = make_uint4(e.x & keep[0], e.y & keep[1], e.z & keep[2], e.w & keep[3]);
                int bb = threadIdx.x / 8 + (EPI_THREADS / 8) * k;
                *reinterpret_cast<uint4 *>(&s_x[bb][8 * xs8]) = e;
            }
        };
#pragma unroll
        for (int s = 0; s < EPI_STAGES; s++)
            if (s < nlist) load(s, s_list[s]);
        for (int l0 = 0; l0 < nlist; l0 += EPI_STAGES) {
#pragma unroll
            for (int s = 0; s < EPI_STAGES; s++) {
                int l = l0 + s;
                if (l >= nlist) break;
                store(s, chunk_mask(s_list[l]));
                __syncthreads();
                if (l + EPI_STAGES < nlist) load(s, s_list[l + EPI_STAGES]);
#pragma unroll
                for (int ks = 0; ks < EPI_K; ks += 16) {
                    uint2 b[2];
#pragma unroll
                    for (int nt = 0; nt < 2; nt++) {
                        const __half *xs = &s_x[16 * warp + 8 * nt + g][ks + 2 * t];
                        b[nt] = make_uint2(*reinterpret_cast<const uint32_t *>(xs),
                                           *reinterpret_cast<const uint32_t *>(xs + 8));
                    }
#pragma unroll
                    for (int h = 0; h < WR; h++)
#pragma unroll
                        for (int mt = 0; mt < 2; mt++) {
                            const __half *ws = &s_w[h * EPI_ROWS + 16 * mt + g][ks + 2 * t];
                            const __half *ws8 = ws + 8 * EPI_LD; /* row g + 8 */
                            const uint32_t a[4] = {*reinterpret_cast<const uint32_t *>(ws),
                                                   *reinterpret_cast<const uint32_t *>(ws8),
                                                   *reinterpret_cast<const uint32_t *>(ws + 8),
                                                   *reinterpret_cast<const uint32_t *>(ws8 + 8)};
#pragma unroll
                            for (int nt = 0; nt < 2; nt++)
                                ec_mma16816<__half>(o[h][mt][nt], a, b[nt]);
                        }
                }
                __syncthreads();
            }
        }
    }
    cg::cluster_group cluster = cg::this_cluster();
    if (partials) {
        /* C fragment e of tile (mt, nt): row 16mt + g + 8(e / 2), token 16w + 8nt + 2t + e % 2 */
#pragma unroll
        for (int h = 0; h < WR; h++)
#pragma unroll
            for (int mt = 0; mt < 2; mt++)
#pragma unroll
                for (int nt = 0; nt < 2; nt++)
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        s_sum[h][16 * warp + 8 * nt + 2 * t + e % 2][16 * mt + g + 8 * (e / 2)] =
                            o[h][mt][nt][e];
        if (split > 1)
            cluster.sync(); /* every block's partials are in place */
        else
            __syncthreads();
    }
    /* Block q writes tokens [q, q + 1) * EPI_TOKS / split of the tile, lane = row. */
    int r = row0 + lane, share = EPI_TOKS / split;
    if (r < rows) {
        float st = row_step(wscale, r);
        float stu = MODE == EC_GEMV_SILU_MUL ? row_step(wscale, r + rows) : 0.0f;
        for (int bb = blockIdx.z * share + warp; bb < (blockIdx.z + 1) * share && bb < nb;
             bb += EPI_WARPS) {
            int b = b0 + bb;
            float sum[WR];
#pragma unroll
            for (int h = 0; h < WR; h++) {
                if (osum || !partials) { /* computed by the caller (mask NULL), or none */
                    sum[h] = osum ? osum[(size_t)b * ldo + r + h * rows] : 0.0f;
                    continue;
                }
                /* in rank order, this block's own partials included */
                sum[h] = split > 1 ? (*cluster.map_shared_rank(&s_sum, 0))[h][bb][lane]
                                   : s_sum[h][bb][lane];
                for (int q = 1; q < split; q++)
                    sum[h] += (*cluster.map_shared_rank(&s_sum, q))[h][bb][lane];
            }
            const int32_t *ab = acc + (size_t)b * ldc;
            float v = int8_output(ab[r], st, xscale[b], sum[0]);
            if (MODE == EC_GEMV_SILU_MUL) {
                float u = int8_output(ab[r + rows], stu, xscale[b], sum[WR - 1]);
                reinterpret_cast<__half *>(y)[(size_t)b * ldy + r] =
                    __float2half_rn(v / (1.0f + expf(-v)) * u);
            } else if (MODE == EC_GEMV_ADD) {
                reinterpret_cast<float *>(y)[(size_t)b * ldy + r] += v;
            } else {
                reinterpret_cast<float *>(y)[(size_t)b * ldy + r] = v;
            }
        }
    }
    if (split > 1 && partials) cluster.sync(); /* no block leaves while another reads them */
}

/* Blocks of a tile's outlier chunks (see int8_epilogue_kernel): the power of two up to 8 that
 * keeps the grid within EPI_WAVE_CTAS blocks per SM; 1 without outlier columns. */
static int epilogue_split(int tiles, bool outliers)
{
    int split = 1, limit = EPI_WAVE_CTAS * ec_sm_count();
    while (outliers && split < 8 && tiles * split * 2 <= limit) split *= 2;
    return split;
}

template <int MODE>
static cudaError_t launch_epilogue(dim3 grid, dim3 cluster, cudaStream_t stream,
                                   const int32_t *acc, int ldc, const float *wscale, int rows,
                                   const int8_t *w, int ld, const float *xscale, const __half *x,
                                   int cols, const unsigned *mask, const int *ocount,
                                   const float *osum, int ldo, int ntok, void *y, int ldy)
{
    auto kernel = !mask          ? int8_epilogue_kernel<MODE, true, false>
                  : cols % 8 == 0 ? int8_epilogue_kernel<MODE, true, true>
                                  : int8_epilogue_kernel<MODE, false, true>;
    return ec_launch_clustered(kernel, grid, cluster, dim3(EPI_THREADS), 0, stream, acc, ldc,
                               wscale, rows, w, ld, xscale, x, cols, mask, ocount, osum, ldo,
                               ntok, y, ldy);
}

extern "C" int ec_cuda_int8_epilogue(ec_gemv_mode mode, const int32_t *acc, int ldc,
                                     const float *wscale, int rows, const int8_t *w, int ld,
                                     const float *xscale, const void *x, int cols,
                                     const unsigned *mask, const int *ocount, const float *osum,
                                     int ldo, int ntok, void *y, int ldy, cudaStream_t stream)
{
    if (mask && osum) return ec_set_error("int8 GEMM epilogue: both an outlier mask and sums");
    if (mask && !ocount)
        return ec_set_error("int8 GEMM epilogue: an outlier mask without its count");
    if (mask && cols > EPI_MAX_CHUNKS * EPI_K)
        return ec_set_error("int8 GEMM epilogue: %d columns with an outlier mask, at most %d",
                            cols, (int)(EPI_MAX_CHUNKS * EPI_K));
    unsigned ttiles = (unsigned)((ntok + EPI_TOKS - 1) / EPI_TOKS);
    unsigned rtiles = (unsigned)((rows + EPI_ROWS - 1) / EPI_ROWS);
    unsigned split = (unsigned)epilogue_split((int)(ttiles * rtiles), mask != NULL);
    dim3 grid(ttiles, rtiles, split), cluster(1, 1, split);
    const __half *xh = (const __half *)x;
    cudaError_t e =
        mode == EC_GEMV_STORE
            ? launch_epilogue<EC_GEMV_STORE>(grid, cluster, stream, acc, ldc, wscale, rows, w, ld,
                                             xscale, xh, cols, mask, ocount, osum, ldo, ntok, y,
                                             ldy)
        : mode == EC_GEMV_ADD
            ? launch_epilogue<EC_GEMV_ADD>(grid, cluster, stream, acc, ldc, wscale, rows, w, ld,
                                           xscale, xh, cols, mask, ocount, osum, ldo, ntok, y, ldy)
            : launch_epilogue<EC_GEMV_SILU_MUL>(grid, cluster, stream, acc, ldc, wscale, rows, w,
                                                ld, xscale, xh, cols, mask, ocount, osum, ldo,
                                                ntok, y, ldy);
    EC_CUDA_TRY(e, "launch of int8 GEMM epilogue (%d tokens x %d rows, split %u)", ntok, rows,
                split);
    return 0;
}

/* ---- reference family: bitsandbytes' separate kernels ---- */

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
