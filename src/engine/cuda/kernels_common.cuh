/* kernels_common.cuh — device helpers shared by the kernel files: 16-bit <-> fp32 conversion for
 * both formats, 8-wide unpacking of 16-byte loads, warp and block reductions, and the switch
 * from the C-level ec_cuda_dtype to a kernel template type, the 16x8x16 tensor-core MMA. */
#ifndef ECOCOMPUTE_CUDA_KERNELS_COMMON_CUH
#define ECOCOMPUTE_CUDA_KERNELS_COMMON_CUH

#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdlib.h>
#include <string.h>

#include "code_arch.h"
#include "ecocompute/engine.h"
#include "kernels.h"

__device__ __forceinline__ float ec_to_f32(__half v) { return __half2float(v); }
__device__ __forceinline__ float ec_to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __device__ __forceinline__ T ec_from_f32(float v);
template <> __device__ __forceinline__ __half ec_from_f32<__half>(float v)
{
    return __float2half_rn(v);
}
template <> __device__ __forceinline__ __nv_bfloat16 ec_from_f32<__nv_bfloat16>(float v)
{
    return __float2bfloat16_rn(v);
}

__device__ __forceinline__ float2 ec_pair_to_f32(__half2 v) { return __half22float2(v); }
__device__ __forceinline__ float2 ec_pair_to_f32(__nv_bfloat162 v) { return __bfloat1622float2(v); }

/* The packed-pair type of T (two values per 32-bit word). */
template <typename T> struct ec_pair;
template <> struct ec_pair<__half> { typedef __half2 type; };
template <> struct ec_pair<__nv_bfloat16> { typedef __nv_bfloat162 type; };

/* The 8 values of a 16-byte load as fp32. */
template <typename T> __device__ __forceinline__ void ec_unpack8(uint4 v, float out[8])
{
    typedef typename ec_pair<T>::type P;
    const P *p = reinterpret_cast<const P *>(&v);
#pragma unroll
    for (int i = 0; i < 4; i++) {
        float2 f = ec_pair_to_f32(p[i]);
        out[2 * i] = f.x;
        out[2 * i + 1] = f.y;
    }
}

/* Sum of the 8 products of two 16-byte loads, in fp32. */
template <typename T> __device__ __forceinline__ float ec_dot8(uint4 a, uint4 b)
{
    typedef typename ec_pair<T>::type P;
    const P *pa = reinterpret_cast<const P *>(&a);
    const P *pb = reinterpret_cast<const P *>(&b);
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        float2 fa = ec_pair_to_f32(pa[i]), fb = ec_pair_to_f32(pb[i]);
        s = fmaf(fa.x, fb.x, s);
        s = fmaf(fa.y, fb.y, s);
    }
    return s;
}

/* Sum over groups of `width` consecutive lanes (width a power of two <= 32). */
__device__ __forceinline__ float ec_group_sum(float v, int width)
{
    for (int o = width / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
/* Max over groups of `width` consecutive lanes (width a power of two <= 32). */
__device__ __forceinline__ float ec_group_max(float v, int width)
{
    for (int o = width / 2; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ float ec_warp_sum(float v) { return ec_group_sum(v, 32); }
__device__ __forceinline__ float ec_warp_max(float v) { return ec_group_max(v, 32); }

/* Block-wide sums or maxima of N values at once (each the same operations as alone, so the
 * results do not depend on N); every thread gets the results. scratch holds N x 32 floats;
 * blockDim.x is a multiple of 32. */
template <bool IS_MAX, int N>
__device__ __forceinline__ void ec_block_reduce_n(float v[N], float *scratch)
{
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
#pragma unroll
    for (int i = 0; i < N; i++) v[i] = IS_MAX ? ec_warp_max(v[i]) : ec_warp_sum(v[i]);
    __syncthreads(); /* scratch may still be read by a previous reduction */
    if (lane == 0)
#pragma unroll
        for (int i = 0; i < N; i++) scratch[32 * i + warp] = v[i];
    __syncthreads();
#pragma unroll
    for (int i = 0; i < N; i++) {
        float u = lane < nwarps ? scratch[32 * i + lane] : (IS_MAX ? -INFINITY : 0.0f);
        v[i] = IS_MAX ? ec_warp_max(u) : ec_warp_sum(u);
    }
}
/* The thread block cluster of the calling block, in code that has clusters (sm_90+). Below it
 * the host never launches more than one block per cluster (EC_GPU_CLUSTERS, ec_code_features),
 * so the cluster-only calls are never reached and trap. */
struct ec_cluster {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
    cooperative_groups::cluster_group g = cooperative_groups::this_cluster();
    __device__ void sync() { g.sync(); }
    __device__ void barrier_arrive() { g.barrier_arrive(); }
    __device__ void barrier_wait() { g.barrier_wait(); }
    template <typename T> __device__ T *map_shared_rank(T *p, int rank)
    {
        return g.map_shared_rank(p, rank);
    }
#else
    __device__ void sync() { __trap(); }
    __device__ void barrier_arrive() { __trap(); }
    __device__ void barrier_wait() { __trap(); }
    template <typename T> __device__ T *map_shared_rank(T *p, int) { __trap(); return p; }
#endif
};

/* The whole warp's maximum and sum of unsigned integers: one instruction on sm_80+
 * (__reduce_*_sync), five shuffles on Turing. */
__device__ __forceinline__ unsigned ec_warp_reduce_max(unsigned v)
{
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
    return __reduce_max_sync(0xffffffffu, v);
#else
    for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
#endif
}
__device__ __forceinline__ unsigned ec_warp_reduce_add(unsigned v)
{
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
    return __reduce_add_sync(0xffffffffu, v);
#else
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
#endif
}
/* The block maximum of non-negative floats that are not NaN, whose bit patterns order as
 * unsigned integers: one warp reduction instruction and one shared atomic per warp, then one
 * barrier, where ec_block_reduce takes two barriers and two rounds of shuffles (on a one-block
 * kernel's critical path). *s_max: shared, 0 before, with a barrier since. */
__device__ __forceinline__ float ec_block_max_nonneg(float v, unsigned *s_max)
{
    unsigned m = ec_warp_reduce_max(__float_as_uint(v));
    if ((threadIdx.x & 31) == 0) atomicMax(s_max, m);
    __syncthreads();
    return __uint_as_float(*s_max);
}
template <bool IS_MAX> __device__ __forceinline__ float ec_block_reduce(float v, float *scratch)
{
    ec_block_reduce_n<IS_MAX, 1>(&v, scratch);
    return v;
}

/* d [16x8 fp32 fragment] += A [16x16] * B [16x8], 16-bit inputs, fp32 accumulation. */
template <typename T>
__device__ __forceinline__ void ec_mma16816(float d[4], const uint32_t a[4], uint2 b);
/* Turing (sm_75) has m16n8k8 alone: k 0-7 of the m16n8k16 fragments are a[0], a[1] and b.x,
 * k 8-15 are a[2], a[3] and b.y (PTX ISA, the two shapes' fragment layouts). */
template <>
__device__ __forceinline__ void ec_mma16816<__half>(float d[4], const uint32_t a[4], uint2 b)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
    for (int h = 0; h < 2; h++)
        asm("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
            "{%0,%1,%2,%3};"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[2 * h]), "r"(a[2 * h + 1]), "r"(h ? b.y : b.x));
#else
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b.x), "r"(b.y));
#endif
}
/* bf16 tensor cores exist from sm_80; the backend refuses bf16 on older code
 * (ec_cuda_device_ready), so the trap below is never reached. */
template <>
__device__ __forceinline__ void ec_mma16816<__nv_bfloat16>(float d[4], const uint32_t a[4], uint2 b)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
    (void)d, (void)a, (void)b;
    __trap();
#else
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b.x), "r"(b.y));
#endif
}

/* d [16x8 int32 fragment] += A [16x32] * B [32x8], int8 inputs: exact integer products and sums.
 * Lane (g = lane / 4, t = lane % 4) holds 4 codes per register: a[0] row g, k 4t..4t+3; a[1]
 * row g + 8, same k; a[2] and a[3] the same rows at k 16 + 4t..; b.x column g at k 4t..4t+3,
 * b.y at k 16 + 4t.. (PTX ISA, the m16n8k32 .s8 fragments). */
__device__ __forceinline__ void ec_mma16832_s8(int d[4], const uint32_t a[4], uint2 b)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
    /* Turing has m8n8k16 alone: rows g (d[0], d[1]) from a[0] and a[2], rows g + 8 (d[2], d[3])
     * from a[1] and a[3], each k half against b.x then b.y; integer sums are exact in any order. */
    for (int i = 0; i < 4; i++)
        asm("mma.sync.aligned.m8n8k16.row.col.s32.s8.s8.s32 {%0,%1}, {%2}, {%3}, {%0,%1};"
            : "+r"(d[i >> 1 << 1]), "+r"(d[(i >> 1 << 1) + 1])
            : "r"(a[(i & 1) * 2 + (i >> 1)]), "r"(i & 1 ? b.y : b.x));
#else
    asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b.x), "r"(b.y));
#endif
}

/* Asynchronous 16-byte copies to shared memory (sm_80+): ec_cp_async16 copies gmem, or writes
 * zeros when !valid (gmem is then not read but must be a valid address); a commit closes the
 * thread's group of copies, and ec_cp_async_wait<N> returns once at most N of its latest groups
 * are pending (a barrier then makes every thread's copies visible to the block). Turing has no
 * cp.async: there the copy is a plain load and store, done before the call returns, and the
 * commit and wait are empty. */
__device__ __forceinline__ void ec_cp_async16(void *smem, const void *gmem, bool valid)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
    *reinterpret_cast<uint4 *>(smem) =
        valid ? *reinterpret_cast<const uint4 *>(gmem) : make_uint4(0, 0, 0, 0);
#else
    unsigned dst = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(gmem),
                 "r"(valid ? 16 : 0)
                 : "memory");
#endif
}
__device__ __forceinline__ void ec_cp_async_commit()
{
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
template <int PENDING> __device__ __forceinline__ void ec_cp_async_wait()
{
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;" ::"n"(PENDING) : "memory");
#endif
}

/* A bulk prefetch of `bytes` of global memory into L2 (sm_90+; nothing below it): one instruction,
 * no registers, nothing to wait for. The address and size are multiples of 16 bytes. */
__device__ __forceinline__ void ec_prefetch_l2(const void *gmem, size_t bytes)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(gmem), "r"((unsigned)bytes)
                 : "memory");
#else
    (void)gmem;
    (void)bytes;
#endif
}

/* The GEMV epilogue of one sequence b (see ec_gemv_mode): a warp owns rows r0 and r1 (r1 == r0
 * for a lone last row; gate row r0 and up row r1 for SILU_MUL) with fp32 results v0, v1. */
template <typename T, int MODE>
__device__ __forceinline__ void ec_gemv_write(void *y, int ldy, int b, int r0, int r1, float v0,
                                              float v1)
{
    if (MODE == EC_GEMV_SILU_MUL) {
        reinterpret_cast<T *>(y)[(size_t)b * ldy + r0] =
            ec_from_f32<T>(v0 / (1.0f + expf(-v0)) * v1);
        return;
    }
    float *out = reinterpret_cast<float *>(y) + (size_t)b * ldy;
    if (MODE == EC_GEMV_ADD) {
        out[r0] += v0;
        if (r1 != r0) out[r1] += v1;
    } else {
        out[r0] = v0;
        if (r1 != r0) out[r1] = v1;
    }
}

/* ---- programmatic dependent launch (PDL, sm_90+) ----
 * A decode step is a chain of 230-300 short kernels (7 to 9 per layer). Launched with
 * ec_launch, a kernel may start while its predecessor in the stream is still finishing, so its
 * launch and prologue (weight prefetches) overlap the predecessor's tail. The price: before it
 * reads or writes any activation (anything another kernel of the step touches) it must call
 * ec_wait_inputs(), which returns once every earlier kernel has finished and its writes are
 * visible. Weights are read-only for the whole run and may be touched before. On older GPUs both
 * are plain.
 * ec_wait_inputs() also lets the next kernel launch at once (the trigger) unless release_next
 * is false: without the trigger a kernel launches only when the last block of its predecessor
 * exits, so a GEMV behind a short kernel (norm, prepare, attention) would issue its first weight
 * loads only after that kernel's whole run. With it, the next kernel's blocks take free SM slots,
 * issue their weight loads and wait in turn; since a kernel triggers only once all its blocks
 * run, and waits for its predecessor before it can finish, "the previous kernel finished" still
 * implies "every earlier kernel finished". The weight-streaming kernels pass false: the 16-bit
 * and int8 GEMVs let their successors launch at their end (released at a GEMV's start, fp16
 * decode got slower; released after their last request, as qmma, int8 got 9 % slower), except
 * at batch 1 the QKV GEMVs, whose successor is the attention, and the int8 gate/up GEMV whose
 * successor is the down GEMV itself, not a prepare. Measured faster, and so released early: the
 * tensor-core qmma once a CTA has requested its last weights, fp8's and nf4-dq's at batch 1 at
 * its start. */
__device__ __forceinline__ void ec_release_next()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cudaTriggerProgrammaticLaunchCompletion();
#endif
}
__device__ __forceinline__ void ec_wait_inputs(bool release_next = true)
{
    if (release_next) ec_release_next();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cudaGridDependencySynchronize();
#endif
}

/* ask(device) once per device and thread (a property of a device or of a kernel on it): the
 * value for the current device, 0 if there is none. Each call site's lambda is its own type,
 * so each has its own cache. */
template <typename Ask> static int ec_per_device(Ask ask)
{
    static thread_local int cached_dev = -1, value = 0;
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return 0;
    if (dev != cached_dev) {
        value = ask(dev);
        cached_dev = dev;
    }
    return value;
}

/* The EC_GPU_* features of the code that runs on the current device (code_arch.h): what every
 * host-side path choice asks, since a compute_80 build on an H200 runs compute_80 code. */
static inline unsigned ec_code_features()
{
    return (unsigned)ec_per_device([](int dev) { return (int)ec_cuda_code_features(dev); });
}

/* Whether to launch with PDL: the code that runs waits for its inputs with
 * cudaGridDependencySynchronize (sm_90+ code; ec_wait_inputs is plain below it, so an early
 * launch there would read inputs before they are written). */
static inline bool ec_pdl_supported()
{
    return (ec_code_features() & EC_GPU_PDL) != 0;
}

/* kernel<<<grid, block, smem, stream>>>(args...) with programmatic stream serialisation
 * allowed where the device supports it, in thread block clusters of `cluster` blocks where that
 * is more than one (sm_90+). Returns the launch's error. */
template <typename... P, typename... A>
static cudaError_t ec_launch_clustered(void (*kernel)(P...), dim3 grid, dim3 cluster, dim3 block,
                                       size_t smem, cudaStream_t stream, A... args)
{
    cudaLaunchAttribute attrs[2];
    unsigned n = 0;
    if (ec_pdl_supported()) {
        attrs[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attrs[n++].val.programmaticStreamSerializationAllowed = 1;
    }
    if (cluster.x * cluster.y * cluster.z > 1) {
        attrs[n].id = cudaLaunchAttributeClusterDimension;
        attrs[n].val.clusterDim.x = cluster.x;
        attrs[n].val.clusterDim.y = cluster.y;
        attrs[n++].val.clusterDim.z = cluster.z;
    }
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cfg.attrs = attrs;
    cfg.numAttrs = n;
    return cudaLaunchKernelEx(&cfg, kernel, static_cast<P>(args)...);
}
template <typename... P, typename... A>
static cudaError_t ec_launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem,
                             cudaStream_t stream, A... args)
{
    return ec_launch_clustered(kernel, grid, dim3(1, 1, 1), block, smem, stream, args...);
}

/* ---- the weight stream of the decode GEMVs (fp16, int8) ----
 * A GEMV's unit of work is a pair of weight rows (ec_gemv_pair_rows), shared by ks consecutive
 * warps of a block (ks = 1 except for the fp16 GEMV's narrow weights at batch 1,
 * ec_gemv_split). Warp group w of a grid of W groups owns pairs w, w + W, w + 2W, ... and
 * streams them as one sequence:
 * lane l of the group's warp q reads chunks l + 32 q, l + 32 (q + ks), ... of each pair's two
 * rows, U chunks per row in flight, and refills a slot as soon as it is consumed, so the loads
 * of the next pair travel while the current one is used. A row of 4096 columns is 16 rounds of
 * 16-byte loads per lane in fp16 but 8 in int8 (and was one in the former nf4 GEMV): with one
 * pair per warp a warp would load a few times, wait a full HBM latency, compute and exit, and
 * HBM would idle between its warps' rounds. load(p, k, a, c) requests chunk k of pair p's rows
 * into a and c, use(p, k, a, c) consumes them in order, finish(p) runs on the whole warp after
 * its last chunk of pair p (reductions, the meeting of the pair's ks warps, epilogue). The first
 * U requests go out before ready() runs, and ready() must call ec_wait_inputs(): weights are no
 * step data (see ec_launch), so under PDL the first HBM round trip of a GEMV overlaps the end of
 * the previous kernel instead of following it. ready() is also where block-wide set-up goes
 * (shared memory, __syncthreads), so every warp of the block must call this, also a warp
 * without pairs. */
template <int U, typename Chunk, typename Load, typename Ready, typename Use, typename Finish>
__device__ __forceinline__ void ec_stream_pairs(int npairs, int nchunks, int ks, Load load,
                                                Ready ready, Use use, Finish finish)
{
    int lane = threadIdx.x & 31, wpb = blockDim.x >> 5;
    int warp = blockIdx.x * wpb + (threadIdx.x >> 5), nwarps = gridDim.x * wpb;
    /* ks consecutive warps of a block share each pair: part q takes chunk rounds q, q + ks, ... */
    int part = warp % ks, group = warp / ks, ngroups = nwarps / ks;
    int rounds = (nchunks + 31) / 32;
    int slots = (rounds + ks - 1) / ks; /* chunks per lane and row (the last ones maybe empty) */
    int mine = group < npairs ? (npairs - 1 - group) / ngroups + 1 : 0;
    int total = mine * slots; /* warp-uniform: the shuffles in finish() see every lane */
    Chunk a[U] = {}, c[U] = {};
    int rp = group, rj = 0; /* the request cursor: pair rp, slot rj */
    auto chunk = [&](int j) { return lane + 32 * (part + ks * j); };
    auto request = [&](int s, int u) {
        if (s >= total) return;
        int k = chunk(rj);
        if (k < nchunks) load(rp, k, a[u], c[u]);
        if (++rj == slots) {
            rj = 0;
            rp += ngroups;
        }
    };
#pragma unroll
    for (int u = 0; u < U; u++) request(u, u);
    ready();
    int up = group, uj = 0; /* the use cursor */
    for (int s0 = 0; s0 < total; s0 += U) {
#pragma unroll
        for (int u = 0; u < U; u++) {
            int s = s0 + u;
            if (s >= total) break;
            int k = chunk(uj);
            if (k < nchunks) use(up, k, a[u], c[u]);
            request(s + U, u);
            if (++uj == slots) {
                finish(up);
                uj = 0;
                up += ngroups;
            }
        }
    }
}

/* A barrier of the `threads` threads (whole warps) that reach it with the same id, 1..15 (0 is
 * __syncthreads'). */
__device__ __forceinline__ void ec_named_barrier(int id, int threads)
{
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

/* GEMV pairs of a weight of out_rows output rows: rows 2p and 2p+1, or for SILU_MUL gate row p
 * and up row p + out_rows (the weight holds both halves). */
__host__ __device__ __forceinline__ int ec_gemv_pairs(int mode, int out_rows)
{
    return mode == EC_GEMV_SILU_MUL ? out_rows : (out_rows + 1) / 2;
}
/* The two rows of pair p (a lone last row: r1 == r0). */
template <int MODE> __device__ __forceinline__ int2 ec_gemv_pair_rows(int p, int out_rows)
{
    if (MODE == EC_GEMV_SILU_MUL) return make_int2(p, p + out_rows);
    return make_int2(2 * p, 2 * p + 1 < out_rows ? 2 * p + 1 : 2 * p);
}

/* Chunk k of both rows of pair p of a row-major weight w of n16 16-byte chunks per row, with
 * the evict-first hint (a weight is read once per step; the activations should stay in L1). */
template <int MODE>
__device__ __forceinline__ void ec_load_pair_chunk(const uint4 *w, int out_rows, int n16, int p,
                                                   int k, uint4 &a, uint4 &c)
{
    int2 r = ec_gemv_pair_rows<MODE>(p, out_rows);
    a = __ldcs(w + (size_t)r.x * n16 + k);
    c = __ldcs(w + (size_t)r.y * n16 + k);
}

/* The current device's SM count (0 if it cannot be had). */
static inline int ec_sm_count(void)
{
    return ec_per_device([](int dev) {
        int sms = 0;
        return cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) == cudaSuccess
                   ? sms : 0;
    });
}

/* The current device's shared memory per block, opted in (0 if it cannot be had). */
static inline int ec_smem_limit(void)
{
    return ec_per_device([](int dev) {
        int bytes = 0;
        return cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) ==
                       cudaSuccess
                   ? bytes
                   : 0;
    });
}

/* ec_gemv_split_for on the current device. */
static inline int ec_gemv_split(int pairs, int rounds)
{
    return ec_gemv_split_for(pairs, rounds, ec_sm_count());
}

/* Blocks for a streaming Kernel of `threads` threads per block (and dyn_smem bytes of dynamic
 * shared memory) over `units` units of work (GEMV row pairs, per_block per block at a time: one
 * per warp; tensor-core row groups: one per block): at most one wave of the blocks the device
 * holds at once, each block streaming the same number of units to within one round (one round
 * per block, as many waves as that takes, was slower: int8's linears took 88.7 µs a Llama-2-7B
 * layer on an H100 against 80.2 streamed). The residency is asked once per kernel, device and
 * thread. */
template <auto Kernel>
static unsigned ec_stream_blocks(int units, int per_block, int threads, size_t dyn_smem = 0)
{
    int resident = ec_per_device([&](int) { /* 0 (unknown): one round per block */
        int per_sm = 0;
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, Kernel, threads, dyn_smem) !=
            cudaSuccess)
            return 0;
        return ec_sm_count() * per_sm;
    });
    int slots = resident > 0 ? resident * per_block : units;
    int per_slot = (units + slots - 1) / slots;
    int used = (units + per_slot - 1) / per_slot;
    return (unsigned)((used + per_block - 1) / per_block);
}

/* Lets Kernel launch with `bytes` of dynamic shared memory where that is above the default
 * limit of 48 KB (a function attribute, set once per kernel, device and thread). */
template <auto Kernel> static cudaError_t ec_smem_optin(size_t bytes)
{
    static thread_local int done_dev = -1;
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess || bytes <= 48 * 1024 || dev == done_dev) return e;
    e = cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
    if (e == cudaSuccess) done_dev = dev;
    return e;
}

/* Blocks of 256 threads for a grid-stride loop over n elements, capped at 65535 blocks. */
static inline unsigned ec_grid_for(size_t n)
{
    size_t blocks = (n + 255) / 256;
    return (unsigned)(blocks < 65535 ? (blocks ? blocks : 1) : 65535);
}

/* Calls body.template operator()<T>() with T the kernel type of dtype t. */
template <typename F> static int ec_dispatch_dtype(ec_cuda_dtype t, F body)
{
    return t == EC_CUDA_BF16 ? body(__nv_bfloat16()) : body(__half());
}

#endif
