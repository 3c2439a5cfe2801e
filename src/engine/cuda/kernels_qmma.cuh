/* kernels_qmma.cuh — qmma_kernel, the fused quantized linear on tensor cores for 1..16 token
 * rows (mma.sync m16n8k16), written once for every format policy F; launched by
 * kernels_quant_launch.cuh. */
#ifndef ECOCOMPUTE_CUDA_KERNELS_QMMA_CUH
#define ECOCOMPUTE_CUDA_KERNELS_QMMA_CUH

#include "kernels_quant_common.cuh"

/* ---- tensor cores, batch 1..16 (qmma_kernel; qgemm_kernel, kernels_qgemm.cuh, takes 17..64) ----
 * A row group is MT row tiles (MT x 16 weight rows, or MT x 8 output features for SiLU·mul);
 * MT row tiles share each B fragment, NT column tiles of 8 tokens share each decoded A fragment,
 * and the KS warps of a CTA split the group's 128-column chunks, their partial sums meeting in
 * shared memory in a fixed order. A CTA streams its row groups (blockIdx.x, + gridDim.x, ...;
 * the grid is one wave) as one sequence per warp, S chunks deep: the first S requests go out
 * with the tables' fetch, before the wait for the previous kernel (weights are no step data),
 * and a stage is refilled as soon as it is decoded, also across a group boundary, so HBM keeps
 * S chunks per warp in flight while the SMs decode, multiply and reduce.
 *
 * NORM: the consumer of a carried norm (batch 1: the activations from qc instead of x); an ADD
 * with qc.sumsq_out (batch 1) is its producer. CTAS: the CTAs per SM it is compiled for (launch
 * bounds; 0 for none), from F::mma_ctas (ec_qlaunch_mma_nt). */
template <class F, typename T, int MT, int NT, int KS, int S, int MODE, bool VEC, bool NORM,
          int CTAS>
__global__ void __launch_bounds__(KS * 32, CTAS)
    qmma_kernel(const ec_cuda_packed_weight w, const T *__restrict__ x, int ldx, int batch, void *y,
                int ldy, const ec_qcarry_args qc)
{
    static_assert(!NORM || (VEC && NT == 1 && MODE != EC_GEMV_ADD), "a carried norm's consumer");
    constexpr int NACC = MT * NT * 4;
    constexpr bool SILU = MODE == EC_GEMV_SILU_MUL;
    static_assert(KS * 32 >= QTAB_MIN_THREADS, "ec_fetch_qtables needs the threads");
    __shared__ float s_tab[EC_CUDA_QTABLES_FLOATS];
    extern __shared__ __align__(16) uint32_t s_pairs[]; /* F::PAIR_BYTES, NORM: then T [cols] */
    __shared__ float s_red[KS][NACC][32]; /* every warp's partials of a group */
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    int out_rows = SILU ? w.rows / 2 : w.rows;
    int ngroups = (out_rows + MT * (SILU ? 8 : 16) - 1) / (MT * (SILU ? 8 : 16));
    int mygroups = (int)blockIdx.x < ngroups ? (ngroups - 1 - (int)blockIdx.x) / (int)gridDim.x + 1 : 0;
    auto group = [&](int j) { return (int)blockIdx.x + j * (int)gridDim.x; };

    /* This warp's chunks of a group: warp, warp + KS, ...; a lane's 32 columns of chunk i start
     * at col(i). A warp without chunks (narrow weights) still takes one empty unit per group, so
     * every warp reaches each group's barriers. */
    int nchunks = (w.cols + QMMA_CHUNK - 1) / QMMA_CHUNK;
    int mine = warp < nchunks ? (nchunks - 1 - warp) / KS + 1 : 0;
    int per = mine > 0 ? mine : 1, total = mygroups * per;
    auto col = [&](int i) { return (warp + i * KS) * QMMA_CHUNK + 32 * t; };

    float acc[MT][NT][4];
    float *flat = &acc[0][0][0];
#pragma unroll
    for (int i = 0; i < NACC; i++)
        flat[i] = 0.0f;

    /* F::RELEASE_AT_START: at batch 1 the next kernel launches (PDL) at once, not after this
     * CTA's last request (below) */
    const bool release_at_start = F::RELEASE_AT_START && NT == 1 && batch == 1;
    if (release_at_start) ec_release_next();
    ec_qtables_regs tables = ec_fetch_qtables<F>(w);
    ec_qmma_stage<F, MT> st[S];
    int rj = 0, ri = 0; /* the request cursor: group j, chunk i */
    auto request = [&](ec_qmma_stage<F, MT> &s) {
        ec_qmma_rows<MT> r = ec_qmma_rows_of<MT, SILU>(group(rj), out_rows, g);
        int c = col(ri);
        bool any = ri < mine && (ec_qmma_interleaved<F>::value ? c - 32 * t : c) < w.cols;
#pragma unroll
        for (int m = 0; m < MT; m++) {
            F::template load_piece<VEC>(w, r.a[m], c, any && r.va[m], s.a[m]);
            F::template load_piece<VEC>(w, r.b[m], c, any && r.vb[m], s.b[m]);
        }
        if (++ri == per) {
            ri = 0;
            rj++;
        }
    };
#pragma unroll
    for (int u = 0; u < S; u++)
        if (u < total) request(st[u]);
    ec_store_qtables<F, T>(tables, s_tab, s_pairs);
    ec_wait_inputs(false); /* x and y belong to the step (see ec_launch) */
    /* Once a CTA has requested its last chunk it lets the next kernel launch (PDL): that kernel's
     * blocks then take the SM slots this kernel's CTAs free in its tail and send their first
     * weight requests, instead of waiting for the last CTA to exit. */
    const bool release_late = !release_at_start;
    if (release_late && total <= S) ec_release_next();
    T *s_x = reinterpret_cast<T *>(reinterpret_cast<char *>(s_pairs) + F::PAIR_BYTES);
    if constexpr (NORM) {
        __shared__ float s_warp[KS];
        ec_stage_carried_row<T>(qc, w.cols, s_x, s_warp);
    }

    auto use = [&](int i, const ec_qmma_stage<F, MT> &s) {
        if (i >= mine) return;
        int c = col(i);
        uint32_t sa[MT], sb[MT];
        ec_qmma_scales<F, T, MT>(s_tab, s, sa, sb);
        /* VEC: k-steps k and k + 1 of token tile n in one 16-byte load at even k (half the load
         * instructions of 8-byte ones: fp8's and nf4's steps at 8 rows 13-15 % shorter) */
        uint4 x8[NT];
#pragma unroll
        for (int k = 0; k < 8; k++) {
            uint32_t a[MT][4];
            ec_qmma_afrags<F, T, MT>(s, sa, sb, k, s_pairs, a);
#pragma unroll
            for (int n = 0; n < NT; n++) {
                /* B column g of tile n, from L1/L2 per chunk: copying x to shared memory
                 * or prefetching it into L1 after the wait measured slower */
                int tok = 8 * n + g, kc = c - 32 * t + ec_qmma_kcol<F>(t, k);
                bool in = ec_qmma_interleaved<F>::value ? kc < w.cols : c < w.cols;
                uint2 bx = make_uint2(0, 0);
                if (NORM && tok == 0) {
                    bx = *reinterpret_cast<const uint2 *>(s_x + kc);
                } else if (!NORM && VEC) {
                    if (k % 2 == 0)
                        x8[n] =
                            tok < batch && in
                                ? __ldg(reinterpret_cast<const uint4 *>(x + (size_t)tok * ldx + kc))
                                : make_uint4(0, 0, 0, 0);
                    bx = k % 2 ? make_uint2(x8[n].z, x8[n].w) : make_uint2(x8[n].x, x8[n].y);
                } else if (!NORM && tok < batch && in) {
                    bx = ec_load_x4<T, false>(x + (size_t)tok * ldx, kc, w.cols);
                }
#pragma unroll
                for (int m = 0; m < MT; m++)
                    ec_mma16816<T>(acc[m][n], a[m], bx);
            }
        }
    };

    /* Group j's column splits summed in warp order (deterministic), one output pair per warp:
     * warp (m NT + n) 2 + h sums entries h and 2 + h of tile (m, n) and writes them. It loads
     * their output scales and, for ADD, the values it adds to before the barrier, so those round
     * trips overlap the other warps' last chunks instead of following the sum. */
    constexpr int OUTS = MT * NT * 2;
    static_assert(OUTS <= KS, "a warp per output pair of a lane");
    auto finish = [&](int j) {
        ec_qmma_rows<MT> r = ec_qmma_rows_of<MT, SILU>(group(j), out_rows, g);
        ec_qmma_out o = {};
        int ia = 0;   /* the pair's entry h in the flat fragment; 2 + h is its row b */
        int tile = 0; /* the pair's 16-row tile of the weight */
#pragma unroll
        for (int m = 0; m < MT; m++)
#pragma unroll
            for (int n = 0; n < NT; n++)
#pragma unroll
                for (int h = 0; h < 2; h++)
                    if ((m * NT + n) * 2 + h == warp) {
                        o = ec_qmma_out_of<F, MT, MODE>(w, r, m, 8 * n + 2 * t + h, batch, y, ldy);
                        ia = (m * NT + n) * 4 + h;
                        tile = group(j) * MT + m;
                    }
#pragma unroll
        for (int i = 0; i < NACC; i++)
            s_red[warp][i][lane] = flat[i];
        __syncthreads();
        if (warp < OUTS) {
            float sa = s_red[0][ia][lane], sb = s_red[0][ia + 2][lane];
#pragma unroll
            for (int k = 1; k < KS; k++) {
                sa += s_red[k][ia][lane];
                sb += s_red[k][ia + 2][lane];
            }
            float sq = ec_qmma_put<T, MODE>(o, sa, sb, y, ldy);
            if (MODE == EC_GEMV_ADD && qc.sumsq_out) { /* batch 1 (checked) */
                sq = ec_sum_over_g(sq); /* the tile's 16 rows: the 8 lanes of this t */
                if (g == 0 && o.tok == 0 && tile * 16 < out_rows) qc.sumsq_out[tile] = sq;
            }
        }
        if (j + 1 < mygroups) __syncthreads(); /* s_red is free for the next group */
#pragma unroll
        for (int i = 0; i < NACC; i++)
            flat[i] = 0.0f;
    };

    int uj = 0, ui = 0; /* the use cursor */
    for (int s0 = 0; s0 < total; s0 += S) {
#pragma unroll
        for (int u = 0; u < S; u++) {
            if (s0 + u >= total) break;
            use(ui, st[u]);
            if (s0 + u + S < total) {
                request(st[u]);
                if (release_late && s0 + u + S == total - 1) ec_release_next();
            }
            if (++ui == per) {
                finish(uj);
                ui = 0;
                uj++;
            }
        }
    }
}

#endif
