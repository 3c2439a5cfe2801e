/* kernels_dequant.cu — the reference family of the quantized linears (the libraries' dataflow,
 * kept so the fused kernels have an honest baseline): the nf4-dq absmax decode, the whole-weight
 * dequantization, the naive nf4 GEMV and the family's checked entry point.
 *
 * Reference dataflow per linear (what bitsandbytes <= 0.49 and eager torchao do):
 *   nf4-dq, every call: decode the absmax of every block into an fp32 scratch (one launch);
 *   nf4 / nf4-dq at batch 1: a naive GEMV, one warp per output row, one byte load and one table
 *     lookup per weight (fp32 weight = value * absmax, as the CPU);
 *   nf4 / nf4-dq at batch > 1, fp8 at every batch: dequantize the whole weight into a 16-bit
 *     scratch [rows][cols] (round(value * scale)), then cublasGemmEx (fp32 compute): the 16-bit
 *     weight is written and read again every call;
 *   SiLU·mul: gate and up into an fp32 scratch first, then ec_cuda_silu_mul. */
#include "kernels_quant_common.cuh"

/* ---- nf4-dq absmax decode: absmax [rows * nblocks] fp32 ---- */
__global__ void nf4dq_absmax_kernel(const ec_cuda_packed_weight w, float *absmax)
{
    __shared__ float s_map[256];
    for (int i = threadIdx.x; i < 256; i += blockDim.x)
        s_map[i] = w.tables[16 + i];
    __syncthreads();
    int nb = (w.cols + EC_NF4_BLOCK - 1) / EC_NF4_BLOCK;
    size_t n = (size_t)w.rows * nb;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        absmax[i] = ec_nf4_block_absmax<true>(w, s_map, (int)(i / nb), (int)(i % nb));
}

extern "C" int ec_cuda_nf4dq_absmax(const ec_cuda_packed_weight *w, float *absmax,
                                    cudaStream_t stream)
{
    size_t n = (size_t)w->rows * (size_t)((w->cols + EC_NF4_BLOCK - 1) / EC_NF4_BLOCK);
    unsigned blocks = (unsigned)((n + 255) / 256 < 4096 ? (n + 255) / 256 : 4096);
    nf4dq_absmax_kernel<<<blocks, 256, 0, stream>>>(*w, absmax);
    EC_CUDA_LAUNCHED("launch of nf4-dq absmax decode (%zu blocks)", n);
    return 0;
}

/* ---- whole-weight dequantization: w16 [rows][cols] 16-bit ----
 * The prefill of both families runs through here (packed_linear: calls of more than 64 token
 * rows), so it is written to stream at the memory's rate, as the libraries' own dequantization
 * kernels are (bitsandbytes' kDequantizeBlockwise loads and stores several values per thread).
 * A thread writes 8 columns (one 16-byte store, so a warp's stores are 512 contiguous bytes)
 * for DQ_ROWS rows, whose code loads it issues together. Rows run over the grid's y dimension
 * and pieces over x, so no thread divides a flat index by the row length. A pass over
 * Llama-2-7B's weights takes 5.6 ms (nf4) and 6.4 ms (fp8), about 3 TB/s; the element-per-thread
 * kernel before it took 20-21 ms. */
enum { DQ_COLS = 8, DQ_ROWS = 4, DQ_THREADS = 128 };

/* A format's piece: the codes of columns [c0, c0 + 8) of a row (c0 a multiple of 8), as the low
 * BYTES bytes of a uint2, decoded as 16-bit pairs. */
struct Nf4Piece {
    static constexpr int BYTES = 4;        /* two columns per byte, high nibble first */
    static constexpr uint32_t PAD = 0x77u; /* code 7 decodes to 0 */
    static constexpr bool TABLE = true;
    __device__ static int row_bytes(int cols) { return (cols + 1) / 2; }
    /* scale: [rows][nblocks] block absmax (the fp32 array, or the decoded nf4-dq one); a piece
     * lies in one block */
    __device__ static float scale_of(const float *scale, int cols, int r, int c0)
    {
        int nb = (cols + EC_NF4_BLOCK - 1) / EC_NF4_BLOCK;
        return scale[(size_t)r * nb + c0 / EC_NF4_BLOCK];
    }
    /* Pair k = byte k: (code value * absmax) for both nibbles, each rounded once to T. */
    __device__ static float2 pair(uint2 codes, int k, float scale, const float *s_code)
    {
        uint32_t byte = codes.x >> (8 * k) & 0xffu;
        return make_float2(s_code[byte >> 4] * scale, s_code[byte & 15u] * scale);
    }
};
struct Fp8Piece {
    static constexpr int BYTES = 8;
    static constexpr uint32_t PAD = 0u;
    static constexpr bool TABLE = false;
    __device__ static int row_bytes(int cols) { return cols; }
    __device__ static float scale_of(const float *scale, int, int r, int) { return scale[r]; }
    /* Pair k = bytes 2k and 2k + 1: e4m3 value * row scale, each rounded once to T. */
    __device__ static float2 pair(uint2 codes, int k, float scale, const float *)
    {
        uint32_t two = (k < 2 ? codes.x : codes.y) >> (16 * (k & 1));
        float2 v = __half22float2(ec_e4m3x2_to_half2(two));
        return make_float2(v.x * scale, v.y * scale);
    }
};

/* The piece's code bytes at byte0 of a row of rb bytes: one aligned load (VEC), else
 * ec_load_code_bytes, P::PAD past the row. Streaming: each code is read once. */
template <class P, bool VEC>
__device__ __forceinline__ uint2 dq_load(const uint8_t *row, int rb, int byte0)
{
    if constexpr (VEC) {
        if constexpr (P::BYTES == 8) return __ldcs(reinterpret_cast<const uint2 *>(row + byte0));
        return make_uint2(__ldcs(reinterpret_cast<const unsigned *>(row + byte0)), 0u);
    } else {
        uint32_t v[P::BYTES / 4];
        ec_load_code_bytes<P::BYTES / 4>(row, rb, byte0, P::PAD, v);
        if constexpr (P::BYTES == 8) return make_uint2(v[0], v[1]);
        return make_uint2(v[0], 0u);
    }
}

/* scale: P::scale_of's array (nf4: block absmax; fp8: [rows]). */
template <class P, typename T, bool VEC>
__global__ void __launch_bounds__(DQ_THREADS)
    dequant_kernel(const ec_cuda_packed_weight w, const float *scale, T *w16)
{
    __shared__ float s_code[16];
    if (P::TABLE && threadIdx.x < 16) s_code[threadIdx.x] = w.tables[threadIdx.x];
    __syncthreads();
    int piece = blockIdx.x * blockDim.x + threadIdx.x, c0 = piece * DQ_COLS;
    if (c0 >= w.cols) return;
    int rb = P::row_bytes(w.cols);
    for (int r0 = blockIdx.y * DQ_ROWS; r0 < w.rows; r0 += gridDim.y * DQ_ROWS) {
        uint2 codes[DQ_ROWS];
        float s[DQ_ROWS];
#pragma unroll
        for (int i = 0; i < DQ_ROWS; i++) {
            int r = min(r0 + i, w.rows - 1); /* a repeat of the last row is decoded, not stored */
            codes[i] = dq_load<P, VEC>(w.codes + (size_t)r * rb, rb, piece * P::BYTES);
            s[i] = P::scale_of(scale, w.cols, r, c0);
        }
#pragma unroll
        for (int i = 0; i < DQ_ROWS; i++) {
            if (r0 + i >= w.rows) break;
            uint32_t out[DQ_COLS / 2];
#pragma unroll
            for (int k = 0; k < DQ_COLS / 2; k++) {
                float2 v = P::pair(codes[i], k, s[i], s_code);
                out[k] = ec_pack2<T>(v.x, v.y);
            }
            T *dst = w16 + (size_t)(r0 + i) * w.cols + c0;
            if constexpr (VEC) {
                *reinterpret_cast<uint4 *>(dst) = make_uint4(out[0], out[1], out[2], out[3]);
            } else {
#pragma unroll
                for (int k = 0; k < DQ_COLS; k++)
                    if (c0 + k < w.cols)
                        reinterpret_cast<uint16_t *>(dst)[k] =
                            (uint16_t)(out[k / 2] >> (16 * (k & 1)));
            }
        }
    }
}

template <class P, typename T>
static void launch_dequant(const ec_cuda_packed_weight &w, const float *scale, T *w16,
                           cudaStream_t stream)
{
    enum { MAX_GRID_Y = 65535 };
    int pieces = (w.cols + DQ_COLS - 1) / DQ_COLS, row_groups = (w.rows + DQ_ROWS - 1) / DQ_ROWS;
    dim3 grid((unsigned)((pieces + DQ_THREADS - 1) / DQ_THREADS),
              (unsigned)(row_groups < MAX_GRID_Y ? row_groups : MAX_GRID_Y));
    /* whole pieces in every row, and the rows' starts aligned for the piece's loads and store */
    bool vec = w.cols % DQ_COLS == 0 && ((uintptr_t)w.codes | (uintptr_t)w16) % 16 == 0;
    if (vec)
        dequant_kernel<P, T, true><<<grid, DQ_THREADS, 0, stream>>>(w, scale, w16);
    else
        dequant_kernel<P, T, false><<<grid, DQ_THREADS, 0, stream>>>(w, scale, w16);
}

extern "C" int ec_cuda_qdequant(ec_cuda_dtype t, const ec_cuda_packed_weight *w,
                                const float *absmax, void *w16, cudaStream_t stream)
{
    if (w->prec == EC_PREC_NF4_DQ && !absmax)
        return ec_set_error("nf4-dq dequantization needs the decoded absmax");
    ec_dispatch_dtype(t, [&](auto tag) {
        typedef decltype(tag) T;
        if (w->prec == EC_PREC_FP8)
            launch_dequant<Fp8Piece>(*w, w->scales, (T *)w16, stream);
        else
            launch_dequant<Nf4Piece>(*w, w->prec == EC_PREC_NF4 ? w->scales : absmax, (T *)w16,
                                     stream);
        return 0;
    });
    EC_CUDA_LAUNCHED("launch of %s dequantization (%d x %d)", ec_precision_name(w->prec), w->rows,
                     w->cols);
    return 0;
}

/* ---- naive nf4 GEMV, batch 1: y [rows] fp32 (STORE or ADD), one warp per row ---- */
template <typename T, bool ADD>
__global__ void nf4_naive_gemv_kernel(const ec_cuda_packed_weight w, const float *absmax,
                                      const T *x, float *y)
{
    __shared__ float s_code[16];
    if (threadIdx.x < 16) s_code[threadIdx.x] = w.tables[threadIdx.x];
    __syncthreads();
    int r = blockIdx.x * (blockDim.x / 32) + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (r >= w.rows) return;
    int rb = (w.cols + 1) / 2, nb = (w.cols + EC_NF4_BLOCK - 1) / EC_NF4_BLOCK;
    const uint8_t *row = w.codes + (size_t)r * rb;
    float acc = 0.0f;
    for (int c = lane; c < w.cols; c += 32) {
        uint32_t byte = row[c / 2], code = c % 2 ? byte & 15u : byte >> 4;
        float wv = s_code[code] * absmax[(size_t)r * nb + c / EC_NF4_BLOCK];
        acc = fmaf(wv, ec_to_f32(x[c]), acc);
    }
    acc = ec_warp_sum(acc);
    if (lane == 0) y[r] = ADD ? y[r] + acc : acc;
}

extern "C" int ec_cuda_packed_linear_reference(cublasHandle_t cublas, ec_cuda_dtype t,
                                               ec_gemv_mode mode, const ec_cuda_packed_weight *w,
                                               const void *x, int ldx, int batch, void *y, int ldy,
                                               const ec_cuda_packed_scratch *s, cudaStream_t stream)
{
    if (ec_cuda_qweight_check(w, mode, ldx, batch, ldy, "reference")) return -1;
    bool naive = w->prec != EC_PREC_FP8 && batch == 1, silu = mode == EC_GEMV_SILU_MUL;
    if ((w->prec == EC_PREC_NF4_DQ && !s->absmax) || (!naive && !s->w16) || (silu && !s->gu))
        return ec_set_error("reference %s linear: missing scratch (absmax, w16 or gu)",
                            ec_precision_name(w->prec));
    const float *absmax = w->scales;
    if (w->prec == EC_PREC_NF4_DQ) {
        if (ec_cuda_nf4dq_absmax(w, s->absmax, stream)) return -1;
        absmax = s->absmax;
    }
    /* The product goes to y directly, or for SiLU·mul to gu [batch][rows] first. */
    float *out = silu ? s->gu : (float *)y;
    int ldo = silu ? w->rows : ldy;
    bool add = mode == EC_GEMV_ADD;
    if (naive) {
        unsigned blocks = (unsigned)((w->rows + 7) / 8);
        ec_dispatch_dtype(t, [&](auto tag) {
            typedef decltype(tag) T;
            if (add)
                nf4_naive_gemv_kernel<T, true>
                    <<<blocks, 256, 0, stream>>>(*w, absmax, (const T *)x, out);
            else
                nf4_naive_gemv_kernel<T, false>
                    <<<blocks, 256, 0, stream>>>(*w, absmax, (const T *)x, out);
            return 0;
        });
        EC_CUDA_LAUNCHED("launch of naive %s GEMV (%d x %d)", ec_precision_name(w->prec), w->rows,
                         w->cols);
    } else {
        if (ec_cuda_qdequant(t, w, absmax, s->w16, stream)) return -1;
        if (ec_cuda_gemm16(cublas, t, s->w16, w->cols, x, ldx, batch, w->rows, w->cols, out, ldo,
                           add ? 1.0f : 0.0f))
            return -1;
    }
    return silu ? ec_cuda_silu_mul(t, s->gu, batch, w->rows / 2, y, ldy, stream) : 0;
}
