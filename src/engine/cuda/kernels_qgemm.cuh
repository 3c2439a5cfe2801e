/* kernels_qgemm.cuh — qgemm_kernel, the fused quantized linear for 17..64 token rows: x staged in
 * shared memory, columns split across CTAs stream-K style, on mma.sync or (sm_90a) wgmma;
 * written once for every format policy F, launched by kernels_quant_launch.cuh. */
#ifndef ECOCOMPUTE_CUDA_KERNELS_QGEMM_CUH
#define ECOCOMPUTE_CUDA_KERNELS_QGEMM_CUH

#include "kernels_quant_common.cuh"
#include "kernels_wgmma.cuh"

/* ---- tensor cores, 17..64 token rows: x staged in shared memory, columns split across CTAs ----
 * At 64 tokens the activations outweigh the weights: a 128-column chunk of x is 16 KB against
 * 2 KB of nf4 codes for 32 rows, so qmma_kernel's CTAs, each re-reading x from L2 for their 32
 * rows, streamed the weights at 0.3 TB/s. Here a CTA of
 * 4 warps holds 128 weight rows (64 features for SiLU·mul), each warp 2 row tiles of
 * the same column chunk, and copies the chunk's x tile once into shared memory (cp.async, double
 * buffered) for all of them. The weights still travel through registers, S chunks deep per warp,
 * first requests before the PDL wait.
 * On sm_90a the kernel runs as two warpgroups instead (WG = true, ec_qgemm_cfg): 8 warps of one
 * row tile each, whose A fragments (the same decode) feed wgmma against the x tile in shared
 * memory, stored there in wgmma's layout (ec_qwg_store_x). One wgmma per k-step replaces 8 (NT 8)
 * mma.sync per warp, runs while the warp stages the next x tile and requests weights, and leaves
 * registers for 16 warps per SM instead of 8. Both builds stay bound by the latency of each
 * warp's decode and address arithmetic (ncu: DRAM at ~20 %, 12 cycles per issued instruction
 * here); this one is 2-4 % faster per step at 64 tokens.
 * 128 rows per CTA leave too few CTAs for a 4096-row weight, so the work is split stream-K style:
 * the units (row block, chunk) in row-block order are dealt out in equal contiguous runs of
 * per_cta, one run per CTA of a one-wave grid. A CTA that holds a whole row block writes it;
 * one that holds part of it stores its partial sums in the split scratch (slot 0 for the block
 * it starts in, slot 1 for the one it ends in), and the last of the block's CTAs to arrive
 * (a counter per row block, reset by that CTA) adds the partials in CTA order, so the sums do
 * not depend on timing, and writes the block. A launch may also split the tokens into groups
 * (blockIdx.y, 8 NT tokens each; ec_qlaunch_mma says when), each with its own partials and
 * counters. */
enum {
    QGEMM_STAGES = 2, /* weight chunks in flight per warp */
    QGEMM_ROWS = 128  /* weight rows of a CTA, which share its x tile */
};
/* Warps per CTA and row tiles per warp: 4 x 2 with mma.sync, two warpgroups of 4 x 1 with wgmma
 * (whose m64 tile is one row tile per warp). */
template <bool WG> struct ec_qgemm_cfg {
    static constexpr int WARPS = WG ? 8 : 4, MT = WG ? 1 : QMMA_MTILES;
    static_assert(WARPS * MT * 16 == QGEMM_ROWS, "a CTA's rows");
    static_assert(2 * WARPS * MT * 8 * 4 * 32 == EC_CUDA_QSPLIT_FLOATS_PER_CTA,
                  "kernels_quant.h's scratch size: 2 slots of partial sums at NT 8");
};

/* The x tile of one chunk: [token][16-byte granule of columns c0 + 8q .. +8], granule q of
 * token tok stored at ec_qgemm_swz(q, tok). A lane (g, t) of the MMA loop reads, for k-steps 2kk
 * and 2kk + 1, granule 4t + kk of token 8n + g (its B fragments, in qmma_kernel's permuted k
 * order). 16-byte shared loads are served a quarter warp (lanes g = 2j, 2j + 1, t = 0..3) at a
 * time, and without the swizzle those 8 lanes meet in 4 bank groups (the token rows are 256 B
 * apart, granules 4t + kk and 4(t + 2) + kk 128 B): bit 3 of q moved into bit 1 and the token's
 * parity into bit 0 give each of them its own group, one wavefront per quarter (measured:
 * nf4 linears 214 -> 200 µs per Llama-2-7B layer at 64 tokens, against q ^ (tok & 3)). Past the
 * batch or the columns the tile holds zeros. */
template <int NT> struct __align__(128) ec_qgemm_xtile {
    uint4 q[NT * 8][QMMA_CHUNK / 8];
};

__device__ __forceinline__ int ec_qgemm_swz(int q, int tok) /* a permutation of q in 0..15 */
{
    return q ^ ((q >> 2) & 2) ^ (tok & 1);
}

/* Columns col .. col + 8 of token tok's activations; zeros past the batch and the columns. VEC:
 * cols % 32 == 0 and 16-byte aligned rows, so a granule is all in or all out. Read through L2
 * only (ld.global.cg): with __ldg the wgmma build got test_cuda_model's batch-4 nf4 prefill wrong
 * under PDL and right without it. A stale L1 line of x (the kernel starts before its predecessor
 * has written x) is the inferred cause, not a proven one. */
template <typename T, bool VEC>
__device__ __forceinline__ uint4 ec_qgemm_x8(const T *__restrict__ x, int ldx, int nb, int cols,
                                             int tok, int col)
{
    if constexpr (VEC) {
        return tok < nb && col < cols
                   ? __ldcg(reinterpret_cast<const uint4 *>(x + (size_t)tok * ldx + col))
                   : make_uint4(0, 0, 0, 0);
    } else {
        uint32_t h[8];
#pragma unroll
        for (int e = 0; e < 8; e++)
            h[e] = tok < nb && col + e < cols
                       ? __ldcg(reinterpret_cast<const unsigned short *>(x) +
                                (size_t)tok * ldx + col + e)
                       : 0u;
        return make_uint4(h[0] | h[1] << 16, h[2] | h[3] << 16, h[4] | h[5] << 16,
                          h[6] | h[7] << 16);
    }
}

template <typename T, int NT, bool VEC>
__device__ __forceinline__ void ec_qgemm_stage_x(ec_qgemm_xtile<NT> &dst, const T *__restrict__ x,
                                                 int ldx, int nb, int cols, int c0)
{
    /* the CTA's size as a constant: a thread's granule q is the same in every round */
    constexpr int THREADS = ec_qgemm_cfg<false>::WARPS * 32;
    for (int i = threadIdx.x; i < NT * 8 * (QMMA_CHUNK / 8); i += THREADS) {
        int tok = i / (QMMA_CHUNK / 8), q = i % (QMMA_CHUNK / 8), col = c0 + 8 * q;
        uint4 *d = &dst.q[tok][ec_qgemm_swz(q, tok)];
        if constexpr (VEC) {
            bool in = tok < nb && col < cols;
            ec_cp_async16(d, in ? x + (size_t)tok * ldx + col : x, in);
        } else {
            *d = ec_qgemm_x8<T, false>(x, ldx, nb, cols, tok, col);
        }
    }
    ec_cp_async_commit();
}

/* The x tile for wgmma (WG): its B operand of k-step s (0..7) at byte s * 256 NT, core matrices
 * [half j of the step's 16 k][token group n][token r][8 k] (the leading byte offset 128 NT, the
 * stride byte offset 128). The A fragments take k in qmma's permuted order (columns 32t + 4s ..
 * + 3 for lane t at step s), so B must too: position 2t + e of half j is column 32t + 4s + 2j + e.
 * A thread copies 16-byte pieces, columns 32t + 8sp .. + 8 of one token: 4-byte parts of four
 * core matrices (steps 2sp and 2sp + 1, both halves). The 32 lanes of a warp are t (0..3) x
 * r (0..7) of one token group n, so each store meets 32 different banks; a thread's token, t and
 * its pieces' sp (one every 8 / NT) are the same for every chunk (ec_qwg_xlane). The pieces are
 * fetched into registers before the MMAs of the current chunk and stored after them. */
enum { QWG_X_ITEMS = 4 }; /* 16-byte pieces per thread of a 64-token tile (half at NT 4) */
struct ec_qwg_xlane {
    int tok, col, word; /* token row, first piece's column in the chunk, its first word */
};
template <int NT> __device__ __forceinline__ ec_qwg_xlane ec_qwg_xlane_of()
{
    int t = threadIdx.x & 3, r = (threadIdx.x >> 2) & 7, n = (threadIdx.x >> 5) % NT,
        sp = (threadIdx.x >> 5) / NT;
    return {8 * n + r, 32 * t + 8 * sp, ((4 * sp) * NT + n) * 32 + 4 * r + t};
}
template <typename T, int NT, bool VEC>
__device__ __forceinline__ void ec_qwg_fetch_x(uint4 (&v)[QWG_X_ITEMS], ec_qwg_xlane xl,
                                               const T *__restrict__ x, int ldx, int nb, int cols,
                                               int c0)
{
#pragma unroll
    for (int k = 0; k < NT / 2; k++) /* sp advances by 8 / NT: columns by 64 / NT */
        v[k] = ec_qgemm_x8<T, VEC>(x, ldx, nb, cols, xl.tok, c0 + xl.col + k * (64 / NT));
}
template <int NT>
__device__ __forceinline__ void ec_qwg_store_x(ec_qgemm_xtile<NT> &dst, ec_qwg_xlane xl,
                                               const uint4 (&v)[QWG_X_ITEMS])
{
    uint32_t *words = reinterpret_cast<uint32_t *>(&dst) + xl.word;
    /* word of (step 2sp + h, half j): core matrix (2 (2sp + h) + j) NT + n, 32 words each */
#pragma unroll
    for (int k = 0; k < NT / 2; k++) {
        uint32_t *at = words + k * (8 / NT) * 4 * NT * 32;
        at[0] = v[k].x;
        at[NT * 32] = v[k].y;
        at[2 * NT * 32] = v[k].z;
        at[3 * NT * 32] = v[k].w;
    }
}

template <class F, typename T, int NT, int S, int MODE, bool VEC, bool WG>
__global__ void __launch_bounds__(ec_qgemm_cfg<WG>::WARPS * 32, 2)
    qgemm_kernel(const ec_cuda_packed_weight w, const T *__restrict__ x, int ldx, int nb, void *y,
                 int ldy, const ec_cuda_qsplit split, int per_cta)
{
    constexpr int WARPS = ec_qgemm_cfg<WG>::WARPS, MT = ec_qgemm_cfg<WG>::MT, NACC = MT * NT * 4;
    constexpr bool SILU = MODE == EC_GEMV_SILU_MUL;
    static_assert(WARPS * 32 >= QTAB_MIN_THREADS, "ec_fetch_qtables needs the threads");
    __shared__ float s_tab[EC_CUDA_QTABLES_FLOATS];
    extern __shared__ __align__(16) uint32_t s_pairs[]; /* F::PAIR_BYTES */
    __shared__ ec_qgemm_xtile<NT> s_x[2];
    __shared__ bool s_last;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    int out_rows = SILU ? w.rows / 2 : w.rows;
    int nchunks = (w.cols + QMMA_CHUNK - 1) / QMMA_CHUNK;
    int nblocks = (w.rows + QGEMM_ROWS - 1) / QGEMM_ROWS, units = nblocks * nchunks;
    /* Token group blockIdx.y: rows [8 NT y, 8 NT (y + 1)) of x and y (see ec_qlaunch_gemm_nt) */
    int tok0 = (int)blockIdx.y * 8 * NT;
    x += (size_t)tok0 * ldx;
    y = (char *)y + (size_t)tok0 * ldy * (SILU ? sizeof(T) : sizeof(float));
    nb = nb - tok0 < 8 * NT ? nb - tok0 : 8 * NT;
    int u0 = blockIdx.x * per_cta, total = units - u0 < per_cta ? units - u0 : per_cta;
    /* Unit u is chunk u % nchunks of row block u / nchunks; the cursors below step through
     * (row block, chunk) pairs without dividing. rows_of: this warp's rows in row block rb. */
    struct cursor {
        int rb, chunk;
    };
    auto advance = [&](cursor &k) {
        if (++k.chunk == nchunks) {
            k.chunk = 0;
            k.rb++;
        }
    };
    auto rows_of = [&](int rb) {
        return ec_qmma_rows_of<MT, SILU>(rb * WARPS + warp, out_rows, g);
    };

    float acc[MT][NT][4];
    float *flat = &acc[0][0][0];
#pragma unroll
    for (int i = 0; i < NACC; i++)
        flat[i] = 0.0f;

    ec_qtables_regs tables = ec_fetch_qtables<F>(w);
    ec_qmma_stage<F, MT> st[S];
    cursor rq = {u0 / nchunks, u0 % nchunks}; /* the request cursor */
    auto request = [&](ec_qmma_stage<F, MT> &s) {
        ec_qmma_rows<MT> r = rows_of(rq.rb);
        int c = rq.chunk * QMMA_CHUNK + 32 * t;
        advance(rq);
#pragma unroll
        for (int m = 0; m < MT; m++) {
            F::template load_piece<VEC>(w, r.a[m], c, c < w.cols && r.va[m], s.a[m]);
            F::template load_piece<VEC>(w, r.b[m], c, c < w.cols && r.vb[m], s.b[m]);
        }
    };
#pragma unroll
    for (int u = 0; u < S; u++)
        if (u < total) request(st[u]);
    ec_store_qtables<F, T>(tables, s_tab, s_pairs);
    ec_wait_inputs(false); /* x, y and the split scratch belong to the step (see ec_launch) */
    cursor at = {u0 / nchunks, u0 % nchunks}; /* the unit in use */
    uint4 xnext[QWG_X_ITEMS]; /* WG: the next chunk's x on its way to shared memory */
    ec_qwg_xlane xl = ec_qwg_xlane_of<NT>();
    if constexpr (WG) {
        ec_qwg_fetch_x<T, NT, VEC>(xnext, xl, x, ldx, nb, w.cols, at.chunk * QMMA_CHUNK);
        ec_qwg_store_x<NT>(s_x[0], xl, xnext);
        ec_fence_proxy_async();
        __syncthreads();
    } else {
        ec_qgemm_stage_x<T, NT, VEC>(s_x[0], x, ldx, nb, w.cols, at.chunk * QMMA_CHUNK);
    }

    auto use = [&](const ec_qmma_stage<F, MT> &s, const ec_qgemm_xtile<NT> &xt) {
        uint32_t sa[MT], sb[MT];
        ec_qmma_scales<F, T, MT>(s_tab, s, sa, sb);
#pragma unroll
        for (int kk = 0; kk < 4; kk++) {
            uint4 bx[NT]; /* k-steps 2kk (.x, .y) and 2kk + 1 (.z, .w) of token 8n + g */
#pragma unroll
            for (int n = 0; n < NT; n++)
                bx[n] = xt.q[8 * n + g][ec_qgemm_swz(4 * t + kk, g)];
#pragma unroll
            for (int h = 0; h < 2; h++) {
                uint32_t a[MT][4];
                ec_qmma_afrags<F, T, MT>(s, sa, sb, 2 * kk + h, s_pairs, a);
#pragma unroll
                for (int n = 0; n < NT; n++) {
                    uint2 b = h ? make_uint2(bx[n].z, bx[n].w) : make_uint2(bx[n].x, bx[n].y);
#pragma unroll
                    for (int m = 0; m < MT; m++)
                        ec_mma16816<T>(acc[m][n], a[m], b);
                }
            }
        }
    };

    /* WG: the chunk's 8 k-steps decoded into afr, then one wgmma each, issued and committed as a
     * batch. The code writes afr again only after the wait (the next chunk's decode); the sums
     * are held at the wait (hold_sums), so that no read of them moves above it. */
    uint32_t afr[8][MT][4];
    auto issue_wg = [&](const ec_qmma_stage<F, MT> &s, const ec_qgemm_xtile<NT> &xt) {
        uint32_t sa[MT], sb[MT];
        ec_qmma_scales<F, T, MT>(s_tab, s, sa, sb);
#pragma unroll
        for (int k = 0; k < 8; k++)
            ec_qmma_afrags<F, T, MT>(s, sa, sb, k, s_pairs, afr[k]);
        ec_wgmma_fence();
        uint64_t desc = ec_wgmma_desc(&xt, 128 * NT, 128);
#pragma unroll
        for (int k = 0; k < 8; k++)
            ec_wgmma_rs<T, NT>(acc[0], afr[k][0], desc + (uint64_t)(k * 256 * NT / 16));
        ec_wgmma_commit();
    };
    auto hold_sums = [&]() {
#pragma unroll
        for (int i = 0; i < NACC; i++)
            ec_wgmma_hold(flat[i]);
    };

    /* The end of this CTA's part of row block rb: write it, or store the partial and, if the
     * last to arrive, add all partials in CTA order and write the sum. */
    auto finish = [&](int rb) {
        int first = rb * nchunks / per_cta,
            last = ((rb + 1) * nchunks - 1) / per_cta;
        if (first < last) {
            auto partial = [&](int cta) {
                int slot = cta * per_cta >= rb * nchunks ? 0 : 1; /* started in rb, or ends in it */
                size_t at = ((blockIdx.y * gridDim.x + cta) * 2 + slot) * WARPS + warp;
                return split.partial + at * NACC * 32;
            };
            float *mine = partial(blockIdx.x);
#pragma unroll
            for (int i = 0; i < NACC; i++)
                mine[i * 32 + lane] = flat[i];
            __threadfence();
            __syncthreads();
            if (threadIdx.x == 0) {
                unsigned *arrived = split.arrived + blockIdx.y * nblocks + rb;
                s_last = atomicAdd(arrived, 1u) == (unsigned)(last - first);
                if (s_last) *arrived = 0;
            }
            __syncthreads();
            if (s_last) {
                __threadfence();
#pragma unroll
                for (int i = 0; i < NACC; i++)
                    flat[i] = 0.0f;
                for (int cta = first; cta <= last; cta++) {
                    const float *p = partial(cta);
#pragma unroll
                    for (int i = 0; i < NACC; i++)
                        flat[i] += __ldcg(p + i * 32 + lane);
                }
            }
        }
        if (first == last || s_last)
            ec_qmma_write<F, T, MT, NT, MODE>(w, rows_of(rb), acc, t, nb, y, ldy);
#pragma unroll
        for (int i = 0; i < NACC; i++)
            flat[i] = 0.0f;
    };

    for (int s0 = 0; s0 < total; s0 += S) {
#pragma unroll
        for (int v = 0; v < S; v++) {
            int i = s0 + v;
            if (i >= total) break;
            bool block_ends = at.chunk + 1 == nchunks;
            int next_c0 = block_ends ? 0 : (at.chunk + 1) * QMMA_CHUNK;
            if constexpr (WG) {
                /* s_x[i & 1] is ready; the next x travels while the tensor cores work. The proxy
                 * fence is a memory barrier (MEMBAR.ALL.CTA), so the weight requests follow it
                 * rather than precede it. */
                if (i + 1 < total)
                    ec_qwg_fetch_x<T, NT, VEC>(xnext, xl, x, ldx, nb, w.cols, next_c0);
                issue_wg(st[v], s_x[i & 1]);
                if (i + 1 < total) {
                    ec_qwg_store_x<NT>(s_x[(i + 1) & 1], xl, xnext);
                    ec_fence_proxy_async();
                }
                if (i + S < total) request(st[v]);
                ec_wgmma_wait<0>();
                hold_sums();
                if (block_ends || i + 1 == total) finish(at.rb);
                advance(at);
                __syncthreads(); /* s_x[(i + 1) & 1] is complete, s_x[i & 1] free */
                continue;
            }
            if (i + 1 < total) { /* the next chunk's x into the other buffer, then wait for ours */
                ec_qgemm_stage_x<T, NT, VEC>(s_x[(i + 1) & 1], x, ldx, nb, w.cols, next_c0);
                ec_cp_async_wait<1>();
            } else {
                ec_cp_async_wait<0>();
            }
            __syncthreads();
            use(st[v], s_x[i & 1]);
            if (i + S < total) request(st[v]);
            if (block_ends || i + 1 == total) finish(at.rb);
            advance(at);
            __syncthreads(); /* s_x[i & 1] is free for chunk i + 2 */
        }
    }
}

#endif
