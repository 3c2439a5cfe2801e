/* kernels_int8_quantize.cu — int8 activation quantization: per-token codes and scales after an
 * outlier scan (quantize_kernel, quantize_vec_kernel: ec_cuda_int8_quantize), and the decode
 * "prepares", one launch that may run the layer's RMSNorm first, then scans, counts and quantizes
 * (prepare_kernel, prepare_token_kernel, prepare_one_kernel: ec_cuda_int8_prepare). At batch 1
 * without a prepare the GEMV quantizes its own token (kernels_int8_gemv.cu). Numerics:
 * kernels_int8_act.cuh. */
#include "common/cuda_check.h"
#include "kernels_common.cuh"
#include "kernels_int8_act.cuh"
#include "kernels_norm.cuh"

enum {
    PREP_HELD = 14,      /* the decode prepares: columns a thread keeps in registers (14336 wide) */
    PREP_HELD_COLS = PREP_THREADS * PREP_HELD,
    QUANT_THREADS = 256, /* scalar quantization: one block per token */
    QUANT_MAX_THREADS = 1024, /* vector quantization: one block per token, ... */
    QUANT_VECS = 4,      /* ... 8-column vectors a thread holds: 32768 columns at most */
};

static_assert((int)PREP_THREADS == (int)EC_NORM_THREADS, "the prepare's RMSNorm runs on the whole block");

/* Whether column c is set in an outlier mask (bit c % 32 of word c / 32; NULL: no outliers). */
__device__ __forceinline__ bool is_outlier(const unsigned *mask, int c)
{
    return mask && ((mask[c >> 5] >> (c & 31)) & 1u);
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
    mine = (int)ec_warp_reduce_add((unsigned)mine);
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
