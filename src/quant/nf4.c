/* nf4.c — 4-bit NormalFloat weights in blocks of 64 per row with an fp32 absmax each, and the
 * double-quantized variant whose absmax values are 8-bit codes of bitsandbytes' dynamic map. */
#include "quant/quant_internal.h"

#include <math.h>

/* bitsandbytes nf4_dequantization_lut (create_normal_map(offset=0.9677083)): 7 negative values,
 * exact 0 at code 7, 8 positive values, exact -1 and 1 at the ends. */
const float ec_nf4_code[16] = {
    -1.0f,
    -0.6961928009986877f,
    -0.5250730514526367f,
    -0.39491748809814453f,
    -0.28444138169288635f,
    -0.18477343022823334f,
    -0.09105003625154495f,
    0.0f,
    0.07958029955625534f,
    0.16093020141124725f,
    0.24611230194568634f,
    0.33791524171829224f,
    0.44070982933044434f,
    0.5626170039176941f,
    0.7229568362236023f,
    1.0f,
};

/* dQuantizeNF4's decision-tree thresholds (midpoints between neighbouring codes), ascending:
 * code k+1 is chosen when x > threshold[k]. */
static const float nf4_threshold[15] = {
    -0.8480964004993439f, -0.6106329262256622f, -0.4599952697753906f, -0.33967943489551544f,
    -0.23460740596055984f, -0.13791173323988914f, -0.045525018125772476f, 0.03979014977812767f,
    0.1202552504837513f, 0.2035212516784668f, 0.2920137718319893f, 0.3893125355243683f,
    0.5016634166240692f, 0.6427869200706482f, 0.8614784181118011f,
};

#define NF4_ZERO_CODE 7

/* The decision tree is a binary search over sorted thresholds with strict `>`, so its answer is
 * the number of thresholds below x (NaN passes none and gets code 0, as in the tree). */
uint8_t ec_nf4_encode(float x_normalized)
{
    uint8_t code = 0;
    for (int k = 0; k < 15; k++)
        code = (uint8_t)(code + (x_normalized > nf4_threshold[k]));
    return code;
}

static int nf4_blocks(int cols) { return (cols + EC_NF4_BLOCK - 1) / EC_NF4_BLOCK; }
static size_t nf4_row_bytes(int cols) { return ((size_t)cols + 1) / 2; }

/* x / absmax rather than bitsandbytes' x * (1/absmax) so a subnormal absmax cannot make the
 * factor inf; an all-zero block (absmax 0) gets code 7 = 0.0 instead of bnb's NaN -> code 0. */
static uint8_t encode_scaled(float x, float absmax)
{
    return absmax > 0.0f ? ec_nf4_encode(x / absmax) : NF4_ZERO_CODE;
}

/* Nearest entry of the ascending 256-entry map; a tie goes to the lower index. */
static uint8_t dynamic_encode(const float *map /* [256] */, float v)
{
    int lo = 0, hi = 255;
    if (v <= map[0])
        return 0;
    if (v >= map[255])
        return 255;
    while (hi - lo > 1) { /* invariant: map[lo] < v < map[hi] or equal at one end */
        int mid = (lo + hi) / 2;
        if (map[mid] <= v)
            lo = mid;
        else
            hi = mid;
    }
    return (uint8_t)(map[hi] - v < v - map[lo] ? hi : lo);
}

/* Replaces the fp32 absmax array [n] by offset + 8-bit codes with one fp32 scale per 256. */
static int double_quantize(ec_qmatrix *m, const float *absmax /* [n] */, size_t n)
{
    size_t nb2 = (n + EC_NF4_DQ_BLOCK - 1) / EC_NF4_DQ_BLOCK;
    m->qscales = malloc(n);
    m->qscale_absmax = malloc(nb2 * sizeof *m->qscale_absmax);
    if (!m->qscales || !m->qscale_absmax)
        return ec_set_error("nf4-dq: out of memory for %zu block scales", n);
    double sum = 0.0;
    for (size_t i = 0; i < n; i++)
        sum += absmax[i];
    m->qscale_offset = (float)(sum / (double)n);
    const float *map = ec_dynamic_map();
    uint8_t zero_code = dynamic_encode(map, 0.0f);
    for (size_t j = 0; j < nb2; j++) {
        size_t i0 = j * EC_NF4_DQ_BLOCK, i1 = i0 + EC_NF4_DQ_BLOCK < n ? i0 + EC_NF4_DQ_BLOCK : n;
        float a2 = 0.0f;
        for (size_t i = i0; i < i1; i++)
            a2 = fmaxf(a2, fabsf(absmax[i] - m->qscale_offset));
        m->qscale_absmax[j] = a2;
        for (size_t i = i0; i < i1; i++)
            m->qscales[i] =
                a2 > 0.0f ? dynamic_encode(map, (absmax[i] - m->qscale_offset) / a2) : zero_code;
    }
    return 0;
}

/* The 4-bit codes into m->data and the fp32 block absmax into *absmax [rows][nblocks]. */
static int quantize_codes(ec_qmatrix *m, const float *w, float **absmax_out)
{
    int nb = nf4_blocks(m->cols);
    size_t rb = nf4_row_bytes(m->cols), cols = (size_t)m->cols, nscales = (size_t)m->rows * (size_t)nb;
    uint8_t *packed = malloc((size_t)m->rows * rb);
    float *absmax = malloc(nscales * sizeof *absmax);
    m->data = packed;
    if (!packed || !absmax) {
        free(absmax);
        return ec_set_error("nf4: out of memory for a %dx%d matrix", m->rows, m->cols);
    }
    for (int r = 0; r < m->rows; r++) {
        const float *wr = w + (size_t)r * cols;
        for (int k = 0; k < nb; k++) {
            int c0 = k * EC_NF4_BLOCK, c1 = c0 + EC_NF4_BLOCK < m->cols ? c0 + EC_NF4_BLOCK : m->cols;
            float am = 0.0f;
            for (int c = c0; c < c1; c++)
                am = fmaxf(am, fabsf(wr[c]));
            absmax[(size_t)r * (size_t)nb + (size_t)k] = am;
            /* Blocks start at even columns, so a byte's two codes share the block's absmax. */
            for (int c = c0; c < c1; c += 2) {
                uint8_t hi = encode_scaled(wr[c], am);
                uint8_t lo = c + 1 < c1 ? encode_scaled(wr[c + 1], am) : NF4_ZERO_CODE;
                packed[(size_t)r * rb + (size_t)c / 2] = (uint8_t)(hi << 4 | lo);
            }
        }
    }
    *absmax_out = absmax;
    return 0;
}

int ec_nf4_quantize(ec_qmatrix *m, const float *w)
{
    return quantize_codes(m, w, &m->scales);
}

int ec_nf4_dq_quantize(ec_qmatrix *m, const float *w)
{
    float *absmax = NULL;
    if (quantize_codes(m, w, &absmax)) return -1;
    int rc = double_quantize(m, absmax, (size_t)m->rows * (size_t)nf4_blocks(m->cols));
    free(absmax);
    return rc;
}

static float block_absmax(const ec_qmatrix *m, const float *map, size_t i)
{
    if (!map)
        return m->scales[i];
    /* Two statements so no compiler contracts them into an fma the GPU kernels may not use. */
    float v = map[m->qscales[i]] * m->qscale_absmax[i / EC_NF4_DQ_BLOCK];
    return v + m->qscale_offset;
}

const float *ec_nf4_decode(const ec_qmatrix *m, int r, int c0, int n, float *restrict out)
{
    const float *map = ec_qformat_of(m->prec)->double_quant ? ec_dynamic_map() : NULL;
    size_t nb = (size_t)nf4_blocks(m->cols);
    const uint8_t *row = (const uint8_t *)m->data + (size_t)r * nf4_row_bytes(m->cols);
    for (int i = 0; i < n; i += EC_NF4_BLOCK) {
        int c = c0 + i, len = n - i < EC_NF4_BLOCK ? n - i : EC_NF4_BLOCK;
        float am = block_absmax(m, map, (size_t)r * nb + (size_t)(c / EC_NF4_BLOCK));
        float lut[16]; /* code * absmax: the fp32 dequantized value of each code in this block */
        for (int k = 0; k < 16; k++)
            lut[k] = ec_nf4_code[k] * am;
        const uint8_t *bytes = row + c / 2;
        for (int j = 0; j + 1 < len; j += 2) {
            out[i + j] = lut[bytes[j / 2] >> 4];
            out[i + j + 1] = lut[bytes[j / 2] & 15];
        }
        if (len & 1)
            out[i + len - 1] = lut[bytes[len / 2] >> 4];
    }
    return out;
}
