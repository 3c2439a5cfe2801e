/* quant_test_util.h — helpers the quant tests share: a seeded generator and float bits. */
#ifndef ECOCOMPUTE_QUANT_TEST_UTIL_H
#define ECOCOMPUTE_QUANT_TEST_UTIL_H

#include <stdint.h>
#include <string.h>

/* xorshift64*: reproducible inputs without depending on the C library's rand(). */
static inline uint64_t qt_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

/* Uniform in [lo, hi). */
static inline float qt_uniform(uint64_t *s, float lo, float hi)
{
    return lo + (hi - lo) * (float)((double)(qt_next(s) >> 11) / 9007199254740992.0);
}

static inline void qt_fill(uint64_t *s, float *v /* [n] */, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++)
        v[i] = qt_uniform(s, lo, hi);
}

static inline uint32_t qt_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline float qt_float(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

#endif
