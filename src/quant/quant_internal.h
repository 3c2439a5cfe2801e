/* quant_internal.h — what the quant layer's files share: the per-format kernels that
 * qmatrix.c dispatches to, the shared fp32 dot product, and the decode tables. */
#ifndef ECOCOMPUTE_QUANT_INTERNAL_H
#define ECOCOMPUTE_QUANT_INTERNAL_H

#include "ecocompute/common.h"
#include "ecocompute/quant.h"

#include <stdlib.h>
#include <string.h>

/* Columns a matmul decodes at a time: a multiple of EC_NF4_BLOCK so NF4 blocks never split,
 * small enough that the decoded weights and activations stay in L1. */
#define EC_CHUNK 256

/* Rows a matmul decodes together, so each activation chunk is prepared once per group. */
#define EC_ROW_GROUP 8

const float *ec_e4m3_table(void); /* [256] E4M3 code -> float32 */
const float *ec_f16_table(void);  /* [65536] half bit pattern -> float32 */

/* Inline decoders for the matmul inner loops (the public ec_f16_to_f32 / ec_bf16_to_f32 call
 * these): bit assembly, exact for every input. */
static inline float ec_half_bits_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, u;
    float v;
    if (e == 0) { /* subnormal: m * 2^-24 is exact in fp32 */
        v = (float)m * 0x1p-24f;
        return sign ? -v : v;
    }
    u = sign | (e == 31 ? 0x7f800000u : (e + 112u) << 23) | m << 13; /* rebias 15 -> 127 */
    memcpy(&v, &u, sizeof v);
    return v;
}

static inline float ec_bf16_bits_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}

/* fp32 dot product with the accumulation order every float format uses: 8 partial sums
 * (lane = index mod 8) combined pairwise; fixed so results never depend on the row split. */
float ec_dot_f32(const float *restrict a /* [n] */, const float *restrict b /* [n] */, int n);

/* Per-format CPU reference pieces, named by the format table (formats.c). *_quantize fill the
 * format's arrays of an ec_qmatrix whose prec, rows and cols are set and whose pointers are NULL;
 * they return 0 or -1 (ec_last_error) on allocation failure. Inputs are already validated
 * (finite, rows/cols >= 1). *_decode: ec_qformat.decode. */
int ec_int8_quantize(ec_qmatrix *m, const float *w /* [rows][cols] */);
void ec_int8_dequantize_row(const ec_qmatrix *m, int r, float *out /* [cols] */);
void ec_int8_matmul_rows(const ec_qmatrix *m, const float *x /* [batch][cols] */,
                         const ec_qact *a, int batch, float *y /* [batch][rows] */, int r0,
                         int r1);

int ec_nf4_quantize(ec_qmatrix *m, const float *w /* [rows][cols] */);
int ec_nf4_dq_quantize(ec_qmatrix *m, const float *w /* [rows][cols] */);
/* nf4 and nf4-dq; c0 a multiple of EC_NF4_BLOCK. */
const float *ec_nf4_decode(const ec_qmatrix *m, int r, int c0, int n, float *buf /* [n] */);

int ec_f32_quantize(ec_qmatrix *m, const float *w /* [rows][cols] */);
int ec_fp16_quantize(ec_qmatrix *m, const float *w /* [rows][cols] */);
int ec_bf16_quantize(ec_qmatrix *m, const float *w /* [rows][cols] */);
int ec_fp8_quantize(ec_qmatrix *m, const float *w /* [rows][cols] */);
const float *ec_f32_decode(const ec_qmatrix *m, int r, int c0, int n, float *buf /* [n] */);
const float *ec_fp16_decode(const ec_qmatrix *m, int r, int c0, int n, float *buf /* [n] */);
const float *ec_bf16_decode(const ec_qmatrix *m, int r, int c0, int n, float *buf /* [n] */);
const float *ec_fp8_decode(const ec_qmatrix *m, int r, int c0, int n, float *buf /* [n] */);

/* The formats with a decode (qmatrix.c): a row decoded chunk by chunk, and the chunked
 * decode-then-dot matmul with the activations of the format's ec_qformat.act. */
void ec_decoded_dequantize_row(const ec_qmatrix *m, int r, float *out /* [cols] */);
void ec_decoded_matmul_rows(const ec_qmatrix *m, const float *x /* [batch][cols] */,
                            const ec_qact *a, int batch, float *y /* [batch][rows] */, int r0,
                            int r1);

#endif
