/* kernels_int8.cu — the LLM.int8() kernels: outlier-column scan, per-token activation
 * quantization, the fused int8 GEMV (dp4a, outlier columns inside the kernel), the int8
 * tensor-core GEMM through cuBLAS with its fused epilogue, and the reference family's separate
 * dequant / gather / weight-column kernels.
 *
 * Numerics are those of src/quant/int8.c, operation for operation, so that on fp16-representable
 * activations the codes, scales and (for the fused kernels) the outputs are bit-identical to
 * ec_qmatrix_matmul_rows: the scaled values use __fdiv_rn / __fmul_rn / __fadd_rn so nvcc cannot
 * contract them into FMAs the CPU does not do; the int32 dot products are exact in any order; the
 * outlier sum is accumulated sequentially in ascending column order with fmaf, which equals the
 * CPU's `sum += a * b` because the product of two halves is exact in fp32. */
#include "cuda_check.h"
#include "kernels_common.cuh"

#include <stdint.h>

enum {
    SCAN_THREADS = 1024, /* the single-block outlier scan / small-batch prepare */
    QUANT_THREADS = 256, /* one block per token */
    I8_WARPS = 8,        /* GEMV: warps per block, two output rows per warp */
    I8_UNROLL = 4,       /* GEMV: 16-byte loads per row in flight per lane */
};
static const unsigned FULL = 0xffffffffu;

/* round_q8 of src/quant/int8.c: nearest even, NaN -> 0, clamp to ±127. */
__device__ __forceinline__ int8_t round_q8(float v)
{
    v = rintf(v);
    if (isnan(v)) return 0;
    return (int8_t)(v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v);
}

/* The weight value of the outlier path: fp16(q * row_absmax/127). */
__device__ __forceinline__ float dequant16(int8_t q, float step)
{
    return __half2float(__float2half_rn(__fmul_rn((float)q, step)));
}

__device__ __forceinline__ float row_step(const float *wscale, int r)
{
    return __fdiv_rn(wscale[r], 127.0f);
}

/* acc * step * xscale, left to right, plus the outlier sum: the int8 formats' output. */
__device__ __forceinline__ float int8_output(int acc, float step, float xscale, float outlier)
{
    return __fadd_rn(__fmul_rn(__fmul_rn(__int2float_rn(acc), step), xscale), outlier);
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

/* Block-wide outlier scan. Thread i owns the contiguous columns [i*per, (i+1)*per), so the
 * per-thread counts' prefix sum places each thread's columns in ascending order. */
__device__ void scan_outliers(const __half *x, int ntok, int cols, float threshold, int *flags,
                              int *ocols, int *ocount, unsigned long long *stat)
{
    int per = (cols + (int)blockDim.x - 1) / (int)blockDim.x;
    int c0 = threadIdx.x * per, c1 = min(c0 + per, cols), mine = 0;
    for (int c = c0; c < c1; c++) {
        int f = 0;
        for (int b = 0; b < ntok && !f; b++)
            f = fabsf(__half2float(x[(size_t)b * cols + c])) >= threshold;
        flags[c] = f;
        mine += f;
    }
    int total, at = block_exclusive_scan(mine, &total);
    for (int c = c0; c < c1; c++)
        if (flags[c]) ocols[at++] = c;
    if (threadIdx.x == 0) {
        *ocount = total;
        if (stat) {
            atomicAdd(stat, (unsigned long long)total);
            atomicAdd(stat + 1, 1ull);
        }
    }
}

/* Block-wide quantization of one token row xr [cols] into qr [ld]. */
__device__ void quantize_token(const __half *xr, int cols, int ld, const int *flags, int8_t *qr,
                               float *scale)
{
    __shared__ float red[32];
    float m = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        if (!flags || !flags[c]) m = fmaxf(m, fabsf(__half2float(xr[c])));
    float absmax = ec_block_reduce<true>(m, red);
    for (int c = threadIdx.x; c < ld; c += blockDim.x) {
        int8_t q = 0;
        if (c < cols && absmax > 0.0f && !(flags && flags[c]))
            q = round_q8(__fmul_rn(__fdiv_rn(__half2float(xr[c]), absmax), 127.0f));
        qr[c] = q;
    }
    if (threadIdx.x == 0) *scale = __fdiv_rn(absmax, 127.0f);
}

__global__ void __launch_bounds__(SCAN_THREADS)
    outliers_kernel(const __half *x, int ntok, int cols, float threshold, int *flags, int *ocols,
                    int *ocount, unsigned long long *stat)
{
    scan_outliers(x, ntok, cols, threshold, flags, ocols, ocount, stat);
}

__global__ void __launch_bounds__(QUANT_THREADS)
    quantize_kernel(const __half *x, int cols, int ld, const int *flags, int8_t *xq, float *xscale)
{
    int b = blockIdx.x;
    quantize_token(x + (size_t)b * cols, cols, ld, flags, xq + (size_t)b * ld, xscale + b);
}

__global__ void __launch_bounds__(SCAN_THREADS)
    prepare_kernel(const __half *x, int ntok, int cols, int ld, float threshold, int *flags,
                   int *ocols, int *ocount, int8_t *xq, float *xscale, unsigned long long *stat)
{
    if (threshold > 0.0f) {
        scan_outliers(x, ntok, cols, threshold, flags, ocols, ocount, stat);
        __syncthreads(); /* every flag written before the tokens read them */
    } else if (threadIdx.x == 0) {
        *ocount = 0;
    }
    for (int b = 0; b < ntok; b++)
        quantize_token(x + (size_t)b * cols, cols, ld, threshold > 0.0f ? flags : NULL,
                       xq + (size_t)b * ld, xscale + b);
}

extern "C" int ec_cuda_int8_outliers(const void *x, int ntok, int cols, float threshold,
                                     int *flags, int *ocols, int *ocount,
                                     unsigned long long *stat, cudaStream_t stream)
{
    outliers_kernel<<<1, SCAN_THREADS, 0, stream>>>((const __half *)x, ntok, cols, threshold,
                                                    flags, ocols, ocount, stat);
    EC_CUDA_LAUNCHED("launch of int8 outlier scan (%d tokens x %d)", ntok, cols);
    return 0;
}

extern "C" int ec_cuda_int8_quantize(const void *x, int ntok, int cols, int ld, const int *flags,
                                     int8_t *xq, float *xscale, cudaStream_t stream)
{
    quantize_kernel<<<ntok, QUANT_THREADS, 0, stream>>>((const __half *)x, cols, ld, flags, xq,
                                                        xscale);
    EC_CUDA_LAUNCHED("launch of int8 activation quantization (%d tokens x %d)", ntok, cols);
    return 0;
}

extern "C" int ec_cuda_int8_prepare(const void *x, int ntok, int cols, int ld, float threshold,
                                    int *flags, int *ocols, int *ocount, int8_t *xq,
                                    float *xscale, unsigned long long *stat, cudaStream_t stream)
{
    prepare_kernel<<<1, SCAN_THREADS, 0, stream>>>((const __half *)x, ntok, cols, ld, threshold,
                                                   flags, ocols, ocount, xq, xscale, stat);
    EC_CUDA_LAUNCHED("launch of int8 activation prepare (%d tokens x %d)", ntok, cols);
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

/* As kernels_gemv.cu: one warp owns two rows (gate row r and up row r + rows for SILU_MUL),
 * 16-byte evict-first weight loads, the int8 activations through the read-only path. The
 * outlier columns are then gathered 32 at a time (lane j loads column j's weights and
 * activations) and summed in list order by every lane from shuffles, so each (row, token) sum
 * has the CPU's order. */
template <int B, int MODE>
__global__ void __launch_bounds__(I8_WARPS * 32)
    int8_gemv_kernel(const int8_t *__restrict__ w, const float *__restrict__ wscale, int rows,
                     int ld, const int8_t *__restrict__ xq, const float *__restrict__ xscale,
                     const __half *__restrict__ x, int cols, const int *__restrict__ ocols,
                     const int *__restrict__ ocount, void *y, int ldy)
{
    int warp = blockIdx.x * I8_WARPS + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    int r0 = MODE == EC_GEMV_SILU_MUL ? warp : 2 * warp;
    if (r0 >= rows) return; /* warp-uniform: no shuffle below loses a partner */
    int r1 = MODE == EC_GEMV_SILU_MUL ? warp + rows : (r0 + 1 < rows ? r0 + 1 : r0);
    int n16 = ld / 16;
    const uint4 *w0 = reinterpret_cast<const uint4 *>(w + (size_t)r0 * ld);
    const uint4 *w1 = reinterpret_cast<const uint4 *>(w + (size_t)r1 * ld);
    const uint4 *xv = reinterpret_cast<const uint4 *>(xq);

    int acc0[B], acc1[B];
#pragma unroll
    for (int b = 0; b < B; b++) acc0[b] = acc1[b] = 0;
    for (int base = lane; base < n16; base += 32 * I8_UNROLL) {
        uint4 a[I8_UNROLL], c[I8_UNROLL];
#pragma unroll
        for (int u = 0; u < I8_UNROLL; u++) {
            int k = base + u * 32;
            if (k < n16) {
                a[u] = __ldcs(w0 + k);
                c[u] = __ldcs(w1 + k);
            } else {
                a[u] = c[u] = make_uint4(0, 0, 0, 0);
            }
        }
#pragma unroll
        for (int u = 0; u < I8_UNROLL; u++) {
            int k = base + u * 32;
            if (k < n16) {
#pragma unroll
                for (int b = 0; b < B; b++) {
                    uint4 xb = __ldg(xv + (size_t)b * n16 + k);
                    acc0[b] = dot16(a[u], xb, acc0[b]);
                    acc1[b] = dot16(c[u], xb, acc1[b]);
                }
            }
        }
    }
#pragma unroll
    for (int b = 0; b < B; b++) {
        acc0[b] = warp_isum(acc0[b]);
        acc1[b] = warp_isum(acc1[b]);
    }

    float step0 = row_step(wscale, r0), step1 = row_step(wscale, r1);
    float out0[B], out1[B];
#pragma unroll
    for (int b = 0; b < B; b++) out0[b] = out1[b] = 0.0f;
    int n = *ocount;
    for (int k0 = 0; k0 < n; k0 += 32) { /* n is warp-uniform */
        int k = k0 + lane;
        float wd0 = 0.0f, wd1 = 0.0f, xo[B];
#pragma unroll
        for (int b = 0; b < B; b++) xo[b] = 0.0f;
        if (k < n) {
            int col = ocols[k];
            wd0 = dequant16(w[(size_t)r0 * ld + col], step0);
            wd1 = dequant16(w[(size_t)r1 * ld + col], step1);
#pragma unroll
            for (int b = 0; b < B; b++) xo[b] = __half2float(x[(size_t)b * cols + col]);
        }
        int m = min(32, n - k0);
        for (int j = 0; j < m; j++) {
            float s0 = __shfl_sync(FULL, wd0, j), s1 = __shfl_sync(FULL, wd1, j);
#pragma unroll
            for (int b = 0; b < B; b++) {
                float xs = __shfl_sync(FULL, xo[b], j);
                out0[b] = fmaf(xs, s0, out0[b]);
                out1[b] = fmaf(xs, s1, out1[b]);
            }
        }
    }

    /* Lane b writes sequence b's outputs (registers are indexed by unrolled constants only). */
#pragma unroll
    for (int b = 0; b < B; b++) {
        if (lane != b) continue;
        float v0 = int8_output(acc0[b], step0, xscale[b], out0[b]);
        float v1 = int8_output(acc1[b], step1, xscale[b], out1[b]);
        ec_gemv_write<__half, MODE>(y, ldy, b, r0, r1, v0, v1);
    }
}

template <int MODE>
static void launch_gemv(int batch, dim3 grid, cudaStream_t stream, const int8_t *w,
                        const float *wscale, int rows, int ld, const int8_t *xq,
                        const float *xscale, const __half *x, int cols, const int *ocols,
                        const int *ocount, void *y, int ldy)
{
    dim3 block(I8_WARPS * 32);
#define EC_I8_GEMV(B)                                                                          \
    int8_gemv_kernel<B, MODE><<<grid, block, 0, stream>>>(w, wscale, rows, ld, xq, xscale, x, \
                                                          cols, ocols, ocount, y, ldy)
    switch (batch) {
    case 1: EC_I8_GEMV(1); break;
    case 2: EC_I8_GEMV(2); break;
    case 3: EC_I8_GEMV(3); break;
    case 4: EC_I8_GEMV(4); break;
    case 5: EC_I8_GEMV(5); break;
    case 6: EC_I8_GEMV(6); break;
    case 7: EC_I8_GEMV(7); break;
    default: EC_I8_GEMV(8); break;
    }
#undef EC_I8_GEMV
}

static_assert(EC_CUDA_GEMV_MAX_BATCH == 8, "launch_gemv instantiates batches 1..8");

extern "C" int ec_cuda_int8_gemv(ec_gemv_mode mode, const int8_t *w, const float *wscale,
                                 int rows, int ld, const int8_t *xq, const float *xscale,
                                 const void *x, int cols, const int *ocols, const int *ocount,
                                 int batch, void *y, int ldy, cudaStream_t stream)
{
    if (batch < 1 || batch > EC_CUDA_GEMV_MAX_BATCH || ld % 16 != 0 || ld < cols || rows < 1 ||
        ldy < rows)
        return ec_set_error("int8 GEMV: unsupported shape batch %d, rows %d, cols %d, ld %d "
                            "(needs batch 1-%d, ld a multiple of 16)",
                            batch, rows, cols, ld, EC_CUDA_GEMV_MAX_BATCH);
    int warps = mode == EC_GEMV_SILU_MUL ? rows : (rows + 1) / 2;
    dim3 grid((unsigned)((warps + I8_WARPS - 1) / I8_WARPS));
    const __half *xh = (const __half *)x;
    if (mode == EC_GEMV_STORE)
        launch_gemv<EC_GEMV_STORE>(batch, grid, stream, w, wscale, rows, ld, xq, xscale, xh, cols,
                                   ocols, ocount, y, ldy);
    else if (mode == EC_GEMV_ADD)
        launch_gemv<EC_GEMV_ADD>(batch, grid, stream, w, wscale, rows, ld, xq, xscale, xh, cols,
                                 ocols, ocount, y, ldy);
    else
        launch_gemv<EC_GEMV_SILU_MUL>(batch, grid, stream, w, wscale, rows, ld, xq, xscale, xh,
                                      cols, ocols, ocount, y, ldy);
    EC_CUDA_LAUNCHED("launch of int8 GEMV (batch %d, %d x %d)", batch, rows, cols);
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

/* One (row, token) of the int8 formats from the GEMM's int32, with the outlier columns summed
 * sequentially in list order (the CPU's order). */
__device__ float epilogue_value(const int32_t *acc_row, const float *wscale, int r,
                                const int8_t *w, int ld, float xscale, const __half *xb,
                                const int *ocols, int n)
{
    float step = row_step(wscale, r), out = 0.0f;
    const int8_t *wr = w + (size_t)r * ld;
    for (int k = 0; k < n; k++) {
        int col = ocols[k];
        out = fmaf(__half2float(xb[col]), dequant16(wr[col], step), out);
    }
    return int8_output(acc_row[r], step, xscale, out);
}

template <int MODE>
__global__ void int8_epilogue_kernel(const int32_t *acc, int ldc, const float *wscale, int rows,
                                     const int8_t *w, int ld, const float *xscale,
                                     const __half *x, int cols, const int *ocols,
                                     const int *ocount, void *y, int ldy)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x, b = blockIdx.y;
    if (r >= rows) return;
    int n = *ocount;
    const int32_t *ab = acc + (size_t)b * ldc;
    const __half *xb = x + (size_t)b * cols;
    float v = epilogue_value(ab, wscale, r, w, ld, xscale[b], xb, ocols, n);
    if (MODE == EC_GEMV_SILU_MUL) {
        float u = epilogue_value(ab, wscale, r + rows, w, ld, xscale[b], xb, ocols, n);
        reinterpret_cast<__half *>(y)[(size_t)b * ldy + r] = __float2half_rn(v / (1.0f + expf(-v)) * u);
    } else if (MODE == EC_GEMV_ADD) {
        reinterpret_cast<float *>(y)[(size_t)b * ldy + r] += v;
    } else {
        reinterpret_cast<float *>(y)[(size_t)b * ldy + r] = v;
    }
}

extern "C" int ec_cuda_int8_epilogue(ec_gemv_mode mode, const int32_t *acc, int ldc,
                                     const float *wscale, int rows, const int8_t *w, int ld,
                                     const float *xscale, const void *x, int cols,
                                     const int *ocols, const int *ocount, int ntok, void *y,
                                     int ldy, cudaStream_t stream)
{
    dim3 grid((unsigned)((rows + 255) / 256), (unsigned)ntok);
    const __half *xh = (const __half *)x;
    if (mode == EC_GEMV_STORE)
        int8_epilogue_kernel<EC_GEMV_STORE><<<grid, 256, 0, stream>>>(
            acc, ldc, wscale, rows, w, ld, xscale, xh, cols, ocols, ocount, y, ldy);
    else if (mode == EC_GEMV_ADD)
        int8_epilogue_kernel<EC_GEMV_ADD><<<grid, 256, 0, stream>>>(
            acc, ldc, wscale, rows, w, ld, xscale, xh, cols, ocols, ocount, y, ldy);
    else
        int8_epilogue_kernel<EC_GEMV_SILU_MUL><<<grid, 256, 0, stream>>>(
            acc, ldc, wscale, rows, w, ld, xscale, xh, cols, ocols, ocount, y, ldy);
    EC_CUDA_LAUNCHED("launch of int8 GEMM epilogue (%d tokens x %d rows)", ntok, rows);
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

__global__ void gather_x_kernel(const __half *x, int cols, const int *ocols, int n, __half *xo,
                                size_t total)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t b = i / (size_t)n;
        xo[i] = x[b * cols + ocols[i % (size_t)n]];
    }
}

__global__ void weight_cols_kernel(const int8_t *w, const float *wscale, int ld, const int *ocols,
                                   int n, __half *wo, size_t total)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        int r = (int)(i / (size_t)n);
        wo[i] = __float2half_rn(
            __fmul_rn((float)w[(size_t)r * ld + ocols[i % (size_t)n]], row_step(wscale, r)));
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
                                     void *xo, cudaStream_t stream)
{
    size_t total = (size_t)ntok * n;
    gather_x_kernel<<<ec_grid_for(total), 256, 0, stream>>>((const __half *)x, cols, ocols, n,
                                                            (__half *)xo, total);
    EC_CUDA_LAUNCHED("launch of outlier activation gather (%d tokens x %d columns)", ntok, n);
    return 0;
}

extern "C" int ec_cuda_int8_weight_cols(const int8_t *w, const float *wscale, int rows, int ld,
                                        const int *ocols, int n, void *wo, cudaStream_t stream)
{
    size_t total = (size_t)rows * n;
    weight_cols_kernel<<<ec_grid_for(total), 256, 0, stream>>>(w, wscale, ld, ocols, n,
                                                               (__half *)wo, total);
    EC_CUDA_LAUNCHED("launch of outlier weight-column dequant (%d rows x %d columns)", rows, n);
    return 0;
}
