/* dense.c — the element-wise formats: float32, fp16 and bf16 weights, and FP8 E4M3 weights
 * with a per-output-row scale (row absmax / 448). */
#include "quant/quant_internal.h"

#include <math.h>
#include <string.h>

#define E4M3_MAX 448.0f

/* The codes (elem bytes each) and, with row_scales, one fp32 per row. */
static int alloc_dense(ec_qmatrix *m, size_t elem, int row_scales)
{
    m->data = malloc((size_t)m->rows * (size_t)m->cols * elem);
    if (row_scales) m->scales = malloc((size_t)m->rows * sizeof *m->scales);
    if (!m->data || (row_scales && !m->scales))
        return ec_set_error("%s: out of memory for a %dx%d matrix", ec_precision_name(m->prec),
                            m->rows, m->cols);
    return 0;
}

int ec_f32_quantize(ec_qmatrix *m, const float *w)
{
    if (alloc_dense(m, sizeof *w, 0)) return -1;
    memcpy(m->data, w, (size_t)m->rows * (size_t)m->cols * sizeof *w);
    return 0;
}

int ec_fp16_quantize(ec_qmatrix *m, const float *w)
{
    if (alloc_dense(m, 2, 0)) return -1;
    uint16_t *h = m->data;
    for (size_t i = 0, n = (size_t)m->rows * (size_t)m->cols; i < n; i++)
        h[i] = ec_f32_to_f16(w[i]);
    return 0;
}

int ec_bf16_quantize(ec_qmatrix *m, const float *w)
{
    if (alloc_dense(m, 2, 0)) return -1;
    uint16_t *h = m->data;
    for (size_t i = 0, n = (size_t)m->rows * (size_t)m->cols; i < n; i++)
        h[i] = ec_f32_to_bf16(w[i]);
    return 0;
}

int ec_fp8_quantize(ec_qmatrix *m, const float *w)
{
    if (alloc_dense(m, 1, 1)) return -1;
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

static size_t offset(const ec_qmatrix *m, int r, int c0)
{
    return (size_t)r * (size_t)m->cols + (size_t)c0;
}

const float *ec_f32_decode(const ec_qmatrix *m, int r, int c0, int n, float *buf)
{
    (void)n;
    (void)buf;
    return (const float *)m->data + offset(m, r, c0);
}

const float *ec_fp16_decode(const ec_qmatrix *m, int r, int c0, int n, float *restrict buf)
{
    const uint16_t *h = (const uint16_t *)m->data + offset(m, r, c0);
    const float *lut = ec_f16_table();
    for (int i = 0; i < n; i++)
        buf[i] = lut[h[i]];
    return buf;
}

const float *ec_bf16_decode(const ec_qmatrix *m, int r, int c0, int n, float *restrict buf)
{
    const uint16_t *h = (const uint16_t *)m->data + offset(m, r, c0);
    for (int i = 0; i < n; i++)
        buf[i] = ec_bf16_bits_to_f32(h[i]);
    return buf;
}

const float *ec_fp8_decode(const ec_qmatrix *m, int r, int c0, int n, float *restrict buf)
{
    const float *lut = ec_e4m3_table();
    const uint8_t *codes = (const uint8_t *)m->data + offset(m, r, c0);
    float scale = m->scales[r];
    for (int i = 0; i < n; i++)
        buf[i] = lut[codes[i]] * scale;
    return buf;
}
