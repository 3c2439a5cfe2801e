/* kernels_nf4.cu — the fused nf4 and nf4-dq linears: the format policy for kernels_quant.cuh.
 *
 * Layout (docs/formats.md): codes [rows][ceil(cols/2)], element 2j in the high nibble; blocks of
 * 64 columns within a row, one absmax each (fp32, or decoded from the nf4-dq segment's 8-bit
 * code). A lane's 32 consecutive columns (16 bytes) always lie in a single block (blocks start at
 * multiples of 64), so a load needs exactly one absmax: per 64 weights the kernels read 32 bytes
 * of codes + 4 bytes of absmax (nf4) or + 1 byte (nf4-dq, whose fp32 second-level scale per 256
 * blocks stays in L1).
 *
 * Decode: a code byte holds two adjacent columns, i.e. exactly one 16-bit pair of an MMA A
 * fragment, so the kernels look up whole pairs: a 256-entry table of (T(value[hi]),
 * T(value[lo])) in shared memory (T the activation type). At 1-16 token rows (qmma_kernel,
 * Nf4Mma) the MMA multiplies those values and each block's fp32 sums are scaled by its absmax:
 * weight = T(value) * absmax. Above (qgemm_kernel, Nf4), as bitsandbytes' batch-1 kernel
 * (kgemm_4bit_inference_naive) does it, one paired multiply by the absmax cast to T puts it
 * into each weight: T(T(value) * T(absmax)), one rounding per product. */
#include "kernels_quant.cuh"

namespace
{

template <bool DQ> struct Nf4Mma;
template <bool DQ> struct Nf4 {
    using Mma = Nf4Mma<DQ>; /* the policy of qmma_kernel (batch 1-16) */
    static constexpr bool TABLES = true; /* s_tab[0..16) values, s_tab[16..272) dynamic map */
    /* The pair table, 64 KB of dynamic shared memory: entry e (a code byte) at byte e * 256, one
     * copy per lane at + lane * 4, so the 32 lookups of a warp hit 32 different banks whatever
     * the codes, and the address is one byte permute of the code word (the byte at bits 8-15,
     * lane * 4 in bits 0-7). The other half of each 256-byte row is unused: a 128-byte stride
     * would need a shift per lookup. */
    static constexpr int PAIR_BYTES = 256 * 256;
    /* Chunks in flight per tensor-core warp at MT row and NT token tiles, and the CTAs of one
     * token tile per SM the kernel is compiled for (launch bounds):
     * - nf4: two CTAs of at most 128 registers. Left to the compiler, the two-tile kernel of
     *   the ADD mode took 156 and held one CTA of 8 warps per SM: Qwen2.5-14B's o and down
     *   (160 row groups, 80 CTAs) streamed at 0.8-0.9 TB/s (session 32). Two token tiles
     *   are not bounded: at 166-175 registers they hold one CTA per SM with four chunks each;
     *   two CTAs with two or three chunks made batch 12-16 5-10 % slower (session 32, calls 3
     *   and 11).
     * - nf4-dq: its absmax decode (a second table lookup, a multiply and an add per piece)
     *   leaves it short of warps at two CTAs; three CTAs (at most 80 registers) with two chunks
     *   each made it 5-7 % faster at batch 1, and nf4 slower (session 12, call 8; session 13,
     *   calls 4-6). */
    static constexpr int mma_stages(int, int) { return DQ ? 2 : 4; }
    static constexpr int MMA_CTAS = DQ ? 3 : 2;
    struct Piece {                       /* a lane's 32 columns of a row in the tensor-core kernel */
        uint4 code;
        ec_nf4_absmax_raw scale;
    };

    static constexpr bool BLOCK_SCALED = false; /* the absmax is inside each weight */
    /* The chunk column of a lane's k-step k: its 32 columns [32t, 32t+32) in order. */
    __device__ static int kcol(int t, int k) { return 32 * t + 4 * k; }
    /* Columns [cb + 32t, +32) of `row` (the lane's in the chunk at cb) and their block's absmax
     * bytes (no table needed yet); when !valid or past the row the pad code 7 (0.0) everywhere
     * and a zero absmax, so the piece is zero weights. */
    template <bool VEC>
    __device__ static void load_piece(const ec_cuda_packed_weight &w, int row, int cb, bool valid,
                                      Piece &p)
    {
        int c = cb + 32 * (threadIdx.x & 3);
        if (!valid || c >= w.cols) {
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
    /* k-step s of 16 bytes of codes: bytes b = 2(s & 1) and b + 1 of word s / 2 (columns 4s ..
     * 4s+3 of the 32 they hold), as two 16-bit pairs of code values. */
    __device__ static uint2 lookup(uint4 code, int s, const uint32_t *s_pairs)
    {
        uint32_t wd = ec_word(code, s >> 1), lane4 = (threadIdx.x & 31) << 2;
        uint32_t sel = 0x5504u | (uint32_t)(2 * (s & 1)) << 4; /* [lane4, byte b, 0, 0] */
        const char *tab = reinterpret_cast<const char *>(s_pairs);
        return make_uint2(*reinterpret_cast<const uint32_t *>(tab + __byte_perm(wd, lane4, sel)),
                          *reinterpret_cast<const uint32_t *>(tab + __byte_perm(wd, lane4, sel + 0x10)));
    }
    /* k-step s of a piece as two 16-bit weight pairs: values times the absmax. */
    template <typename T>
    __device__ static uint2 afrag(const Piece &p, uint32_t scale2, int s, const uint32_t *s_pairs)
    {
        uint2 v = lookup(p.code, s, s_pairs);
        return make_uint2(ec_hmul2<T>(v.x, scale2), ec_hmul2<T>(v.y, scale2));
    }
    /* The scale is inside each weight already. */
    __device__ static float out_scale(const ec_cuda_packed_weight &, int)
    {
        return 1.0f;
    }
};

/* qmma_kernel's view of nf4 (batch 1-16): the MMA multiplies the code values themselves and each
 * block's absmax scales the fp32 sums of its columns, one fma per accumulator and block instead
 * of a 16-bit multiply per weight pair. A lane takes 16 columns of each of the chunk's two blocks,
 * [cb + 16t, +16) and [cb + 64 + 16t, +16) (an 8-byte load each), so that k-steps 0-3 lie in the
 * first block and 4-7 in the second. The weight is T(value) * absmax in fp32, rounded once: a
 * 16-bit rounding less than the batch > 16 kernel's T(T(value) * T(absmax)). */
template <bool DQ> struct Nf4Mma : Nf4<DQ> {
    static constexpr bool BLOCK_SCALED = true;
    /* The two blocks' absmax are the same for the 4 lanes of a row: lane t loads block t & 1's
     * and swaps it with its neighbour t ^ 1 at use (block_scales), so a piece costs one
     * register more than its codes, as in Nf4 (two absmax a piece spilled the two-tile kernel). */
    struct Piece {
        uint4 code;              /* words 0-1: the first block's 16 columns, 2-3: the second's */
        ec_nf4_absmax_raw scale; /* block (t & 1)'s absmax bytes */
    };
    __device__ static int kcol(int t, int k) { return 64 * (k >> 2) + 16 * t + 4 * (k & 3); }
    template <bool VEC>
    __device__ static void load_piece(const ec_cuda_packed_weight &w, int row, int cb, bool valid,
                                      Piece &p)
    {
        int rb = (w.cols + 1) / 2, t = threadIdx.x & 3;
        uint2 half[2];
#pragma unroll
        for (int j = 0; j < 2; j++) {
            int c = cb + 64 * j + 16 * t;
            half[j] = valid && c < w.cols
                          ? ec_load_codes8<VEC>(w.codes + (size_t)row * rb, rb, c / 2, 0x77u)
                          : make_uint2(0x77777777u, 0x77777777u);
        }
        p.code = make_uint4(half[0].x, half[0].y, half[1].x, half[1].y);
        int blk = cb / EC_NF4_BLOCK + (t & 1);
        p.scale = valid && blk * EC_NF4_BLOCK < w.cols ? ec_nf4_absmax_load<DQ>(w, row, blk)
                                                        : ec_nf4_absmax_raw{0.0f, 0u, 0.0f};
    }
    /* The absmax of the piece's two blocks (k-steps 0-3 and 4-7); all lanes of the warp call it
     * together. */
    __device__ static void block_scales(const float *s_tab, const Piece &p, float (&g)[2])
    {
        float own = ec_nf4_absmax_decode<DQ>(s_tab + 16, p.scale);
        float other = __shfl_xor_sync(0xffffffffu, own, 1);
        bool odd = threadIdx.x & 1;
        g[0] = odd ? other : own;
        g[1] = odd ? own : other;
    }
    /* k-step s as two pairs of code values (the absmax comes with block_scales). */
    template <typename T>
    __device__ static uint2 afrag(const Piece &p, uint32_t, int s, const uint32_t *s_pairs)
    {
        return Nf4<DQ>::lookup(p.code, s, s_pairs);
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
