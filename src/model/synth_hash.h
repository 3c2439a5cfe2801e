/* synth_hash.h — the counter-based generator behind synthetic weights, header-only so the CUDA
 * backend can include it and produce the same values on the GPU.
 *
 * Element i of tensor (kind, layer) is splitmix64's finaliser applied to a key mixed from
 * (seed, kind, layer) plus i: no state, so any slice can be produced by any thread. The normal
 * approximation is Irwin-Hall with four 16-bit uniforms: integer sums and one float multiply,
 * exact in IEEE arithmetic, so CPU and GPU agree bit for bit (Box-Muller's log/cos would not),
 * with unit variance and tails bounded at +-3.46 (no freak weights). */
#ifndef ECOCOMPUTE_SYNTH_HASH_H
#define ECOCOMPUTE_SYNTH_HASH_H

#include <stdint.h>

#if defined(__CUDACC__)
#define EC_SYNTH_FN static inline __host__ __device__
#else
#define EC_SYNTH_FN static inline
#endif

EC_SYNTH_FN uint64_t ec_synth_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Per-tensor key: distinct for every (seed, kind, layer) so tensors never share a stream. */
EC_SYNTH_FN uint64_t ec_synth_key(uint64_t seed, int kind, int layer)
{
    uint64_t tag = ((uint64_t)(uint32_t)kind << 32) | (uint32_t)layer;
    return ec_synth_mix64(ec_synth_mix64(seed) ^ ec_synth_mix64(tag + 0x9e3779b97f4a7c15ULL));
}

EC_SYNTH_FN float ec_synth_normal_keyed(uint64_t key, uint64_t i)
{
    uint64_t h = ec_synth_mix64(key + i * 0x9e3779b97f4a7c15ULL);
    uint32_t s = (uint32_t)(h & 0xffff) + (uint32_t)((h >> 16) & 0xffff) +
                 (uint32_t)((h >> 32) & 0xffff) + (uint32_t)(h >> 48);
    /* Sum of four (u + 0.5)/65536 has mean 2 and variance 1/3; centre, then scale by sqrt(3). */
    return (float)((int32_t)s - 131070) * (1.7320508075688772f / 65536.0f);
}

#endif
