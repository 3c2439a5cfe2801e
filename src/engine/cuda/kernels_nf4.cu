/* kernels_nf4.cu — the fused nf4 and nf4-dq linears: the format policy for kernels_quant.cuh.
 *
 * Layout (docs/formats.md): codes [rows][ceil(cols/2)], element 2j in the high nibble; blocks of
 * 64 columns within a row, one absmax each (fp32, or decoded from the nf4-dq segment's 8-bit
 * code). A lane's 32 consecutive columns (16 bytes) always lie in a single block (blocks start at
 * multiples of 64), so a load needs exactly one absmax: per 64 weights the kernels read 32 bytes
 * of codes + 4 bytes of absmax (nf4) or + 1 byte (nf4-dq, whose fp32 second-level scale per 256
 * blocks stays in L1).
 *
 * Decode, as bitsandbytes' batch-1 kernel (kgemm_4bit_inference_naive) does it: the 16 code
 * values in the activation type T, times the block absmax cast to T, one rounding per product —
 * weight = T(T(value) * T(absmax)) — multiplied by the activations with fp32 accumulation. A code
 * byte holds two adjacent columns, i.e. exactly one 16-bit pair of an MMA A fragment, so the
 * kernels look up whole pairs: a 256-entry table of (T(value[hi]), T(value[lo])) in shared
 * memory, then one paired multiply by the absmax. */
#include "kernels_quant.cuh"

namespace
{

template <bool DQ> struct Nf4 {
    static constexpr bool TABLES = true; /* s_tab[0..16) values, s_tab[16..272) dynamic map */
    /* The pair table, 64 KB of dynamic shared memory: entry e (a code byte) at byte e * 256, one
     * copy per lane at + lane * 4, so the 32 lookups of a warp hit 32 different banks whatever
     * the codes, and the address is one byte permute of the code word (the byte at bits 8-15,
     * lane * 4 in bits 0-7). The other half of each 256-byte row is unused: a 128-byte stride
     * would need a shift per lookup. */
    static constexpr int PAIR_BYTES = 256 * 256;
    /* Chunks in flight per tensor-core warp at MT row and NT token tiles, and the CTAs of one
     * token tile per SM the kernel is compiled for at MT row tiles, at batch 1 or above
     * (launch bounds):
     * - nf4: two CTAs of at most 128 registers. Left to the compiler, the two-tile kernel of
     *   the ADD mode took 156 and held one CTA of 8 warps per SM: Qwen2.5-14B's o and down
     *   (160 row groups, 80 CTAs) streamed at 0.8-0.9 TB/s. Two token tiles
     *   are not bounded: at 166-175 registers they hold one CTA per SM with four chunks each;
     *   two CTAs with two or three chunks made batch 12-16 5-10 % slower.
     * - nf4-dq at batch 1 (one row tile): its absmax decode (a second table lookup, a multiply
     *   and an add per piece) leaves it short of warps at two CTAs; three CTAs (at most 80
     *   registers, where the one-tile kernel does not spill) with two chunks each made it 5-7 %
     *   faster, and two row tiles at two CTAs
     *   were slower there.
     * - nf4-dq at 2-8 token rows: two CTAs, for one row tile and two. Bounded to three, the
     *   two-tile kernel spilled 244-304 bytes; at two CTAs neither spills, and the
     *   steps of six shapes were 6-25 % shorter. */
    static constexpr int mma_stages(int, int) { return DQ ? 2 : 4; }
    static constexpr int mma_ctas(int mt, bool batch1) { return DQ && mt == 1 && batch1 ? 3 : 2; }
    /* No carried norm (kernels_quant.h, ec_cuda_qcarry): staging the row made nf4's two-tile
     * SiLU·mul kernel spill (80 bytes), and batch-1 steps 0.9-3.0 % slower on the 0.5-3 B shapes
     * (0.9 % faster on Llama-2-7B). */
    static constexpr bool CARRY_NORM = false;
    /* At batch 1, nf4-dq runs one row tile per warp (ec_qlaunch_mma) and lets its successor
     * launch at its start (qmma_kernel): steps 5-29 % shorter on six shapes from 0.5 to 14 B.
     * Bounded to three CTAs, the two-tile kernel spilled 244-304 bytes (ptxas), the one-tile
     * kernel none. nf4 keeps two row
     * tiles and the release after a CTA's last request: with both changes its 7-8 B steps were
     * 1.5-2.7 % shorter, but Qwen2.5-0.5B's 4 % and Qwen2.5-14B's 4.7 % longer. */
    static constexpr bool ONE_ROW_TILE_AT_BATCH1 = DQ;
    static constexpr bool RELEASE_AT_START = DQ;
    struct Piece {                       /* a lane's 32 columns of a row in the tensor-core kernel */
        uint4 code;
        ec_nf4_absmax_raw scale;
    };

    /* Columns [c, c+32) of `row` and their block's absmax bytes (no table needed yet); when
     * !valid the pad code 7 (0.0) everywhere and a zero absmax, so the piece is zero weights. */
    template <bool VEC>
    __device__ static void load_piece(const ec_cuda_packed_weight &w, int row, int c, bool valid,
                                      Piece &p)
    {
        if (!valid) {
            p.code = make_uint4(0x77777777u, 0x77777777u, 0x77777777u, 0x77777777u);
            p.scale = {0.0f, 0u, 0.0f};
            return;
        }
        int rb = (w.cols + 1) / 2;
        p.code = ec_load_codes16<VEC>(w.codes + (size_t)row * rb, rb, c / 2, 0x77u);
        p.scale = ec_nf4_absmax_load<DQ>(w, row, c / EC_NF4_BLOCK);
    }

    /* Fills the pair table from the values in s_tab (all threads of the block), four lanes'
     * copies per 16-byte store. */
    template <typename T> __device__ static void load_pairs(const float *s_tab, uint32_t *s_pairs)
    {
        for (int i = threadIdx.x; i < 256 * 8; i += blockDim.x) {
            int e = i >> 3, quad = i & 7;
            uint32_t v = ec_pack2<T>(s_tab[e >> 4], s_tab[e & 15]);
            reinterpret_cast<uint4 *>(s_pairs)[e * 16 + quad] = make_uint4(v, v, v, v);
        }
    }
    /* The piece's block absmax in T, twice. */
    template <typename T>
    __device__ static uint32_t piece_scale(const float *s_tab, const Piece &p)
    {
        float a = ec_nf4_absmax_decode<DQ>(s_tab + 16, p.scale);
        return ec_pack2<T>(a, a);
    }
    /* k-step s of a piece: columns 4s .. 4s+3, i.e. bytes b = 2(s & 1) and b + 1 of word s / 2,
     * as two 16-bit weight pairs. */
    template <typename T>
    __device__ static uint2 afrag(const Piece &p, uint32_t scale2, int s, const uint32_t *s_pairs)
    {
        uint32_t wd = ec_word(p.code, s >> 1), lane4 = (threadIdx.x & 31) << 2;
        uint32_t sel = 0x5504u | (uint32_t)(2 * (s & 1)) << 4; /* [lane4, byte b, 0, 0] */
        const char *tab = reinterpret_cast<const char *>(s_pairs);
        uint32_t p0 = *reinterpret_cast<const uint32_t *>(tab + __byte_perm(wd, lane4, sel));
        uint32_t p1 = *reinterpret_cast<const uint32_t *>(tab + __byte_perm(wd, lane4, sel + 0x10));
        return make_uint2(ec_hmul2<T>(p0, scale2), ec_hmul2<T>(p1, scale2));
    }
    /* The scale is inside each weight already. */
    __device__ static float out_scale(const ec_cuda_packed_weight &, int)
    {
        return 1.0f;
    }
};

} // namespace

extern "C" int ec_cuda_nf4_fused(ec_cuda_dtype t, ec_gemv_mode mode, const ec_cuda_packed_weight *w,
                                 const void *x, int ldx, int batch, void *y, int ldy,
                                 const ec_cuda_qsplit *split, const ec_cuda_qcarry *carry,
                                 cudaStream_t stream)
{
    if (w->prec == EC_PREC_NF4_DQ)
        return ec_qlinear_fused_format<Nf4<true>>(t, mode, w, x, ldx, batch, y, ldy, split, carry,
                                                  stream);
    return ec_qlinear_fused_format<Nf4<false>>(t, mode, w, x, ldx, batch, y, ldy, split, carry,
                                               stream);
}
