/* kernels_wgmma.cuh — Hopper's warpgroup MMA (wgmma.mma_async, sm_90a), as the quantized GEMM of
 * 17-64 token rows uses it (kernels_qgemm.cuh, qgemm_kernel with WG = true).
 *
 * A warpgroup (4 consecutive warps) multiplies a 64 x 16 A slice held in registers — warp w holds
 * rows 16w .. 16w + 15 in exactly the A fragment of mma.sync.m16n8k16, so the decode that feeds
 * mma.sync feeds this too — by a 16 x N B tile in shared memory, accumulating 64 x N fp32 sums that
 * each warp holds as N / 8 consecutive m16n8 C fragments. One instruction does the work of 2 N / 8
 * mma.sync per warp, asynchronously: a warp issues it, goes on decoding or loading, and waits only
 * before it touches the sums or the A registers again.
 *
 * B is "K-major" (a token's 16 k values contiguous, as x is) in the canonical layout without
 * swizzle: core matrices of 8 tokens x 8 k (16 bytes a token, 128 bytes each, contiguous), the
 * descriptor giving the byte distance between the two core matrices of a token group along k
 * (leading dimension byte offset) and between consecutive token groups (stride byte offset).
 *
 * Only sm_90a has these instructions. Builds for other architectures compile the helpers to a
 * trap, and the launcher never selects the kernel there (ec_qgemm_wgmma_usable). */
#ifndef ECOCOMPUTE_CUDA_KERNELS_WGMMA_CUH
#define ECOCOMPUTE_CUDA_KERNELS_WGMMA_CUH

#include <stdint.h>

#include <type_traits>

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define EC_WGMMA_ARCH 1
#else
#define EC_WGMMA_ARCH 0
#endif

/* The shared-memory descriptor of a B tile at smem (16-byte aligned): start address, leading and
 * stride byte offsets in 16-byte units, no swizzle (bits 62-63 zero), base offset 0. */
__device__ __forceinline__ uint64_t ec_wgmma_desc(const void *smem, unsigned lead_bytes,
                                                  unsigned stride_bytes)
{
    uint64_t addr = (uint64_t)__cvta_generic_to_shared(smem);
    return ((addr & 0x3FFFF) >> 4) | (uint64_t)((lead_bytes & 0x3FFFF) >> 4) << 16 |
           (uint64_t)((stride_bytes & 0x3FFFF) >> 4) << 32;
}

/* Orders this thread's earlier register writes (sums, A fragments) before the next wgmma. */
__device__ __forceinline__ void ec_wgmma_fence()
{
#if EC_WGMMA_ARCH
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#else
    __trap();
#endif
}
/* Closes the warpgroup's batch of issued wgmma; ec_wgmma_wait<N> returns once at most N batches
 * are pending. */
__device__ __forceinline__ void ec_wgmma_commit()
{
#if EC_WGMMA_ARCH
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#endif
}
template <int PENDING> __device__ __forceinline__ void ec_wgmma_wait()
{
#if EC_WGMMA_ARCH
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(PENDING) : "memory");
#endif
}
/* Makes this thread's ordinary shared-memory stores visible to the wgmma that read them (the
 * async proxy); a barrier must still follow before another thread's wgmma reads them. */
__device__ __forceinline__ void ec_fence_proxy_async()
{
#if EC_WGMMA_ARCH
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}
/* Ties a sum to this point of the program: after a wait, the compiler may not read it before
 * the wait, since it sees it written here. */
__device__ __forceinline__ void ec_wgmma_hold(float &v)
{
    asm volatile("" : "+f"(v)::"memory");
}

/* d [64 x 8NT per warpgroup; this warp's 16 rows as NT C fragments] += A [64 x 16, a: this
 * warp's fragment] * B [16 x 8NT at desc], fp32 sums, 16-bit T inputs, NT = 4 or 8. */
#define EC_WGMMA_D16 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}"
#define EC_WGMMA_D32                                                                              \
    "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24," \
    "%25,%26,%27,%28,%29,%30,%31}"
#define EC_WGMMA_OUT4(d, n) "+f"(d[n][0]), "+f"(d[n][1]), "+f"(d[n][2]), "+f"(d[n][3])
#define EC_WGMMA_OUT16(d)                                                                         \
    EC_WGMMA_OUT4(d, 0), EC_WGMMA_OUT4(d, 1), EC_WGMMA_OUT4(d, 2), EC_WGMMA_OUT4(d, 3)
#define EC_WGMMA_OUT32(d)                                                                         \
    EC_WGMMA_OUT16(d), EC_WGMMA_OUT4(d, 4), EC_WGMMA_OUT4(d, 5), EC_WGMMA_OUT4(d, 6),             \
        EC_WGMMA_OUT4(d, 7)
#define EC_WGMMA_IN(a, desc) "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(1)
/* shape, the type name in PTX, the sums' operand list, the operand numbers of a, desc and of the
 * register holding 1 (scale-d is a predicate: D += A B, not D = A B) */
#define EC_WGMMA_ASM(SHAPE, TY, D, A0, A1, A2, A3, DESC, ONE)                                     \
    "{\n.reg .pred p;\nsetp.ne.b32 p, %" ONE ", 0;\nwgmma.mma_async.sync.aligned." SHAPE      \
    ".f32." TY "." TY " " D ", {%" A0 ",%" A1 ",%" A2 ",%" A3 "}, %" DESC ", p, 1, 1, 0;\n}"

template <typename T, int NT>
__device__ __forceinline__ void ec_wgmma_rs(float (&d)[NT][4], const uint32_t (&a)[4],
                                            uint64_t desc)
{
    static_assert(NT == 4 || NT == 8, "m64n32k16 or m64n64k16");
    constexpr bool BF16 = std::is_same<T, __nv_bfloat16>::value;
#if EC_WGMMA_ARCH
    if constexpr (NT == 4 && !BF16)
        asm volatile(EC_WGMMA_ASM("m64n32k16", "f16", EC_WGMMA_D16, "16", "17", "18", "19", "20", "21")
                     : EC_WGMMA_OUT16(d)
                     : EC_WGMMA_IN(a, desc)
                     : "memory");
    else if constexpr (NT == 4)
        asm volatile(EC_WGMMA_ASM("m64n32k16", "bf16", EC_WGMMA_D16, "16", "17", "18", "19", "20", "21")
                     : EC_WGMMA_OUT16(d)
                     : EC_WGMMA_IN(a, desc)
                     : "memory");
    else if constexpr (!BF16)
        asm volatile(EC_WGMMA_ASM("m64n64k16", "f16", EC_WGMMA_D32, "32", "33", "34", "35", "36", "37")
                     : EC_WGMMA_OUT32(d)
                     : EC_WGMMA_IN(a, desc)
                     : "memory");
    else
        asm volatile(EC_WGMMA_ASM("m64n64k16", "bf16", EC_WGMMA_D32, "32", "33", "34", "35", "36", "37")
                     : EC_WGMMA_OUT32(d)
                     : EC_WGMMA_IN(a, desc)
                     : "memory");
#else
    (void)d;
    (void)a;
    (void)desc;
    (void)BF16;
    __trap();
#endif
}

#endif
