/* quant_internal.h — what the quant layer's files share: the per-format kernels that
 * qmatrix.c dispatches to, the shared fp32 dot product, and the decode tables. */
#ifndef ECOCOMPUTE_QUANT_INTERNAL_H
#define ECOCOMPUTE_QUANT_INTERNAL_H

#include "ecocompute/common.h"
#include "ecocompute/quant.h"

#include <stdlib.h>

/* Columns a matmul decodes at a time: a multiple of EC_NF4_BLOCK so NF4 blocks never split,
 * small enough that the decoded weights and activations stay in L1. */
#define EC_CHUNK 256

const float *ec_e4m3_table(void); /* [256] E4M3 code -> float32 */

/* fp32 dot product with the accumulation order every float format uses: 8 partial sums
 * (lane = index mod 8) combined pairwise; fixed so results never depend on the row split. */
float ec_dot_f32(const float *restrict a /* [n] */, const float *restrict b /* [n] */, int n);

/* Per-format pieces. *_quantize fill the format's arrays of an ec_qmatrix whose prec, rows and
 * cols are set and whose pointers are NULL; they return 0 or -1 (ec_last_error) on allocation
 * failure. Inputs are already validated (finite, rows/cols >= 1). */
int ec_int8_quantize(ec_qmatrix *m, const float *w /* [rows][cols] */);
void ec_int8_dequantize_row(const ec_qmatrix *m, int r, float *out /* [cols] */);
void ec_int8_matmul_rows(const ec_qmatrix *m, const float *x /* [batch][cols] */,
                         const ec_qact *a, int batch, float *y /* [batch][rows] */, int r0,
                         int r1);

int ec_nf4_quantize(ec_qmatrix *m, const float *w /* [rows][cols] */);
/* Decodes n (<= EC_CHUNK) weights of row r from column c0, a multiple of EC_NF4_BLOCK. */
void ec_nf4_decode(const ec_qmatrix *m, int r, int c0, int n, float *out /* [n] */);

int ec_dense_quantize(ec_qmatrix *m, const float *w /* [rows][cols] */);
/* f32/fp16/bf16/fp8: returns n weights of row r from column c0, decoded into buf when the
 * format is not float32 already. */
const float *ec_dense_decode(const ec_qmatrix *m, int r, int c0, int n, float *buf /* [n] */);

#endif
