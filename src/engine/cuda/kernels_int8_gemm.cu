/* kernels_int8_gemm.cu — the int8 tensor-core path of larger batches: the int8 x int8 -> int32
 * GEMM through cuBLAS (ec_cuda_int8_gemm) and its one fused epilogue kernel (scales, the outlier
 * columns' 16-bit product on tensor cores, the output mode: ec_cuda_int8_epilogue). The one-pass
 * alternative is kernels_int8_mma.cu. Numerics: kernels_int8_act.cuh. */
#include "common/cuda_check.h"
#include "kernels_common.cuh"
#include "kernels_int8.cuh"
#include "kernels_int8_act.cuh"

#include <stdint.h>

enum {
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
};

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
    ec_cluster cluster; /* one block unless the code has clusters (epilogue_split) */
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
 * keeps the grid within EPI_WAVE_CTAS blocks per SM; 1 without outlier columns, or in code without
 * clusters. */
static int epilogue_split(int tiles, bool outliers)
{
    int split = 1, limit = EPI_WAVE_CTAS * ec_sm_count();
    bool clusters = (ec_code_features() & EC_GPU_CLUSTERS) != 0; /* a split meets in a cluster */
    while (clusters && outliers && split < 8 && tiles * split * 2 <= limit) split *= 2;
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
