/* kernels_nf4.cu — the fused nf4 and nf4-dq linears: the format policy for kernels_quant.cuh.
 *
 * Layout (docs/formats.md): codes [rows][ceil(cols/2)], element 2j in the high nibble; blocks of
 * 64 columns within a row, one absmax each (fp32, or decoded from the nf4-dq segment's 8-bit
 * code). A 16-byte load holds 32 consecutive columns of one row, which always lie in a single
 * block (blocks start at multiples of 64), so a load needs exactly one absmax: per 64 weights the
 * kernels read 32 bytes of codes + 4 bytes of absmax (nf4) or + 1 byte (nf4-dq, whose fp32
 * second-level scale per 256 blocks stays in L1). The 16 code values live in shared memory
 * (16 floats in 16 banks, so lanes never conflict), the dynamic map next to them. */
#include "kernels_quant.cuh"

namespace
{

template <bool DQ> struct Nf4 {
    static constexpr bool TABLES = true; /* s_tab[0..16) values, s_tab[16..272) dynamic map */
    static constexpr int GEMV_COLS = 32;  /* columns per 16-byte load */
    static constexpr int MMA_STAGES = 4;  /* chunks in flight per tensor-core warp */
    struct Piece {                        /* a lane's 32 columns of a row in the tensor-core kernel */
        uint4 code;
        ec_nf4_absmax_raw scale;
    };

    /* 16 bytes of row `row` from byte byte0 (a multiple of 16); past the row the pad code 7
     * (0.0) in both nibbles. */
    template <bool VEC>
    __device__ static uint4 load16(const ec_cuda_packed_weight &w, int row, int byte0)
    {
        int rb = (w.cols + 1) / 2;
        return ec_load_codes16<VEC>(w.codes + (size_t)row * rb, rb, byte0, 0x77u);
    }

    /* Chunk k of `row` (columns [32k, 32k+32), one block) and its block's absmax bytes. */
    template <bool VEC>
    __device__ static void load_chunk(const ec_cuda_packed_weight &w, int row, int k, ec_qchunk &c)
    {
        c.code = load16<VEC>(w, row, 16 * k);
        c.scale = ec_nf4_absmax_load<DQ>(w, row, k / 2);
    }
    __device__ static float chunk_scale(const ec_cuda_packed_weight &w, const float *s_tab, int row,
                                        const ec_qchunk &c)
    {
        return ec_nf4_absmax_decode<DQ>(w, s_tab + 16, row, c.scale);
    }
    /* A word's 8 codes as byte offsets into s_tab (code * 4), two logic ops for all of them:
     * byte i of hi is the high nibble of byte i (column 2i of the word), of lo the low nibble
     * (column 2i + 1); value() then costs one byte extract and one shared load. */
    __device__ static void offsets(uint32_t wd, uint32_t &hi, uint32_t &lo)
    {
        hi = (wd >> 2) & 0x3c3c3c3cu;
        lo = (wd << 2) & 0x3c3c3c3cu;
    }
    __device__ static float value(const float *s_tab, uint32_t offs, int i)
    {
        const char *tab = reinterpret_cast<const char *>(s_tab);
        return *reinterpret_cast<const float *>(tab + __byte_perm(offs, 0, 0x4440 + i));
    }
    /* Columns 8j .. 8j+7 of a chunk (word j), unscaled. */
    __device__ static void values8(uint4 c, int j, const float *s_tab, float v[8])
    {
        uint32_t hi, lo;
        offsets(ec_word(c, j), hi, lo);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            v[2 * i] = value(s_tab, hi, i);
            v[2 * i + 1] = value(s_tab, lo, i);
        }
    }

    /* Columns [c, c+32) of `row` and their block's absmax bytes (no table needed yet); when
     * !valid the pad code 7 (0.0) everywhere and a zero absmax, so the piece is zero weights. */
    template <bool VEC>
    __device__ static void load_piece(const ec_cuda_packed_weight &w, int row, int c, bool valid,
                                      Piece &p)
    {
        if (!valid) {
            p.code = make_uint4(0x77777777u, 0x77777777u, 0x77777777u, 0x77777777u);
            p.scale = {0.0f, 0u};
            return;
        }
        p.code = load16<VEC>(w, row, c / 2);
        p.scale = ec_nf4_absmax_load<DQ>(w, row, c / EC_NF4_BLOCK);
    }
    __device__ static float piece_scale(const ec_cuda_packed_weight &w, const float *s_tab, int row,
                                        const Piece &p)
    {
        return ec_nf4_absmax_decode<DQ>(w, s_tab + 16, row, p.scale);
    }
    /* k-step s of a piece: columns 4s .. 4s+3, i.e. bytes b = 2(s & 1) and b + 1 of word s / 2,
     * as 16-bit pairs of round(value * absmax), the weight the reference GEMM also multiplies. */
    template <typename T>
    __device__ static uint2 afrag(const Piece &p, float scale, int s, const float *s_tab)
    {
        uint32_t hi, lo;
        offsets(ec_word(p.code, s >> 1), hi, lo);
        int b = 2 * (s & 1);
        return make_uint2(
            ec_pack2<T>(value(s_tab, hi, b) * scale, value(s_tab, lo, b) * scale),
            ec_pack2<T>(value(s_tab, hi, b + 1) * scale, value(s_tab, lo, b + 1) * scale));
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
                                 const ec_cuda_qsplit *split, cudaStream_t stream)
{
    if (w->prec == EC_PREC_NF4_DQ)
        return ec_qlinear_fused_format<Nf4<true>>(t, mode, w, x, ldx, batch, y, ldy, split, stream);
    return ec_qlinear_fused_format<Nf4<false>>(t, mode, w, x, ldx, batch, y, ldy, split, stream);
}
