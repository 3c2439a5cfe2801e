/* prompts.c — deterministic synthetic prompt tokens for runs without real text. */
#include "ecocompute/engine.h"

/* splitmix64: a well-mixed 64-bit value from any counter, so token i needs no state. */
static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

void ec_prompt_synthetic(uint64_t seed, int vocab, int batch, int len, int *out)
{
    int first = vocab > 3 ? 3 : 0;
    uint64_t span = (uint64_t)(vocab - first);
    for (size_t i = 0; i < (size_t)batch * (size_t)len; i++)
        out[i] = first + (int)(splitmix64(seed * 0x100000001b3ULL + i) % span);
}
