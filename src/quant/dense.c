/* dense.c — the element-wise formats: float32, fp16 and bf16 weights, and FP8 E4M3 weights
 * with a per-output-row scale (row absmax / 448). */
#include "quant/quant_internal.h"

#include <math.h>
#include <string.h>

#define E4M3_MAX 448.0f

static int fp8_quantize(ec_qmatrix *m, const float *w)
{
    size_t cols = (size_t)m->cols;
    uint8_t *codes = m->data;
    for (int r = 0; r < m->rows; r++) {
        const float *wr = w + (size_t)r * cols;
        float absmax = 0.0f;
        for (size_t c = 0; c < cols; c++)
            absmax = fmaxf(absmax, fabsf(wr[c]));
        m->scales[r] = absmax / E4M3_MAX;
        /* w / absmax * 448: the ratio cannot overflow even for a subnormal absmax, and a zero
         * row gets code 0 instead of 0/0 = NaN. */
        for (size_t c = 0; c < cols; c++)
            codes[(size_t)r * cols + c] = absmax > 0.0f ? ec_f32_to_e4m3(wr[c] / absmax * E4M3_MAX) : 0;
    }
    return 0;
}

int ec_dense_quantize(ec_qmatrix *m, const float *w)
{
    size_t n = (size_t)m->rows * (size_t)m->cols;
    size_t elem = m->prec == EC_PREC_F32 ? 4 : m->prec == EC_PREC_FP8 ? 1 : 2;
    m->data = malloc(n * elem);
    if (m->prec == EC_PREC_FP8)
        m->scales = malloc((size_t)m->rows * sizeof *m->scales);
    if (!m->data || (m->prec == EC_PREC_FP8 && !m->scales))
        return ec_set_error("%s: out of memory for a %dx%d matrix", ec_precision_name(m->prec),
                            m->rows, m->cols);
    uint16_t *h = m->data;
    switch (m->prec) {
    case EC_PREC_F32:
        memcpy(m->data, w, n * sizeof *w);
        return 0;
    case EC_PREC_FP16:
        for (size_t i = 0; i < n; i++)
            h[i] = ec_f32_to_f16(w[i]);
        return 0;
    case EC_PREC_BF16:
        for (size_t i = 0; i < n; i++)
            h[i] = ec_f32_to_bf16(w[i]);
        return 0;
    default:
        return fp8_quantize(m, w);
    }
}

const float *ec_dense_decode(const ec_qmatrix *m, int r, int c0, int n, float *restrict buf)
{
    size_t off = (size_t)r * (size_t)m->cols + (size_t)c0;
    const uint16_t *h = m->data;
    switch (m->prec) {
    case EC_PREC_F32:
        return (const float *)m->data + off;
    case EC_PREC_FP16:
        for (int i = 0; i < n; i++)
            buf[i] = ec_half_bits_to_f32(h[off + (size_t)i]);
        return buf;
    case EC_PREC_BF16:
        for (int i = 0; i < n; i++)
            buf[i] = ec_bf16_bits_to_f32(h[off + (size_t)i]);
        return buf;
    default: {
        const float *lut = ec_e4m3_table();
        const uint8_t *codes = (const uint8_t *)m->data + off;
        float scale = m->scales[r];
        for (int i = 0; i < n; i++)
            buf[i] = lut[codes[i]] * scale;
        return buf;
    }
    }
}
