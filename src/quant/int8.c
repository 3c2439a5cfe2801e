/* int8.c — int8 weights (per-output-row absmax) times int8 activations (per-token absmax) with
 * int32 accumulation, plus LLM.int8()'s 16-bit path for outlier activation columns. */
#include "quant/quant_internal.h"

#include <math.h>
#include <string.h>

/* Rounds an already scaled value (|v| <= 127 up to float error) to nearest even. The clamp and
 * the NaN check only keep the cast defined for degenerate inputs (inf/NaN activations). */
static int8_t round_q8(float v)
{
    v = rintf(v);
    if (isnan(v))
        return 0;
    return (int8_t)(v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v);
}

/* x / absmax * 127 rather than bitsandbytes' x * (127 / absmax): the ratio is in [-1, 1], so a
 * subnormal absmax cannot overflow the scale to inf. absmax 0 gives all-zero codes, never NaN. */
static void quantize_vec(const float *restrict x /* [n] */, int n, float absmax,
                         int8_t *restrict q /* [n] */)
{
    for (int c = 0; c < n; c++)
        q[c] = absmax > 0.0f ? round_q8(x[c] / absmax * 127.0f) : 0;
}

int ec_int8_quantize(ec_qmatrix *m, const float *w)
{
    size_t rows = (size_t)m->rows, cols = (size_t)m->cols;
    int8_t *q = malloc(rows * cols);
    m->data = q;
    m->scales = malloc(rows * sizeof *m->scales);
    if (!q || !m->scales)
        return ec_set_error("int8: out of memory for a %dx%d matrix", m->rows, m->cols);
    for (size_t r = 0; r < rows; r++) {
        const float *wr = w + r * cols;
        float absmax = 0.0f;
        for (size_t c = 0; c < cols; c++)
            absmax = fmaxf(absmax, fabsf(wr[c]));
        m->scales[r] = absmax;
        quantize_vec(wr, m->cols, absmax, q + r * cols);
    }
    m->threshold = ec_qformat_of(m->prec)->outliers ? EC_INT8_THRESHOLD : 0.0f;
    return 0;
}

void ec_int8_dequantize_row(const ec_qmatrix *m, int r, float *out)
{
    const int8_t *q = (const int8_t *)m->data + (size_t)r * (size_t)m->cols;
    float step = m->scales[r] / 127.0f;
    for (int c = 0; c < m->cols; c++)
        out[c] = (float)q[c] * step;
}

/* The libraries quantize 16-bit activations: x as fp16 is what every rule below sees. */
static float as_f16(float v)
{
    return ec_f16_to_f32(ec_f32_to_f16(v));
}

static int is_outlier_col(const float *x, int batch, int cols, int c, float threshold)
{
    for (int b = 0; b < batch; b++)
        if (fabsf(as_f16(x[(size_t)b * (size_t)cols + (size_t)c])) >= threshold)
            return 1;
    return 0;
}

int ec_qact_prepare(ec_qact *a, const ec_qmatrix *m, const float *x, int batch)
{
    memset(a, 0, sizeof *a);
    if (!m || !ec_qformat_of(m->prec) || ec_qformat_of(m->prec)->act != EC_ACT_INT8)
        return ec_set_error("ec_qact_prepare: only int8 and int8-mixed quantize activations");
    if (!x || batch < 1)
        return ec_set_error("ec_qact_prepare: need batch >= 1 (got %d) and an input", batch);
    size_t cols = (size_t)m->cols;
    a->batch = batch;
    a->cols = m->cols;
    a->q = malloc((size_t)batch * cols);
    a->scale = malloc((size_t)batch * sizeof *a->scale);
    a->outlier_cols = malloc(cols * sizeof *a->outlier_cols);
    float *masked = malloc(cols * sizeof *masked);
    if (!a->q || !a->scale || !a->outlier_cols || !masked) {
        free(masked);
        ec_qact_free(a);
        return ec_set_error("ec_qact_prepare: out of memory for batch %d x %d", batch, m->cols);
    }
    if (m->threshold > 0.0f)
        for (int c = 0; c < m->cols; c++)
            if (is_outlier_col(x, batch, m->cols, c, m->threshold))
                a->outlier_cols[a->n_outliers++] = c;
    for (int b = 0; b < batch; b++) {
        /* Outlier columns go through the 16-bit path, so they neither set the token's scale
         * nor appear in its int8 codes: zero them in a copy and quantize that. */
        for (size_t c = 0; c < cols; c++) masked[c] = as_f16(x[(size_t)b * cols + c]);
        for (int k = 0; k < a->n_outliers; k++)
            masked[a->outlier_cols[k]] = 0.0f;
        float absmax = 0.0f;
        for (size_t c = 0; c < cols; c++)
            absmax = fmaxf(absmax, fabsf(masked[c]));
        a->scale[b] = absmax / 127.0f;
        quantize_vec(masked, m->cols, absmax, a->q + (size_t)b * cols);
    }
    free(masked);
    return 0;
}

void ec_qact_free(ec_qact *a)
{
    free(a->q);
    free(a->scale);
    free(a->outlier_cols);
    memset(a, 0, sizeof *a);
}

static int32_t dot_i8(const int8_t *restrict a /* [n] */, const int8_t *restrict b /* [n] */,
                      int n)
{
    int32_t acc = 0;
    for (int c = 0; c < n; c++)
        acc += (int32_t)a[c] * (int32_t)b[c];
    return acc;
}

static float round_f16(float v) { return ec_f16_to_f32(ec_f32_to_f16(v)); }

/* y = acc * (row_absmax/127) * (tok_absmax/127), evaluated left to right in fp32, plus the
 * outlier sum: fp16(x[b][c]) * fp16(q[r][c] * row_absmax/127) over the outlier columns in
 * ascending order, accumulated in fp32 (each product of two halves is exact in fp32). */
void ec_int8_matmul_rows(const ec_qmatrix *m, const float *x, const ec_qact *a, int batch,
                         float *y, int r0, int r1)
{
    size_t cols = (size_t)m->cols, rows = (size_t)m->rows;
    for (int r = r0; r < r1; r++) {
        const int8_t *wr = (const int8_t *)m->data + (size_t)r * cols;
        float step = m->scales[r] / 127.0f;
        for (int b = 0; b < batch; b++) {
            const float *xb = x + (size_t)b * cols;
            float out = (float)dot_i8(wr, a->q + (size_t)b * cols, m->cols) * step * a->scale[b];
            float outlier = 0.0f;
            for (int k = 0; k < a->n_outliers; k++) {
                int c = a->outlier_cols[k];
                outlier += round_f16(xb[c]) * round_f16((float)wr[c] * step);
            }
            y[(size_t)b * rows + (size_t)r] = out + outlier;
        }
    }
}
