/* convert.c — exact scalar conversions between float32 and the 16- and 8-bit float formats
 * (IEEE half, bfloat16, FP8 E4M3), all round to nearest even, and the E4M3 decode table. */
#include "quant/quant_internal.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

static uint32_t f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

/* Shifts a mantissa right by s (1..31) with round to nearest, ties to even. */
static uint32_t shift_rne(uint32_t m, unsigned s)
{
    uint32_t q = m >> s, rem = m & ((1u << s) - 1u), half = 1u << (s - 1u);
    return q + (rem > half || (rem == half && (q & 1u)));
}

uint16_t ec_f32_to_f16(float x)
{
    uint32_t u = f32_bits(x);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    u &= 0x7fffffffu;
    if (u > 0x7f800000u) /* NaN stays a (quiet) NaN, keeping the top payload bits */
        return (uint16_t)(sign | 0x7e00u | ((u >> 13) & 0x3ffu));
    if (u >= 0x477ff000u) /* >= 65520 = halfway between 65504 and 2^16: rounds to inf */
        return (uint16_t)(sign | 0x7c00u);
    if (u >= 0x38800000u) /* normal half: rebias 127 -> 15; a mantissa carry bumps the exponent */
        return (uint16_t)(sign | shift_rne(u - (112u << 23), 13));
    if (u <= 0x33000000u) /* <= 2^-25, half the smallest subnormal: the tie goes to even 0 */
        return sign;
    /* subnormal half: value = q * 2^-24 with q = m * 2^(e - 126 - 24 + 24) */
    unsigned e = u >> 23;
    return (uint16_t)(sign | shift_rne((u & 0x7fffffu) | 0x800000u, 126u - e));
}

float ec_f16_to_f32(uint16_t h) { return ec_half_bits_to_f32(h); }

uint16_t ec_f32_to_bf16(float x)
{
    uint32_t u = f32_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* rounding could carry a NaN into inf: force quiet */
        return (uint16_t)((u >> 16) | 0x40u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

float ec_bf16_to_f32(uint16_t h) { return ec_bf16_bits_to_f32(h); }

uint8_t ec_f32_to_e4m3(float x)
{
    uint32_t u = f32_bits(x);
    uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    u &= 0x7fffffffu;
    if (u > 0x7f800000u)
        return (uint8_t)(sign | 0x7fu);
    int e = (int)(u >> 23) - 127;
    uint32_t q;
    if (e < -6) /* below the smallest normal 2^-6: subnormal steps of 2^-9; 2^-6 itself is code 8 */
        q = (uint32_t)rintf(fabsf(x) * 512.0f);
    else if (e > 8)
        q = 0x7eu;
    else /* rebias 127 -> 7 and keep 3 mantissa bits; a carry moves to the next binade */
        q = shift_rne(((uint32_t)(e + 7) << 23) | (u & 0x7fffffu), 20);
    if (q > 0x7eu) /* 0x7f would be NaN: finite values beyond 448 saturate (like satfinite) */
        q = 0x7eu;
    return (uint8_t)(sign | q);
}

float ec_e4m3_to_f32(uint8_t c)
{
    unsigned e = (c >> 3) & 0xfu, m = c & 7u;
    float v;
    if (e == 15 && m == 7)
        v = NAN;
    else if (e == 0)
        v = ldexpf((float)m, -9);
    else
        v = ldexpf((float)(m | 8u), (int)e - 10);
    return (c & 0x80u) ? -v : v;
}

/* Tables built once per process and only read afterwards, so threads share them safely. */
static float e4m3_table[256];
static float dynamic_map[256];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

/* torch.linspace(start, end, n) in float32: start + step*i for the first half and
 * end - step*(n-1-i) for the second, as PyTorch computes it. */
static float linspace_f32(float start, float end, int n, int i)
{
    float step = (end - start) / (float)(n - 1);
    return i < n / 2 ? start + step * (float)i : end - step * (float)(n - 1 - i);
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* bitsandbytes create_dynamic_map(signed=True, max_exponent_bits=7, total_bits=8): for each
 * decade 10^(i-6), i = 0..6, the 2^i midpoints of linspace(0.1, 1, 2^i + 1) scaled by the decade,
 * with both signs (254 values), plus 0 and 1.0, sorted ascending. All arithmetic in float32. */
static void build_dynamic_map(float *map /* [256] */)
{
    int n = 0;
    for (int i = 0; i < 7; i++) {
        int items = (1 << i) + 1;
        float decade = (float)pow(10.0, i - 6);
        for (int k = 0; k + 1 < items; k++) {
            float mean = (linspace_f32(0.1f, 1.0f, items, k) +
                          linspace_f32(0.1f, 1.0f, items, k + 1)) / 2.0f;
            map[n++] = decade * mean;
            map[n++] = -(decade * mean);
        }
    }
    map[n++] = 0.0f;
    map[n++] = 1.0f;
    qsort(map, (size_t)n, sizeof *map, cmp_float);
}

static void build_tables(void)
{
    for (int c = 0; c < 256; c++)
        e4m3_table[c] = ec_e4m3_to_f32((uint8_t)c);
    build_dynamic_map(dynamic_map);
}

const float *ec_e4m3_table(void)
{
    pthread_once(&tables_once, build_tables);
    return e4m3_table;
}

const float *ec_dynamic_map(void)
{
    pthread_once(&tables_once, build_tables);
    return dynamic_map;
}
