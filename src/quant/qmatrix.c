/* qmatrix.c — the format-independent part of ec_qmatrix: input validation, dispatch to the
 * per-format code, and the chunked decode-then-dot matmul shared by every non-int8 format. */
#include "quant/quant_internal.h"

#include <math.h>
#include <string.h>

/* int32 accumulation of up to cols products of magnitude <= 127*127 must not overflow. */
#define EC_INT8_MAX_COLS (INT32_MAX / (127 * 127))

int ec_qmatrix_quantize(ec_qmatrix *out, ec_precision prec, const float *w, int rows, int cols)
{
    memset(out, 0, sizeof *out);
    if ((unsigned)prec >= EC_PREC_COUNT)
        return ec_set_error("ec_qmatrix_quantize: unknown precision %d", (int)prec);
    if (rows < 1 || cols < 1 || !w)
        return ec_set_error("ec_qmatrix_quantize: need rows, cols >= 1 and weights (got %dx%d)",
                            rows, cols);
    if ((prec == EC_PREC_INT8 || prec == EC_PREC_INT8_MIXED) && cols > EC_INT8_MAX_COLS)
        return ec_set_error("ec_qmatrix_quantize: int8 supports at most %d columns (got %d)",
                            EC_INT8_MAX_COLS, cols);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++)
            if (!isfinite(w[(size_t)r * (size_t)cols + (size_t)c]))
                return ec_set_error("ec_qmatrix_quantize: weight [%d][%d] is not finite", r, c);
    out->prec = prec;
    out->rows = rows;
    out->cols = cols;
    int rc;
    switch (prec) {
    case EC_PREC_INT8:
    case EC_PREC_INT8_MIXED:
        rc = ec_int8_quantize(out, w);
        break;
    case EC_PREC_NF4:
    case EC_PREC_NF4_DQ:
        rc = ec_nf4_quantize(out, w);
        break;
    default:
        rc = ec_dense_quantize(out, w);
        break;
    }
    if (rc != 0)
        ec_qmatrix_free(out);
    return rc;
}

void ec_qmatrix_free(ec_qmatrix *m)
{
    free(m->data);
    free(m->scales);
    free(m->qscales);
    free(m->qscale_absmax);
    memset(m, 0, sizeof *m);
}

size_t ec_qmatrix_bytes(const ec_qmatrix *m)
{
    return ec_precision_weight_bytes(m->prec, m->rows, m->cols);
}

static const float *decode_chunk(const ec_qmatrix *m, int r, int c0, int n, float *buf)
{
    if (m->prec == EC_PREC_NF4 || m->prec == EC_PREC_NF4_DQ) {
        ec_nf4_decode(m, r, c0, n, buf);
        return buf;
    }
    return ec_dense_decode(m, r, c0, n, buf);
}

void ec_qmatrix_dequantize_row(const ec_qmatrix *m, int r, float *out)
{
    if (m->prec == EC_PREC_INT8 || m->prec == EC_PREC_INT8_MIXED) {
        ec_int8_dequantize_row(m, r, out);
        return;
    }
    for (int c0 = 0; c0 < m->cols; c0 += EC_CHUNK) {
        int n = m->cols - c0 < EC_CHUNK ? m->cols - c0 : EC_CHUNK;
        const float *w = decode_chunk(m, r, c0, n, out + c0);
        if (w != out + c0)
            memcpy(out + c0, w, (size_t)n * sizeof *w);
    }
}

/* The 16-bit formats model "16-bit in, fp32 accumulate": activations are rounded to the
 * weights' format too. Other formats take the fp32 activations as they are. */
static const float *activations(ec_precision p, const float *x, int n, float *buf)
{
    switch (p) {
    case EC_PREC_FP16:
        for (int i = 0; i < n; i++)
            buf[i] = ec_half_bits_to_f32(ec_f32_to_f16(x[i]));
        return buf;
    case EC_PREC_BF16:
        for (int i = 0; i < n; i++)
            buf[i] = ec_bf16_bits_to_f32(ec_f32_to_bf16(x[i]));
        return buf;
    default:
        return x;
    }
}

float ec_dot_f32(const float *restrict a, const float *restrict b, int n)
{
    float lane[8] = {0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++)
            lane[l] += a[i + l] * b[i + l];
    for (int l = 0; i < n; i++, l++)
        lane[l] += a[i] * b[i];
    return ((lane[0] + lane[4]) + (lane[1] + lane[5])) + ((lane[2] + lane[6]) + (lane[3] + lane[7]));
}

void ec_qmatrix_matmul_rows(const ec_qmatrix *m, const float *x, const ec_qact *a, int batch,
                            float *y, int r0, int r1)
{
    if (m->prec == EC_PREC_INT8 || m->prec == EC_PREC_INT8_MIXED) {
        ec_int8_matmul_rows(m, x, a, batch, y, r0, r1);
        return;
    }
    size_t rows = (size_t)m->rows, cols = (size_t)m->cols;
    float wbuf[EC_ROW_GROUP][EC_CHUNK], xbuf[EC_CHUNK];
    const float *w[EC_ROW_GROUP];
    for (int r = r0; r < r1; r += EC_ROW_GROUP) {
        int g = r1 - r < EC_ROW_GROUP ? r1 - r : EC_ROW_GROUP;
        for (int b = 0; b < batch; b++)
            for (int k = 0; k < g; k++)
                y[(size_t)b * rows + (size_t)(r + k)] = 0.0f;
        /* Each row: fp32 sum of per-chunk dot products, chunks in column order. The grouping
         * only shares decoded activations; a row's arithmetic never depends on its group. */
        for (int c0 = 0; c0 < m->cols; c0 += EC_CHUNK) {
            int n = m->cols - c0 < EC_CHUNK ? m->cols - c0 : EC_CHUNK;
            for (int k = 0; k < g; k++)
                w[k] = decode_chunk(m, r + k, c0, n, wbuf[k]);
            for (int b = 0; b < batch; b++) {
                const float *xs = activations(m->prec, x + (size_t)b * cols + (size_t)c0, n, xbuf);
                for (int k = 0; k < g; k++)
                    y[(size_t)b * rows + (size_t)(r + k)] += ec_dot_f32(w[k], xs, n);
            }
        }
    }
}
