/* qmatrix.c — the format-independent part of ec_qmatrix: input validation, dispatch through the
 * format table, and the chunked decode-then-dot matmul shared by every format with a decode. */
#include "quant/quant_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
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
    const ec_qformat *f = ec_qformat_of(prec);
    if (f->act == EC_ACT_INT8 && cols > EC_INT8_MAX_COLS)
        return ec_set_error("ec_qmatrix_quantize: %s supports at most %d columns (got %d)",
                            f->name, EC_INT8_MAX_COLS, cols);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++)
            if (!isfinite(w[(size_t)r * (size_t)cols + (size_t)c]))
                return ec_set_error("ec_qmatrix_quantize: weight [%d][%d] is not finite", r, c);
    out->prec = prec;
    out->rows = rows;
    out->cols = cols;
    int rc = f->quantize(out, w);
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

void ec_qmatrix_dequantize_row(const ec_qmatrix *m, int r, float *out)
{
    ec_qformat_of(m->prec)->dequantize_row(m, r, out);
}

void ec_decoded_dequantize_row(const ec_qmatrix *m, int r, float *out)
{
    const ec_qformat *f = ec_qformat_of(m->prec);
    for (int c0 = 0; c0 < m->cols; c0 += EC_CHUNK) {
        int n = m->cols - c0 < EC_CHUNK ? m->cols - c0 : EC_CHUNK;
        const float *w = f->decode(m, r, c0, n, out + c0);
        if (w != out + c0)
            memcpy(out + c0, w, (size_t)n * sizeof *w);
    }
}

/* The 16-bit formats model "16-bit in, fp32 accumulate": activations [batch][cols] are rounded
 * to the weights' format once per call (not per row, which would cost as much as the matmul).
 * Other formats take the fp32 activations as they are. Returns x itself or a malloc'd copy. */
static const float *rounded_activations(ec_act_kind act, const float *x, size_t n)
{
    if (act != EC_ACT_F16 && act != EC_ACT_BF16) return x;
    float *buf = malloc(n * sizeof *buf);
    if (!buf) {
        fprintf(stderr, "ecocompute: out of memory rounding %zu activations\n", n);
        abort();
    }
    for (size_t i = 0; i < n; i++)
        buf[i] = act == EC_ACT_F16 ? ec_half_bits_to_f32(ec_f32_to_f16(x[i]))
                                   : ec_bf16_bits_to_f32(ec_f32_to_bf16(x[i]));
    return buf;
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
    ec_qformat_of(m->prec)->matmul_rows(m, x, a, batch, y, r0, r1);
}

void ec_decoded_matmul_rows(const ec_qmatrix *m, const float *x, const ec_qact *a, int batch,
                            float *y, int r0, int r1)
{
    (void)a;
    const ec_qformat *f = ec_qformat_of(m->prec);
    size_t rows = (size_t)m->rows, cols = (size_t)m->cols;
    float wbuf[EC_ROW_GROUP][EC_CHUNK];
    const float *w[EC_ROW_GROUP];
    const float *xr = rounded_activations(f->act, x, (size_t)batch * cols);
    for (int r = r0; r < r1; r += EC_ROW_GROUP) {
        int g = r1 - r < EC_ROW_GROUP ? r1 - r : EC_ROW_GROUP;
        for (int b = 0; b < batch; b++)
            for (int k = 0; k < g; k++)
                y[(size_t)b * rows + (size_t)(r + k)] = 0.0f;
        /* Each row: fp32 sum of per-chunk dot products, chunks in column order. A group of
         * rows shares each chunk of activations; a row's arithmetic never depends on its group. */
        for (int c0 = 0; c0 < m->cols; c0 += EC_CHUNK) {
            int n = m->cols - c0 < EC_CHUNK ? m->cols - c0 : EC_CHUNK;
            for (int k = 0; k < g; k++)
                w[k] = f->decode(m, r + k, c0, n, wbuf[k]);
            for (int b = 0; b < batch; b++) {
                const float *xs = xr + (size_t)b * cols + (size_t)c0;
                for (int k = 0; k < g; k++)
                    y[(size_t)b * rows + (size_t)(r + k)] += ec_dot_f32(w[k], xs, n);
            }
        }
    }
    if (xr != x) free((void *)xr);
}
