/* kernels_argmax.cu — greedy sampling: the argmax over each sequence's logits, and the decode
 * step's feedback of the chosen tokens to the next step's input (ec_cuda_argmax). */
#include "common/cuda_check.h"
#include "kernels_common.cuh"

#include <stdint.h>

/* Folds candidate (v, i) into the best (bv, bi): larger wins, equal values go to the lower index,
 * NaN never wins; bi == none marks "no candidate yet" (also the value of an empty candidate). */
__device__ __forceinline__ void take_better(float &bv, int &bi, float v, int i, int none)
{
    if (i == none || v != v) return;
    if (bi == none || v > bv || (v == bv && i < bi)) { bv = v; bi = i; }
}

__device__ __forceinline__ void warp_best(float &bv, int &bi, int none)
{
    for (int o = 16; o > 0; o /= 2) {
        float ov = __shfl_xor_sync(0xffffffffu, bv, o);
        int oi = __shfl_xor_sync(0xffffffffu, bi, o);
        take_better(bv, bi, ov, oi, none);
    }
}

/* A candidate as one 64-bit key whose unsigned order is take_better's: the value's bits made
 * monotonic in the high word (-0 counted as +0, as == does), the index complemented in the low
 * word so that the lower index of two equal values is the larger key. Every real candidate's key
 * is above 0 (-inf maps to 0x007fffff), so 0 means "none yet". */
__device__ __forceinline__ unsigned long long argmax_key(float v, int i)
{
    unsigned u = __float_as_uint(v == 0.0f ? 0.0f : v);
    u = u & 0x80000000u ? ~u : u | 0x80000000u;
    return (unsigned long long)u << 32 | (0xffffffffu - (unsigned)i);
}

/* Sequence b's token, written by the one thread that knows it. The position is read before this
 * sequence is counted, and only the last sequence counted moves it, so every sequence files its
 * token under the same position. */
__device__ __forceinline__ void emit_token(int b, int token, int *out, ec_cuda_argmax_feed feed)
{
    out[b] = token;
    if (!feed.step) return;
    int pos = feed.step[0];
    feed.step[1 + b] = token;
    feed.history[(size_t)pos * gridDim.y + b] = token;
    __threadfence(); /* the reads and writes above before the count */
    if (atomicAdd(feed.rows_done, 1u) != gridDim.y - 1) return;
    *feed.rows_done = 0;
    feed.step[0] = pos + 1;
}

/* Block (s, b) takes slice s of sequence b's logits, ARGMAX_SLICE of them: one round of
 * ARGMAX_LOADS loads per thread before any comparison, then a shuffle/shared tree. Its best goes
 * into keys[b] with atomicMax; the last block of the sequence (a ticket) writes the index and
 * clears both for the next call. A vocabulary of one slice writes its index directly. A
 * one-block-per-sequence version walked a 128,256-word vocabulary in 8 dependent rounds of
 * loads: 27.6 µs a Llama-3.1-8B step. */
enum { ARGMAX_THREADS = 1024, ARGMAX_LOADS = 16, ARGMAX_SLICE = ARGMAX_THREADS * ARGMAX_LOADS };
__global__ void __launch_bounds__(ARGMAX_THREADS)
    argmax_kernel(const float *logits, int vocab, int *out, unsigned long long *keys,
                  unsigned *tickets, ec_cuda_argmax_feed feed)
{
    __shared__ float sv[32];
    __shared__ int si[32];
    ec_wait_inputs();
    int b = blockIdx.y, end = min(vocab, ((int)blockIdx.x + 1) * ARGMAX_SLICE);
    const float *row = logits + (size_t)b * vocab;
    int i0 = (int)blockIdx.x * ARGMAX_SLICE + threadIdx.x;
    float v[ARGMAX_LOADS], bv = -INFINITY;
    int bi = vocab;
#pragma unroll
    for (int u = 0; u < ARGMAX_LOADS; u++) {
        int i = i0 + u * ARGMAX_THREADS;
        v[u] = i < end ? row[i] : 0.0f;
    }
#pragma unroll
    for (int u = 0; u < ARGMAX_LOADS; u++) {
        int i = i0 + u * ARGMAX_THREADS;
        if (i < end) take_better(bv, bi, v[u], i, vocab);
    }
    warp_best(bv, bi, vocab);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) { sv[warp] = bv; si[warp] = bi; }
    __syncthreads();
    if (warp == 0) {
        int nw = ARGMAX_THREADS >> 5;
        bv = lane < nw ? sv[lane] : -INFINITY;
        bi = lane < nw ? si[lane] : vocab;
        warp_best(bv, bi, vocab);
        if (lane != 0) return;
        if (gridDim.x == 1) { /* the whole row: the same answer without the key and ticket */
            emit_token(b, bi != vocab ? bi : 0, out, feed);
            return;
        }
        if (bi != vocab) atomicMax(keys + b, argmax_key(bv, bi));
        __threadfence(); /* the key before the ticket */
        if (atomicAdd(tickets + b, 1u) != gridDim.x - 1) return;
        unsigned long long k = atomicExch(keys + b, 0ull);
        tickets[b] = 0;
        /* An all-NaN row has no answer; 0 keeps the token id valid for the next step. */
        emit_token(b, k ? (int)(0xffffffffu - (unsigned)k) : 0, out, feed);
    }
}

extern "C" int ec_cuda_argmax(const float *logits, int batch, int vocab, int *out,
                              unsigned long long *keys, unsigned *tickets,
                              const ec_cuda_argmax_feed *feed, cudaStream_t stream)
{
    dim3 grid((unsigned)((vocab + ARGMAX_SLICE - 1) / ARGMAX_SLICE), (unsigned)batch);
    ec_cuda_argmax_feed none = {NULL, NULL, NULL};
    EC_CUDA_TRY(ec_launch(argmax_kernel, grid, dim3(ARGMAX_THREADS), 0, stream, logits, vocab,
                          out, keys, tickets, feed ? *feed : none),
                "launch of argmax kernel (%d x %d logits)", batch, vocab);
    return 0;
}
