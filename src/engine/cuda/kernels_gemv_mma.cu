/* kernels_gemv_mma.cu — the 16-bit decode GEMV on tensor cores for 2 to EC_CUDA_GEMV_MAX_BATCH
 * token rows: qmma_kernel (kernels_qmma.cuh) with a format policy whose pieces are the fp16 or
 * bf16 weights themselves. ec_cuda_gemv sends those batches here.
 *
 * kernels_gemv.cu's fp32 kernel converts each weight once and each activation once per row
 * pair, then spends one fma per weight and token row: at 8 rows ~14 instructions per weight, so
 * it was bound by issue, not by HBM (Llama-2-7B fp16 at batch 8: 43 % of the H200's bytes
 * roofline, a step twice batch 1's for the same bytes). The MMA does the multiply-adds of 256
 * weights x 8 token rows in one instruction; the lane's 16-byte weight loads go into the A
 * fragments as they are (the k permutation of kernels_quant.cuh), so a weight costs a quarter of
 * a load and no arithmetic of its own. On the H200 (docs/results.md) Llama-2-7B's fp16 steps got
 * 17 % shorter at batch 2, 24 % at 4, 36 % at 8; one row stays on the fp32 kernel, which streams
 * near the bandwidth. Two MMA token tiles (9-16 rows) made steps 28-43 % longer than cuBLAS's,
 * so EC_CUDA_GEMV_MAX_BATCH stays 8 and this file has one token tile.
 *
 * From 7 rows a lane takes its columns interleaved (ec_qmma_kcol): then each 16-byte load of a
 * row's 4 lanes, and of a token's activations, stays within one 128-byte line. That shortened
 * the step at 8 rows by a further 12 % and lengthened it by 3.5-5.5 % at 2-4 rows, where the
 * consecutive layout stays (6 rows were timed in the consecutive layout only). */
#include "kernels_quant.cuh"

namespace
{

/* 16-bit weights: W [rows][cols] of the activation type, its bytes as "codes". INTERLEAVE: a
 * lane's 32 columns of a chunk in 8-column pieces 32 apart (ec_qmma_kcol), else consecutive. */
template <bool INTERLEAVE> struct Plain16 {
    static constexpr bool TABLES = false;
    static constexpr int PAIR_BYTES = 0;
    /* A piece is 64 bytes a row (four times fp8's): one row tile (MT 1) and two chunks in flight
     * keep a lane's weight registers at 64, under the 128 of two CTAs per SM. */
    static constexpr int mma_stages(int, int) { return 2; }
    static constexpr int mma_ctas(int, bool) { return 2; }
    /* Launched by ec_qlaunch_mma_nt directly (one row tile, no carried norm), so the policy
     * has no CARRY_NORM or ONE_ROW_TILE_AT_BATCH1; batch 1 never comes here. */
    static constexpr bool RELEASE_AT_START = false;
    static constexpr bool INTERLEAVED = INTERLEAVE;
    struct Piece {
        uint4 q[4];
    }; /* a lane's 32 columns; q[p] holds those of k-steps 2p and 2p + 1 */

    /* Lane t's columns of the chunk (c = chunk start + 32t) in `row`; zero weights past the row
     * or when !valid. */
    template <bool VEC>
    __device__ static void load_piece(const ec_cuda_packed_weight &w, int row, int c, bool valid,
                                      Piece &p)
    {
        const uint8_t *r = w.codes + (size_t)row * w.cols * 2;
        int t = (c & (QMMA_CHUNK - 1)) / 32, chunk = c - 32 * t;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            int ci = chunk + ec_qmma_kcol<Plain16>(t, 2 * i); /* k-steps 2i and 2i + 1 */
            /* VEC: cols % 32 == 0, so a piece of 8 columns is in or out whole */
            p.q[i] = valid && (!VEC || !INTERLEAVE || ci < w.cols)
                         ? ec_load_codes16<VEC>(r, 2 * w.cols, 2 * ci, 0u)
                         : make_uint4(0, 0, 0, 0);
        }
    }
    template <typename T> __device__ static void load_pairs(const float *, uint32_t *) {}
    template <typename T> __device__ static uint32_t piece_scale(const float *, const Piece &)
    {
        return 0; /* unscaled */
    }
    /* k-step s: columns 4s .. 4s+3, words 2s and 2s + 1 of the piece. */
    template <typename T>
    __device__ static uint2 afrag(const Piece &p, uint32_t, int s, const uint32_t *)
    {
        const uint4 &q = p.q[s >> 1];
        return s & 1 ? make_uint2(q.z, q.w) : make_uint2(q.x, q.y);
    }
    __device__ static float out_scale(const ec_cuda_packed_weight &, int)
    {
        return 1.0f;
    }
};

enum { INTERLEAVE_FROM_BATCH = 7 };

template <typename T, int MODE, bool VEC>
cudaError_t launch(const ec_cuda_packed_weight &w, const T *x, int batch, void *y, int ldy,
                   cudaStream_t stream)
{
    const ec_qcarry_args none = {};
    if (batch >= INTERLEAVE_FROM_BATCH) /* see the banner */
        return ec_qlaunch_mma_nt<Plain16<true>, T, 1, 1, MODE, VEC>(w, x, w.cols, batch, y, ldy,
                                                                    none, stream);
    return ec_qlaunch_mma_nt<Plain16<false>, T, 1, 1, MODE, VEC>(w, x, w.cols, batch, y, ldy, none,
                                                                 stream);
}

template <typename T, int MODE>
cudaError_t launch_mode(const ec_cuda_packed_weight &w, const T *x, int batch, void *y, int ldy,
                        cudaStream_t stream)
{
    /* Unchecked 16-byte loads need rows of whole 32-column pieces (on 16-byte boundaries too) */
    return w.cols % 32 == 0 ? launch<T, MODE, true>(w, x, batch, y, ldy, stream)
                            : launch<T, MODE, false>(w, x, batch, y, ldy, stream);
}

} // namespace

static_assert(EC_CUDA_GEMV_MAX_BATCH <= 8, "one MMA token tile of 8 rows");

extern "C" int ec_cuda_gemv_mma(ec_cuda_dtype t, ec_gemv_mode mode, const void *w, const void *x,
                                int batch, int rows, int cols, void *y, int ldy,
                                cudaStream_t stream)
{
    if (batch < 2 || batch > EC_CUDA_GEMV_MAX_BATCH || rows < 1 || cols < 1 || ldy < rows)
        return ec_set_error("tensor-core GEMV: unsupported shape batch %d, rows %d, cols %d, ldy "
                            "%d (needs batch 2-%d, ldy >= rows)",
                            batch, rows, cols, ldy, EC_CUDA_GEMV_MAX_BATCH);
    ec_cuda_packed_weight pw = {};
    pw.prec = t == EC_CUDA_BF16 ? EC_PREC_BF16 : EC_PREC_FP16;
    pw.rows = mode == EC_GEMV_SILU_MUL ? 2 * rows : rows;
    pw.cols = cols;
    pw.codes = static_cast<const uint8_t *>(w);
    return ec_dispatch_dtype(t, [&](auto tag) {
        typedef decltype(tag) T;
        const T *xt = static_cast<const T *>(x);
        cudaError_t e =
            mode == EC_GEMV_STORE ? launch_mode<T, EC_GEMV_STORE>(pw, xt, batch, y, ldy, stream)
            : mode == EC_GEMV_ADD ? launch_mode<T, EC_GEMV_ADD>(pw, xt, batch, y, ldy, stream)
                                  : launch_mode<T, EC_GEMV_SILU_MUL>(pw, xt, batch, y, ldy, stream);
        EC_CUDA_TRY(e, "launch of tensor-core GEMV (batch %d, %d x %d, mode %d)", batch, rows, cols,
                    (int)mode);
        return 0;
    });
}
