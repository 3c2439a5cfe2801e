/* probe_sm90.cuh — the sm_90 instructions that bench/'s probes share: PDL's release and wait, the
 * shared-memory address of a pointer, mbarriers, and 1-D bulk copies (TMA) from global into
 * shared memory that complete on an mbarrier. Device code only; include from a .cu file built
 * for sm_90a. */
#ifndef ECOCOMPUTE_BENCH_PROBE_SM90_CUH
#define ECOCOMPUTE_BENCH_PROBE_SM90_CUH

#include <stdint.h>

/* Lets the next kernel in the stream launch (PDL). */
__device__ __forceinline__ void release_next()
{
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}
/* Returns once the previous kernel in the stream has finished and its writes are visible. */
__device__ __forceinline__ void wait_previous()
{
    asm volatile("griddepcontrol.wait;" ::: "memory");
}
__device__ __forceinline__ uint32_t smem_addr(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

/* One thread initialises a CTA's mbarriers, then fences them once before any use. */
__device__ __forceinline__ void mbar_init(uint64_t *bar, unsigned arrivals)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(arrivals));
}
__device__ __forceinline__ void mbar_init_fence()
{
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t *bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}
/* Whether the phase of bar with this parity has completed: mbar_test with try_wait, which may
 * suspend the thread for a while until it has; mbar_ready with test_wait, which never does (a
 * lane that waited would hold up its warp's other lanes). */
#define PROBE_MBAR_PARITY(op)                                                                      \
    asm volatile("{ .reg .pred q; mbarrier." op ".parity.shared::cta.b64 q, [%1], %2; "            \
                 "selp.u32 %0, 1, 0, q; }"                                                         \
                 : "=r"(done)                                                                      \
                 : "r"(smem_addr(bar)), "r"(parity)                                                \
                 : "memory")
__device__ __forceinline__ bool mbar_test(uint64_t *bar, uint32_t parity)
{
    uint32_t done;
    PROBE_MBAR_PARITY("try_wait");
    return done != 0;
}
__device__ __forceinline__ bool mbar_ready(uint64_t *bar, uint32_t parity)
{
    uint32_t done;
    PROBE_MBAR_PARITY("test_wait");
    return done != 0;
}
#undef PROBE_MBAR_PARITY

/* Copies `bytes` (a multiple of 16; both addresses 16-byte aligned) from src to dst; bar, an
 * mbarrier of one arrival, completes its phase when they have landed. */
__device__ __forceinline__ void bulk_copy(void *dst, const void *src, unsigned bytes, uint64_t *bar)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)),
                 "r"(bytes)
                 : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], "
                 "%2, [%3];" ::"r"(smem_addr(dst)),
                 "l"(src), "r"(bytes), "r"(smem_addr(bar))
                 : "memory");
}

#endif
