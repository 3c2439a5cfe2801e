/* stream_probe.cu — how fast kernels that only load a 7 B layer's fp8 weights stream them, in
 * the order the batch-1 tensor-core kernel reads them (a GPU tool, not a test; sm_90).
 *
 * The fused fp8 linear (qmma_kernel, src/engine/cuda/kernels_quant.cuh) decodes, multiplies and
 * reduces besides loading; these kernels only load and xor the bytes, so the gap between a
 * linear's kernel_bench time and its row here is what everything but the loads costs.
 * Loads-only kernels:
 *   contiguous    16-byte loads, each thread 4 in flight, two CTAs per SM;
 *   bulk          1-D bulk copies (TMA) of 16 KB into 4 shared-memory stages per CTA;
 *   qmma          qmma_kernel's order: groups of MT 16-row tiles (lane 4g + t takes rows g and
 *                 g + 8 of each tile), 128-column chunks dealt to 8 warps in turn, a lane's 32
 *                 bytes of a row as two 16-byte loads at 32t and 32t + 16 ("sectors": at 16t and
 *                 64 + 16t, so each load covers whole 32-byte sectors), S chunks in flight;
 *   cp.async      the same order through cp.async into per-lane shared-memory slots (.cg: L2
 *                 only; .ca: through L1);
 *   wait          the qmma order with qmma_kernel's dependency: wait for the previous kernel
 *                 after the first S requests, and let the next one launch after the last request
 *                 (as built) or at the start; padded with shared memory to two CTAs per SM.
 * The others let the next kernel launch at once and wait for the previous one only at their end.
 * Each row is µs per call over 200 calls in a graph under PDL, every call reading the next of
 * enough copies of its weight (400 MB in all) that none is still in L2, as kernel_bench does.
 *
 * build and run: nvcc -O2 -std=c++17 -arch=sm_90a -o stream_probe bench/stream_probe.cu &&
 *                ./stream_probe */
#include "bench_cuda.h"
#include "probe_sm90.cuh"

#include <cuda_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <vector>

enum { THREADS = 256, WARPS = THREADS / 32, CHUNK = 128, REPS = 200 };
#define ROTATE_BYTES 400e6    /* 8 times the H100's 50 MB L2, as kernel_bench */
#define PAD_SMEM (100 * 1024) /* two CTAs per SM, as qmma_kernel's registers allow */

__device__ __forceinline__ uint32_t xor4(uint4 v)
{
    return v.x ^ v.y ^ v.z ^ v.w;
}
/* Keeps the loads alive: the xor of the weights is never this value (they are all 0x01). */
__device__ __forceinline__ void keep(uint32_t acc, uint32_t *out)
{
    if (acc == 0x12345678u) *out = acc;
}

__global__ void __launch_bounds__(THREADS)
    contiguous_kernel(const uint4 *__restrict__ p, size_t n, uint32_t *out)
{
    constexpr int U = 4;
    release_next();
    uint32_t acc = 0;
    size_t stride = (size_t)gridDim.x * blockDim.x,
           i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    for (; i + (U - 1) * stride < n; i += U * stride) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++)
            v[u] = __ldcs(p + i + u * stride);
#pragma unroll
        for (int u = 0; u < U; u++)
            acc ^= xor4(v[u]);
    }
    for (; i < n; i += stride)
        acc ^= xor4(__ldcs(p + i));
    wait_previous();
    keep(acc, out);
}

/* A CTA's share of the qmma order: its row groups blockIdx.x, + gridDim.x, ...; warp w's chunks
 * w, w + WARPS, ... of each, as one sequence of units. */
template <int MT> struct qmma_walk {
    int lane, warp, g, t, per, total, group_j = 0, chunk_i = 0;
    __device__ qmma_walk(int rows, int cols)
    {
        lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
        int groups = rows / (16 * MT),
            mine =
                (int)blockIdx.x < groups ? (groups - 1 - (int)blockIdx.x) / (int)gridDim.x + 1 : 0;
        per = cols / CHUNK / WARPS;
        total = mine * per;
    }
    /* row r (0 .. 2 MT - 1) of the next unit, its first byte at column offset `lane_col` */
    __device__ const uint8_t *row(const uint8_t *w, int cols, int r, int lane_col) const
    {
        int group = (int)blockIdx.x + group_j * (int)gridDim.x;
        int c = (warp + chunk_i * WARPS) * CHUNK + lane_col;
        return w + (size_t)(group * 16 * MT + g + 8 * r) * cols + c;
    }
    __device__ void advance()
    {
        if (++chunk_i == per) chunk_i = 0, group_j++;
    }
};

/* WAIT 0: release at once, wait at the end; 1: wait after the first S requests, release after
 * the last (qmma_kernel as built); 2: wait after the first S requests, release at once. */
template <int MT, int S, bool SECTORS, int WAIT>
__global__ void __launch_bounds__(THREADS, 2)
    qmma_kernel(const uint8_t *__restrict__ w, int rows, int cols, uint32_t *out)
{
    constexpr int R = 2 * MT;
    if (WAIT != 1) release_next();
    qmma_walk<MT> at(rows, cols);
    uint32_t acc = 0;
    uint4 st[S][2 * R];
    auto request = [&](uint4(&s)[2 * R]) {
#pragma unroll
        for (int r = 0; r < R; r++) {
            const uint8_t *p = at.row(w, cols, r, SECTORS ? 16 * at.t : 32 * at.t);
            s[2 * r] = __ldcs(reinterpret_cast<const uint4 *>(p));
            s[2 * r + 1] = __ldcs(reinterpret_cast<const uint4 *>(p + (SECTORS ? 64 : 16)));
        }
        at.advance();
    };
#pragma unroll
    for (int u = 0; u < S; u++)
        if (u < at.total) request(st[u]);
    if (WAIT) wait_previous();
    if (WAIT == 1 && at.total <= S) release_next();
    for (int s0 = 0; s0 < at.total; s0 += S) {
#pragma unroll
        for (int u = 0; u < S; u++) {
            if (s0 + u >= at.total) break;
#pragma unroll
            for (int k = 0; k < 2 * R; k++)
                acc ^= xor4(st[u][k]);
            if (s0 + u + S < at.total) {
                request(st[u]);
                if (WAIT == 1 && s0 + u + S == at.total - 1) release_next();
            }
        }
    }
    if (!WAIT) wait_previous();
    keep(acc, out);
}

/* The qmma order through cp.async: stage u's 16-byte piece k of this lane in its own slot. */
template <int MT, int S, bool CA>
__global__ void __launch_bounds__(THREADS, 2)
    cp_async_kernel(const uint8_t *__restrict__ w, int rows, int cols, uint32_t *out)
{
    constexpr int R = 2 * MT;
    extern __shared__ __align__(16) uint4 slots[]; /* [S][WARPS][2 R][32] */
    release_next();
    qmma_walk<MT> at(rows, cols);
    uint32_t acc = 0;
    auto slot = [&](int u, int k) {
        return slots + ((u * WARPS + at.warp) * 2 * R + k) * 32 + at.lane;
    };
    auto commit = [] { asm volatile("cp.async.commit_group;" ::: "memory"); };
    auto request = [&](int u) {
#pragma unroll
        for (int r = 0; r < R; r++) {
            const uint8_t *p = at.row(w, cols, r, 32 * at.t);
#pragma unroll
            for (int h = 0; h < 2; h++) {
                if (CA)
                    asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" ::"r"(
                                     smem_addr(slot(u, 2 * r + h))),
                                 "l"(p + 16 * h)
                                 : "memory");
                else
                    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(
                                     smem_addr(slot(u, 2 * r + h))),
                                 "l"(p + 16 * h)
                                 : "memory");
            }
        }
        commit();
        at.advance();
    };
#pragma unroll
    for (int u = 0; u < S; u++) {
        if (u < at.total)
            request(u);
        else
            commit(); /* an empty group keeps S pending */
    }
    for (int s0 = 0; s0 < at.total; s0 += S) {
#pragma unroll
        for (int u = 0; u < S; u++) {
            if (s0 + u >= at.total) break;
            asm volatile("cp.async.wait_group %0;" ::"n"(S - 1) : "memory");
#pragma unroll
            for (int k = 0; k < 2 * R; k++)
                acc ^= xor4(*slot(u, k));
            if (s0 + u + S < at.total)
                request(u);
            else
                commit();
        }
    }
    wait_previous();
    keep(acc, out);
}

/* 1-D bulk copies of PIECE bytes of a CTA's contiguous range into STAGES stages: one thread
 * issues, every thread reads the stage, a barrier frees it. */
template <int STAGES, int PIECE>
__global__ void __launch_bounds__(THREADS)
    bulk_kernel(const uint8_t *__restrict__ w, size_t bytes, uint32_t *out)
{
    extern __shared__ __align__(128) uint8_t stage[];
    __shared__ __align__(8) uint64_t full[STAGES];
    release_next();
    size_t pieces = bytes / PIECE, per = (pieces + gridDim.x - 1) / gridDim.x;
    size_t p0 = blockIdx.x * per, p1 = p0 + per < pieces ? p0 + per : pieces;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++)
            mbar_init(&full[s], 1);
        mbar_init_fence();
    }
    __syncthreads();
    auto issue = [&](size_t p, int s) {
        bulk_copy(stage + s * PIECE, w + p * PIECE, PIECE, &full[s]);
    };
    if (threadIdx.x == 0)
        for (int s = 0; s < STAGES && p0 + s < p1; s++)
            issue(p0 + s, s);
    uint32_t acc = 0;
    for (size_t p = p0; p < p1; p++) {
        int s = (int)((p - p0) % STAGES);
        uint32_t parity = (uint32_t)(((p - p0) / STAGES) & 1);
        while (!mbar_test(&full[s], parity)) {
        }
        const uint4 *v = reinterpret_cast<const uint4 *>(stage + s * PIECE);
#pragma unroll
        for (int k = 0; k < PIECE / 16 / THREADS; k++)
            acc ^= xor4(v[threadIdx.x + k * THREADS]);
        __syncthreads();
        if (threadIdx.x == 0 && p + STAGES < p1) issue(p + STAGES, s);
    }
    wait_previous();
    keep(acc, out);
}

template <typename K, typename... A>
static void launch(K kernel, int grid, size_t smem, cudaStream_t st, A... args)
{
    cudaLaunchAttribute pdl;
    pdl.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    pdl.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(THREADS);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = st;
    cfg.attrs = &pdl;
    cfg.numAttrs = 1;
    CHECK(cudaLaunchKernelEx(&cfg, kernel, args...));
}

template <typename F> static int call_lambda(void *f)
{
    (*static_cast<F *>(f))();
    return 0;
}
/* µs per call: the best of three replays of REPS calls captured in a graph. */
template <typename F> static double time_us(F call, cudaStream_t st)
{
    call();
    CHECK(cudaStreamSynchronize(st));
    return bench_graph_us(call_lambda<F>, &call, st, REPS, 3);
}

/* Sets the kernel's dynamic shared memory limit and returns its resident CTAs per SM. */
template <typename K> static int prepare(K kernel, size_t smem)
{
    CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    int per_sm = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, THREADS, smem));
    return per_sm;
}

int main(void)
{
    int sms;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    cudaStream_t st;
    CHECK(cudaStreamCreate(&st));
    uint32_t *out;
    CHECK(cudaMalloc(&out, 4));
    struct {
        const char *name;
        int rows, cols;
    } shapes[] = {{"gate/up 22016x4096", 22016, 4096},
                  {"qkv 12288x4096", 12288, 4096},
                  {"down 4096x11008", 4096, 11008},
                  {"o 4096x4096", 4096, 4096}};
    printf("%-20s %7s | %-34s %8s %6s\n", "fp8 weight", "MB", "loads-only kernel", "us", "TB/s");
    for (auto &s : shapes) {
        size_t bytes = (size_t)s.rows * s.cols;
        std::vector<uint8_t *> copies((size_t)(ROTATE_BYTES / (double)bytes) + 1);
        for (auto &w : copies) {
            CHECK(cudaMalloc(&w, bytes));
            CHECK(cudaMemset(w, 1, bytes));
        }
        size_t next_copy = 0;
        auto next = [&] {
            const uint8_t *w = copies[next_copy];
            next_copy = (next_copy + 1) % copies.size();
            return w;
        };
        auto row = [&](const char *what, double us) {
            printf("%-20s %7.1f | %-34s %8.2f %6.2f\n", s.name, bytes / 1e6, what, us,
                   bytes / us / 1e6);
        };
        row("contiguous", time_us(
                              [&] {
                                  launch(contiguous_kernel, 2 * sms, 0, st, (const uint4 *)next(),
                                         bytes / 16, out);
                              },
                              st));
        constexpr int BULK_STAGES = 4, BULK_PIECE = 16384;
        prepare(bulk_kernel<BULK_STAGES, BULK_PIECE>, BULK_STAGES * BULK_PIECE);
        row("bulk", time_us(
                        [&] {
                            launch(bulk_kernel<BULK_STAGES, BULK_PIECE>, sms,
                                   BULK_STAGES * BULK_PIECE, st, next(), bytes, out);
                        },
                        st));
        if (s.cols % (CHUNK * WARPS) != 0) { /* the qmma order below needs whole chunk rounds */
            for (auto &w : copies)
                CHECK(cudaFree(w));
            continue;
        }
        /* qmma_kernel's one-wave grid: equal runs of groups over two CTAs per SM */
        auto grid_of = [&](int mt) {
            int groups = s.rows / (16 * mt), slots = 2 * sms, per = (groups + slots - 1) / slots;
            return (groups + per - 1) / per;
        };
        char what[64];
        auto qmma = [&](auto kernel, int mt, int s_, const char *how, size_t smem) {
            int per_sm = prepare(kernel, smem > 0 ? smem : 1);
            snprintf(what, sizeof what, "qmma %d tile%s, %d stages%s (%d/SM)", mt,
                     mt > 1 ? "s" : "", s_, how, per_sm);
            row(what,
                time_us([&] { launch(kernel, grid_of(mt), smem, st, next(), s.rows, s.cols, out); },
                        st));
        };
        qmma(qmma_kernel<2, 2, false, 0>, 2, 2, "", 0);
        qmma(qmma_kernel<1, 4, false, 0>, 1, 4, "", 0);
        qmma(qmma_kernel<2, 2, true, 0>, 2, 2, ", sectors", 0);
        qmma(qmma_kernel<1, 4, true, 0>, 1, 4, ", sectors", 0);
        auto slots = [](int mt, int stages) { return (size_t)stages * WARPS * 32 * 4 * mt * 16; };
        qmma(cp_async_kernel<2, 2, false>, 2, 2, ", cp.async.cg", slots(2, 2));
        qmma(cp_async_kernel<2, 2, true>, 2, 2, ", cp.async.ca", slots(2, 2));
        qmma(cp_async_kernel<2, 3, true>, 2, 3, ", cp.async.ca", slots(2, 3));
        qmma(cp_async_kernel<1, 6, true>, 1, 6, ", cp.async.ca", slots(1, 6));
        qmma(qmma_kernel<2, 2, false, 0>, 2, 2, ", no wait", PAD_SMEM);
        qmma(qmma_kernel<2, 2, false, 1>, 2, 2, ", wait, release last", PAD_SMEM);
        qmma(qmma_kernel<2, 2, false, 2>, 2, 2, ", wait, release first", PAD_SMEM);
        qmma(qmma_kernel<1, 4, false, 0>, 1, 4, ", no wait", PAD_SMEM);
        qmma(qmma_kernel<1, 4, false, 1>, 1, 4, ", wait, release last", PAD_SMEM);
        qmma(qmma_kernel<1, 4, false, 2>, 1, 4, ", wait, release first", PAD_SMEM);
        for (auto &w : copies)
            CHECK(cudaFree(w));
    }
    return 0;
}
