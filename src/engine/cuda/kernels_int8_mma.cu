/* kernels_int8_mma.cu — the fused int8 and int8-mixed linear for 9..64 token rows: one pass over
 * the int8 weights on int8 tensor cores, with LLM.int8's 16-bit outlier product taken from the
 * same weight loads.
 *
 * Before it these batches ran cuBLAS' int8 GEMM into an int32 scratch, then an epilogue kernel
 * (scales, mode) that for int8-mixed read the weight a second time for its outlier columns
 * (the Llama-2-7B decode step at batch 64 took 17.3 ms in
 * int8-mixed against int8's 12.7). Here:
 *  - A CTA of MMA_WARPS warps holds MMA_WARPS row tiles (16 weight rows each; for SiLU·mul 8 gate
 *    rows and their 8 up rows, so a lane holds both halves of its outputs) and all the tokens (NT
 *    tiles of 8). It walks the columns in chunks of MMA_K = 64. Lane (g, t) loads bytes
 *    [16t, 16t + 16) of the chunk of its rows g and g + 8 (16-byte evict-first loads, MMA_STAGES
 *    chunks in flight in registers, the first ones before the PDL wait: weights are no step
 *    data), and those bytes are the A fragments of two m16n8k32 MMAs as they are: MMA j takes
 *    words 2j and 2j + 1 (ec_mma16832_s8's layout). That is a fixed permutation of k inside the
 *    chunk, and the activation codes follow it without a shuffle, since lane (g, t) needs bytes
 *    [16t, 16t + 16) of token g's chunk for its B fragments: one 16-byte shared-memory load per
 *    token tile, conflict-free (a quarter warp reads 128 consecutive bytes). The codes of a chunk
 *    (8 NT tokens x 64 bytes) are copied to shared memory once per CTA, MMA_XAHEAD chunks ahead.
 *  - int8-mixed: xq holds code 0 in the outlier columns, so the int8 MMAs add nothing for them.
 *    Their 16-bit product: the lane holding an outlier column's weight bytes writes fp16(q · step)
 *    of its rows g and g + 8 into its warp's ring in shared memory, at the column's position in
 *    the call's ascending outlier list (the mask's popcounts give it, no list walk), and each time
 *    16 positions are complete the warp runs one m16n8k16 MMA per token tile: A from the ring,
 *    B from xo, the outlier activations [token][position] that the quantize kernel gathered. So
 *    the 16-bit part costs one MMA per 16 outlier columns and no weight bytes of its own.
 *  - Narrow weights (o and down of the 7 B shapes: 32 CTAs) split their chunks over a cluster of
 *    gridDim.z CTAs (mma_split); the int32 partial sums and the outlier product's fp32 ones meet
 *    through distributed shared memory, added in rank order, so results do not depend on timing.
 * Numerics: the int8 part is exact, so without outlier columns the outputs are bit-identical to
 * the CPU's (int8_output's expression); the outlier sum is a tensor-core sum in its own order
 * (groups of 16 positions, then the split's ranks), within the bound test_cuda_int8 applies to
 * every fused path.
 * It handles 9..64 rows of both formats, but streams the weights slower than cuBLAS' int8 GEMM,
 * so ec_cuda_qlinear_one_pass routes only int8-mixed at 9..16
 * rows here, where skipping the epilogue's second weight read wins. */
#include "common/cuda_check.h"
#include "kernels_common.cuh"
#include "kernels_int8.cuh"

#include <limits.h>
#include <stdint.h>

enum {
    MMA_WARPS = 8,               /* row tiles per CTA */
    MMA_THREADS = MMA_WARPS * 32,
    MMA_K = 64,                  /* columns per chunk: two k32 MMAs */
    MMA_STAGES = 4,              /* weight chunks in flight per warp, in registers */
    MMA_XAHEAD = 2,              /* activation chunks copied ahead of the one in use */
    MMA_XSLOTS = MMA_XAHEAD + 2, /* their slots: one more for a warp still reading the last one */
    MMA_MAX_CHUNKS = 512,        /* widest input, 32768 columns (the decode prepare's bound too) */
    MMA_MAX_SPLIT = 8,           /* CTAs per cluster: the portable limit */
    MMA_MIN_CHUNKS = 8,          /* chunks per CTA of a split, at least */
    RING = 128,    /* outlier positions of a warp's ring: up to 15 pending plus a chunk's 64 */
    RING_LD = RING + 8, /* halves per ring row: 68 words, so the A fragment loads hit 32 banks */
};
static_assert((RING & (RING - 1)) == 0 && RING >= 15 + MMA_K, "the ring must hold a chunk");

/* Dynamic shared memory of a CTA: while streaming the x tiles, then the rings and the split's
 * mask words; at the end, for a split, the partial sums (int32, then fp32 with outliers), which
 * reuse the same bytes. */
template <int NT, bool MIXED> struct MmaSmem {
    static constexpr size_t X = (size_t)MMA_XSLOTS * NT * 8 * MMA_K;
    static constexpr size_t RINGS = MIXED ? (size_t)MMA_WARPS * 16 * RING_LD * sizeof(__half) : 0;
    static constexpr size_t MASK = MIXED ? (size_t)MMA_MAX_CHUNKS * sizeof(unsigned long long) : 0;
    static constexpr size_t PART_INT = (size_t)MMA_WARPS * NT * 4 * 32 * sizeof(int);
    static constexpr size_t PART = PART_INT * (MIXED ? 2 : 1);
    static constexpr size_t STREAM = X + RINGS + MASK;
    static constexpr size_t BYTES = STREAM > PART ? STREAM : PART;
};

/* y rows ra (and rb) of token tok from the finished sums, through the GEMVs' write
 * (ec_gemv_write: STORE / ADD fp32, or SILU_MUL fp16 silu(gate ra) * (up rb) into row ra). */
template <int MODE>
__device__ __forceinline__ void mma_put(void *y, int ldy, int tok, int ra, int rb, bool va,
                                        bool vb, float step_a, float step_b, float xs, int acc_a,
                                        int acc_b, float o_a, float o_b)
{
    if (!va) return;
    float ya = int8_output(acc_a, step_a, xs, o_a);
    float yb = vb ? int8_output(acc_b, step_b, xs, o_b) : 0.0f;
    ec_gemv_write<__half, MODE>(y, ldy, tok, ra, vb ? rb : ra, ya, yb);
}

/* w int8 [rows][ld] (SILU_MUL: gate rows, then up rows, 2 x out_rows), ld % MMA_K == 0; xq int8
 * [nb][ld]; xo fp16 [nb][ld] (MIXED: outlier positions, zero from the count to the next multiple
 * of 16); mask: the outlier scan's words (MIXED). */
template <int MODE, int NT, bool MIXED>
__global__ void __launch_bounds__(MMA_THREADS, 1)
    int8_mma_kernel(const int8_t *__restrict__ w, const float *__restrict__ wscale, int out_rows,
                    int ld, const int8_t *__restrict__ xq, const float *__restrict__ xscale,
                    const __half *__restrict__ xo, const unsigned *__restrict__ mask, int nb,
                    void *y, int ldy)
{
    typedef MmaSmem<NT, MIXED> L;
    typedef uint4 XTile[NT * 8][MMA_K / 16]; /* [token][16-byte granule of the chunk] */
    typedef __half Ring[16][RING_LD];        /* [row of the tile][position % RING] */
    extern __shared__ __align__(16) unsigned char smem[];
    XTile *s_x = reinterpret_cast<XTile *>(smem);
    Ring *s_ring = reinterpret_cast<Ring *>(smem + L::X);
    unsigned long long *s_mask = reinterpret_cast<unsigned long long *>(smem + L::X + L::RINGS);

    constexpr bool SILU = MODE == EC_GEMV_SILU_MUL;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    int tile = blockIdx.x * MMA_WARPS + warp;
    int ra = SILU ? tile * 8 + g : tile * 16 + g, rb = SILU ? ra + out_rows : ra + 8;
    bool va = ra < out_rows, vb = SILU ? va : rb < out_rows;
    int nchunks = ld / MMA_K, split = gridDim.z, q = blockIdx.z;
    int c_begin = q * nchunks / split, n = (q + 1) * nchunks / split - c_begin;
    const int8_t *wa = w + (size_t)(va ? ra : 0) * ld + (size_t)c_begin * MMA_K + 16 * t;
    const int8_t *wb = w + (size_t)(vb ? rb : 0) * ld + (size_t)c_begin * MMA_K + 16 * t;
    float step_a = va ? row_step(wscale, ra) : 0.0f, step_b = vb ? row_step(wscale, rb) : 0.0f;

    uint4 sa[MMA_STAGES], sb[MMA_STAGES]; /* chunk i of the run in stage i % MMA_STAGES */
    const uint4 zero = make_uint4(0, 0, 0, 0);
    auto request = [&](uint4 &a, uint4 &b, int i) {
        a = va ? __ldcs(reinterpret_cast<const uint4 *>(wa + (size_t)i * MMA_K)) : zero;
        b = vb ? __ldcs(reinterpret_cast<const uint4 *>(wb + (size_t)i * MMA_K)) : zero;
    };
#pragma unroll
    for (int v = 0; v < MMA_STAGES; v++)
        if (v < n) request(sa[v], sb[v], v);
    ec_wait_inputs(false); /* xq, xo, the mask, xscale and y belong to the step */

    auto copy_x = [&](int i) { /* chunk i's codes into slot i % MMA_XSLOTS; zeros past nb */
        XTile &d = s_x[i % MMA_XSLOTS];
        const int8_t *src = xq + (size_t)(c_begin + i) * MMA_K;
        for (int e = threadIdx.x; e < NT * 8 * (MMA_K / 16); e += MMA_THREADS) {
            int tok = e / (MMA_K / 16), gr = e % (MMA_K / 16);
            bool in = tok < nb;
            ec_cp_async16(&d[tok][gr], in ? src + (size_t)tok * ld + 16 * gr : xq, in);
        }
    };
#pragma unroll
    for (int i = 0; i < MMA_XAHEAD; i++) {
        if (i < n) copy_x(i);
        ec_cp_async_commit();
    }

    int acc[NT][4];
    float out[NT][4]; /* the outlier product (MIXED; else stays 0) */
#pragma unroll
    for (int j = 0; j < NT; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            acc[j][e] = 0;
            out[j][e] = 0.0f;
        }

    /* Outlier positions: pos = this warp's next one to write, done = the first not multiplied
     * (a multiple of 16); the ring slots [done, pos) hold the pending weights; end = one past
     * the CTA's last. xb holds the B fragments of the group at done, loaded a group ahead: the
     * warps of a CTA reach a group together, and waiting there for an L2 round trip stalled
     * them all (the first build of this kernel). */
    int pos = 0, done = 0, end = 0;
    uint2 xb[NT];
    auto load_xb = [&](int q0) { /* the B fragments of the group at q0, if it exists */
#pragma unroll
        for (int j = 0; j < NT; j++) {
            int tok = 8 * j + g;
            xb[j] = make_uint2(0, 0);
            if (tok < nb && q0 < end) {
                const __half *xr = xo + (size_t)tok * ld + q0 + 2 * t;
                xb[j] = make_uint2(*reinterpret_cast<const uint32_t *>(xr),
                                   *reinterpret_cast<const uint32_t *>(xr + 8));
            }
        }
    };
    __half(*ring)[RING_LD] = s_ring[warp];
    auto zero_slots = [&](int from, int to) { /* slots [from, to), every row, to - from < 16 */
        int span = to - from;
        for (int e = lane; e < 16 * span; e += 32)
            ring[e / span][(from + e % span) & (RING - 1)] = __float2half_rn(0.0f);
        __syncwarp();
    };
    auto group = [&]() { /* the 16 positions from done times every token tile, done += 16 */
        int s0 = (done & (RING - 1)) + 2 * t;
        const uint32_t a[4] = {*reinterpret_cast<const uint32_t *>(&ring[g][s0]),
                               *reinterpret_cast<const uint32_t *>(&ring[g + 8][s0]),
                               *reinterpret_cast<const uint32_t *>(&ring[g][s0 + 8]),
                               *reinterpret_cast<const uint32_t *>(&ring[g + 8][s0 + 8])};
#pragma unroll
        for (int j = 0; j < NT; j++) ec_mma16816<__half>(out[j], a, xb[j]);
        done += 16;
        load_xb(done);
    };
    if constexpr (MIXED) {
        for (int i = threadIdx.x; i < n; i += MMA_THREADS) {
            int c = c_begin + i;
            s_mask[i] = (unsigned long long)mask[2 * c + 1] << 32 | mask[2 * c];
        }
        int before = 0, upto = 0; /* outlier columns left of this CTA's chunks, and to its end */
        for (int wd = lane; wd < 2 * (c_begin + n); wd += 32) {
            int c = __popc(mask[wd]);
            upto += c;
            if (wd < 2 * c_begin) before += c;
        }
        pos = (int)ec_warp_reduce_add((unsigned)before);
        end = (int)ec_warp_reduce_add((unsigned)upto);
        done = pos & ~15;
        if (pos > done) zero_slots(done, pos);
        load_xb(done);
    }

    for (int i0 = 0; i0 < n; i0 += MMA_STAGES) {
#pragma unroll
        for (int v = 0; v < MMA_STAGES; v++) {
            int i = i0 + v;
            if (i >= n) break;
            if (i + MMA_XAHEAD < n) copy_x(i + MMA_XAHEAD);
            ec_cp_async_commit(); /* maybe empty: one group per chunk keeps the count */
            ec_cp_async_wait<MMA_XAHEAD>();
            __syncthreads(); /* chunk i's codes (and before the first, the mask words) */
            const XTile &xt = s_x[i % MMA_XSLOTS];
            const uint32_t a0[4] = {sa[v].x, sb[v].x, sa[v].y, sb[v].y};
            const uint32_t a1[4] = {sa[v].z, sb[v].z, sa[v].w, sb[v].w};
#pragma unroll
            for (int j = 0; j < NT; j++) {
                uint4 xb = xt[8 * j + g][t];
                ec_mma16832_s8(acc[j], a0, make_uint2(xb.x, xb.y));
                ec_mma16832_s8(acc[j], a1, make_uint2(xb.z, xb.w));
            }
            if constexpr (MIXED) {
                unsigned long long bits = s_mask[i];
                if (bits) { /* warp-uniform */
                    unsigned mine = (unsigned)(bits >> (16 * t)) & 0xffffu;
                    int p = pos + __popcll(bits & ((1ull << (16 * t)) - 1));
                    for (; mine; mine &= mine - 1) {
                        int byte = __ffs(mine) - 1, slot = p++ & (RING - 1);
                        ring[g][slot] = dequant16_half(chunk_byte(sa[v], byte), step_a);
                        ring[g + 8][slot] = dequant16_half(chunk_byte(sb[v], byte), step_b);
                    }
                    pos += __popcll(bits);
                    __syncwarp();
                    while (pos - done >= 16) group();
                }
            }
            if (i + MMA_STAGES < n) request(sa[v], sb[v], i + MMA_STAGES);
        }
    }
    if constexpr (MIXED) {
        if (pos > done) { /* the last, partial group: its empty slots multiply as zeros */
            zero_slots(pos, done + 16);
            group();
        }
    }

    if (split == 1) {
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                int tok = 8 * j + 2 * t + h;
                if (tok < nb)
                    mma_put<MODE>(y, ldy, tok, ra, rb, va, vb, step_a, step_b, xscale[tok],
                                  acc[j][h], acc[j][2 + h], out[j][h], out[j][2 + h]);
            }
        return;
    }
    /* Split: every CTA leaves its partials in shared memory as [warp][fragment entry][lane];
     * CTA q then adds, for the token pairs u = 2j + h with u % split == q, all CTAs' entries
     * of its own warp and lane in rank order and writes them. */
    __syncthreads(); /* every warp is done with the x tiles and rings the partials overwrite */
    int *p_acc = reinterpret_cast<int *>(smem) + warp * NT * 4 * 32;
    float *p_out = reinterpret_cast<float *>(smem + L::PART_INT) + warp * NT * 4 * 32;
#pragma unroll
    for (int j = 0; j < NT; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            p_acc[(4 * j + e) * 32 + lane] = acc[j][e];
            if (MIXED) p_out[(4 * j + e) * 32 + lane] = out[j][e];
        }
    ec_cluster cluster;
    cluster.sync();
    for (int u = q; u < 2 * NT; u += split) {
        int j = u >> 1, h = u & 1, tok = 8 * j + 2 * t + h;
        if (tok >= nb) continue;
        int ia = (4 * j + h) * 32 + lane, ib = ia + 2 * 32;
        int sum_a = 0, sum_b = 0;
        float o_a = 0.0f, o_b = 0.0f;
        for (int r = 0; r < split; r++) {
            const int *pa = cluster.map_shared_rank(p_acc, r);
            sum_a += pa[ia];
            sum_b += pa[ib];
            if (MIXED) {
                const float *po = cluster.map_shared_rank(p_out, r);
                o_a += po[ia];
                o_b += po[ib];
            }
        }
        mma_put<MODE>(y, ldy, tok, ra, rb, va, vb, step_a, step_b, xscale[tok], sum_a, sum_b,
                      o_a, o_b);
    }
    cluster.sync(); /* no CTA leaves while another reads its partials */
}

/* CTAs per cluster for a grid of `ctas` row blocks over `nchunks` chunks, `resident` CTAs at a
 * time: the power of two (at most MMA_MAX_SPLIT, keeping MMA_MIN_CHUNKS chunks per CTA) with
 * the least estimated time, waves x chunks per CTA, plus two chunks' worth per added CTA for
 * the reduction (at 64 tokens, one CTA per SM: o and down of the 7 B shapes, 32 CTAs -> 4; qkv's
 * 96 -> 4; gate/up's 172 -> 2). */
static int mma_split(int ctas, int nchunks, int resident)
{
    int best = 1;
    long best_cost = LONG_MAX;
    for (int s = 1; s <= MMA_MAX_SPLIT && nchunks / s >= MMA_MIN_CHUNKS; s *= 2) {
        long waves = ((long)ctas * s + resident - 1) / resident;
        long cost = waves * ((nchunks + s - 1) / s) + 2L * (s - 1);
        if (cost < best_cost) {
            best = s;
            best_cost = cost;
        }
    }
    return best;
}

template <int MODE, int NT, bool MIXED>
static cudaError_t launch_mma(const int8_t *w, const float *wscale, int out_rows, int ld,
                              const int8_t *xq, const float *xscale, const __half *xo,
                              const unsigned *mask, int ntok, void *y, int ldy,
                              cudaStream_t stream)
{
    constexpr auto kernel = int8_mma_kernel<MODE, NT, MIXED>;
    constexpr size_t smem = MmaSmem<NT, MIXED>::BYTES;
    cudaError_t e = ec_smem_optin<kernel>(smem);
    if (e != cudaSuccess) return e;
    int resident = ec_per_device([](int dev) {
        int per_sm = 0, sms = 0;
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, MMA_THREADS, smem) !=
                cudaSuccess ||
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
            return 0;
        return per_sm * sms;
    });
    int tiles = MODE == EC_GEMV_SILU_MUL ? (out_rows + 7) / 8 : (out_rows + 15) / 16;
    int ctas = (tiles + MMA_WARPS - 1) / MMA_WARPS;
    /* A split's CTAs meet in a cluster: sm_90+ code alone. */
    int split = ec_code_features() & EC_GPU_CLUSTERS
                    ? mma_split(ctas, ld / MMA_K, resident > 0 ? resident : ctas)
                    : 1;
    return ec_launch_clustered(kernel, dim3((unsigned)ctas, 1, (unsigned)split),
                               dim3(1, 1, (unsigned)split), dim3(MMA_THREADS), smem, stream, w,
                               wscale, out_rows, ld, xq, xscale, xo, mask, ntok, y, ldy);
}

template <int MODE, bool MIXED>
static cudaError_t launch_mma_nt(const int8_t *w, const float *wscale, int out_rows, int ld,
                                 const int8_t *xq, const float *xscale, const __half *xo,
                                 const unsigned *mask, int ntok, void *y, int ldy,
                                 cudaStream_t stream)
{
    if (ntok <= 16)
        return launch_mma<MODE, 2, MIXED>(w, wscale, out_rows, ld, xq, xscale, xo, mask, ntok, y,
                                          ldy, stream);
    if (ntok <= 32)
        return launch_mma<MODE, 4, MIXED>(w, wscale, out_rows, ld, xq, xscale, xo, mask, ntok, y,
                                          ldy, stream);
    return launch_mma<MODE, 8, MIXED>(w, wscale, out_rows, ld, xq, xscale, xo, mask, ntok, y, ldy,
                                      stream);
}

template <int MODE>
static cudaError_t launch_mma_mode(const int8_t *w, const float *wscale, int out_rows, int ld,
                                   const int8_t *xq, const float *xscale, const __half *xo,
                                   const unsigned *mask, int ntok, void *y, int ldy,
                                   cudaStream_t stream)
{
    return mask ? launch_mma_nt<MODE, true>(w, wscale, out_rows, ld, xq, xscale, xo, mask, ntok,
                                            y, ldy, stream)
                : launch_mma_nt<MODE, false>(w, wscale, out_rows, ld, xq, xscale, xo, mask, ntok,
                                             y, ldy, stream);
}

static_assert(EC_CUDA_INT8_MMA_MAX_BATCH == 64, "launch_mma_nt's widest tile is 8 x 8 tokens");

extern "C" int ec_cuda_int8_mma(ec_gemv_mode mode, const int8_t *w, const float *wscale, int rows,
                                int ld, const int8_t *xq, const float *xscale, const void *xo,
                                const unsigned *mask, int ntok, void *y, int ldy,
                                cudaStream_t stream)
{
    if (ntok < 1 || ntok > EC_CUDA_INT8_MMA_MAX_BATCH || rows < 1 || ld % MMA_K != 0 ||
        ld / MMA_K > MMA_MAX_CHUNKS || ldy < rows || (mask && !xo))
        return ec_set_error("one-pass int8 GEMM: unsupported call (%d tokens, %d rows, ld %d, "
                            "ldy %d%s; needs 1-%d tokens, ld a multiple of %d up to %d)",
                            ntok, rows, ld, ldy, mask && !xo ? ", outlier mask without xo" : "",
                            EC_CUDA_INT8_MMA_MAX_BATCH, (int)MMA_K, MMA_MAX_CHUNKS * MMA_K);
    const __half *xh = (const __half *)xo;
    cudaError_t e =
        mode == EC_GEMV_STORE
            ? launch_mma_mode<EC_GEMV_STORE>(w, wscale, rows, ld, xq, xscale, xh, mask, ntok, y,
                                             ldy, stream)
        : mode == EC_GEMV_ADD
            ? launch_mma_mode<EC_GEMV_ADD>(w, wscale, rows, ld, xq, xscale, xh, mask, ntok, y, ldy,
                                           stream)
            : launch_mma_mode<EC_GEMV_SILU_MUL>(w, wscale, rows, ld, xq, xscale, xh, mask, ntok, y,
                                                ldy, stream);
    EC_CUDA_TRY(e, "launch of one-pass int8 GEMM (%d tokens, %d x %d)", ntok, rows, ld);
    return 0;
}
