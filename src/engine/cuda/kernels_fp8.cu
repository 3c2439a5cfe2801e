/* kernels_fp8.cu — the fused fp8 (E4M3 weight-only) linear: the format policy for
 * kernels_quant.cuh.
 *
 * Layout (docs/formats.md): codes [rows][cols] one byte each, scales [rows] = row absmax / 448.
 * E4M3 values are exact in fp16 and in bf16 (3 mantissa bits, exponents 2^-9 .. 2^8), so the
 * decode is the hardware pair conversion cvt.rn.f16x2.e4m3x2 (sm_89+) with no rounding, and the
 * per-row scale is applied once to the finished fp32 dot product instead of to every weight
 * (out_scale): the tensor-core kernels feed the E4M3 values themselves to the MMA, whose products
 * with 16-bit activations are exact in fp32. Per weight the kernels read one byte. */
#include "kernels_quant.cuh"

namespace
{

/* A word's four codes as two exact 16-bit pairs of type T (bytes 0-1, then bytes 2-3). */
template <typename T> __device__ __forceinline__ uint2 e4m3x4_to_pairs(uint32_t four);
template <> __device__ __forceinline__ uint2 e4m3x4_to_pairs<__half>(uint32_t four)
{
    return ec_e4m3x4_to_half2x2(four);
}
template <> __device__ __forceinline__ uint2 e4m3x4_to_pairs<__nv_bfloat16>(uint32_t four)
{
    uint2 h = ec_e4m3x4_to_half2x2(four); /* exact, and exact again in bf16 */
    float2 lo = __half22float2(*reinterpret_cast<__half2 *>(&h.x));
    float2 hi = __half22float2(*reinterpret_cast<__half2 *>(&h.y));
    return make_uint2(ec_pack2<__nv_bfloat16>(lo.x, lo.y), ec_pack2<__nv_bfloat16>(hi.x, hi.y));
}

struct Fp8 {
    static constexpr bool TABLES = false;
    static constexpr int PAIR_BYTES = 0; /* no lookup table */
    /* Chunks in flight per tensor-core warp (32 B a lane each) at MT row and NT token tiles, and
     * the CTAs of one token tile per SM for launch bounds (two of at most 128 registers):
     * - one row tile, one token tile (o and down of the 7B shapes): four chunks (112-120
     *   registers; 0.3-0.7 % faster than three);
     * - two row tiles or two token tiles: two chunks. Three were 1-2 % faster with two
     *   row tiles under an older compiler; with this one ptxas spills 8-160 bytes there at three
     *   (in every mode but the store's vector kernel), and two chunks in every mode made fp8
     *   steps 0.5-3.1 % shorter (Qwen2.5-14B the most). */
    static constexpr int mma_stages(int mt, int nt) { return mt == 1 && nt == 1 ? 4 : 2; }
    static constexpr int mma_ctas(int, bool) { return 2; }
    /* The batch-1 norm carried by the residual adds (kernels_quant.h, ec_cuda_qcarry): steps
     * 0.8-4.4 % shorter on every shape measured, without spills. */
    static constexpr bool CARRY_NORM = true;
    /* At batch 1 a CTA lets the next kernel launch at its start, not after its last request:
     * fp8 steps 1.9-2.6 % shorter on the 7-8 B shapes. Our
     * inference, not profiled: the successor's grid is then launched before this one's first
     * CTAs exit and takes their slots at once, not after the slowest CTA's last request. */
    static constexpr bool RELEASE_AT_START = true;
    /* One row tile per warp everywhere at batch 1 was 5-6 % slower. */
    static constexpr bool ONE_ROW_TILE_AT_BATCH1 = false;
    struct Piece {
        uint4 lo, hi;
    }; /* a lane's 32 columns in the tensor-core kernel */

    /* 16 codes of `row` from column col0; past the row code 0 (0.0). */
    template <bool VEC>
    __device__ static uint4 load16(const ec_cuda_packed_weight &w, int row, int col0)
    {
        return ec_load_codes16<VEC>(w.codes + (size_t)row * w.cols, w.cols, col0, 0u);
    }
    /* Columns [c, c+32) of `row`; code 0 (0.0) when !valid. */
    template <bool VEC>
    __device__ static void load_piece(const ec_cuda_packed_weight &w, int row, int c, bool valid,
                                      Piece &p)
    {
        if (!valid) {
            p.lo = p.hi = make_uint4(0, 0, 0, 0);
            return;
        }
        p.lo = load16<VEC>(w, row, c);
        p.hi = load16<VEC>(w, row, c + 16);
    }
    template <typename T> __device__ static void load_pairs(const float *, uint32_t *) {}
    template <typename T>
    __device__ static uint32_t piece_scale(const float *, const Piece &)
    {
        return 0; /* unused: the row scale goes to the finished sums (out_scale) */
    }
    /* k-step s: columns 4s .. 4s+3 = word s of the piece, as two exact 16-bit pairs. */
    template <typename T>
    __device__ static uint2 afrag(const Piece &p, uint32_t, int s, const uint32_t *)
    {
        return e4m3x4_to_pairs<T>(s < 4 ? ec_word(p.lo, s) : ec_word(p.hi, s - 4));
    }
    __device__ static float out_scale(const ec_cuda_packed_weight &w, int row)
    {
        return __ldg(w.scales + row);
    }
};

} // namespace

extern "C" int ec_cuda_fp8_fused(ec_cuda_dtype t, ec_gemv_mode mode, const ec_cuda_packed_weight *w,
                                 const void *x, int ldx, int batch, void *y, int ldy,
                                 const ec_cuda_qsplit *split, const ec_cuda_qcarry *carry,
                                 cudaStream_t stream)
{
    return ec_qlinear_fused_format<Fp8>(t, mode, w, x, ldx, batch, y, ldy, split, carry, stream);
}
