/* kernels_int8_outliers.cu — LLM.int8()'s outlier-column scan: the columns where any token
 * reaches the threshold, as a bitmask and an ascending list (ec_cuda_int8_outliers). The decode
 * prepares scan their own tokens instead (kernels_int8_quantize.cu). */
#include "common/cuda_check.h"
#include "kernels_common.cuh"
#include "kernels_int8_act.cuh"

enum {
    SCAN_WARPS = 8,      /* outlier scan: warps per block, each a share of the tokens */
    SCAN_WORDS = 4,      /* outlier scan: 32-column mask words per block */
    SCAN_TOKENS = 64,    /* outlier scan: tokens per block (more: blocks OR their words) */
};

/* ---- outlier columns: a bitmask (bit c % 32 of word c / 32), then an ascending list ---- */

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
