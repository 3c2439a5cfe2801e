/* ecocompute/quant.h — weight/activation formats and their CPU reference implementations.
 *
 * A linear layer's weight W is [rows = out_features][cols = in_features], row-major (the
 * PyTorch nn.Linear layout); y[b][r] = sum_c x[b][c] * W[r][c]. The byte layouts below are the
 * contract the CUDA kernels must read byte for byte; docs/formats.md describes them in prose.
 * These are the numerical references: every GPU path is tested against them. */
#ifndef ECOCOMPUTE_QUANT_H
#define ECOCOMPUTE_QUANT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    EC_PREC_F32 = 0,    /* float32 reference (no quantization) */
    EC_PREC_FP16,       /* IEEE half, round to nearest even */
    EC_PREC_BF16,       /* bfloat16, round to nearest even */
    EC_PREC_INT8,       /* int8 per-row absmax weights x int8 per-token absmax activations */
    EC_PREC_INT8_MIXED, /* LLM.int8(): INT8 plus a 16-bit path for outlier activation columns */
    EC_PREC_NF4,        /* 4-bit NormalFloat, blocks of 64 with an fp32 absmax each */
    EC_PREC_NF4_DQ,     /* NF4 with double-quantized absmax (8-bit, blocks of 256, offset) */
    EC_PREC_FP8,        /* FP8 E4M3 weight-only with a per-output-row fp32 scale */
    EC_PREC_COUNT
} ec_precision;

/* "f32", "fp16", "bf16", "int8", "int8-mixed", "nf4", "nf4-dq", "fp8". */
const char *ec_precision_name(ec_precision p);
/* Parses a name above; -1 with ec_last_error() set when unknown. */
int ec_precision_parse(const char *name, ec_precision *out);
/* Precision from a source's spelling: ec_precision_parse names plus "FP16", "INT8_pure",
 * "int8_default", "NF4 DQ", "INT8 Default"... (bitsandbytes' default int8 is int8-mixed; "pure"
 * or threshold 0 is int8). Returns -1 if unknown. */
int ec_precision_from_text(const char *text, ec_precision *out);

#define EC_NF4_BLOCK 64        /* weights per NF4 absmax block (along a row) */
#define EC_NF4_DQ_BLOCK 256    /* absmax values per second-level block in nf4-dq */
#define EC_INT8_THRESHOLD 6.0f /* LLM.int8() default outlier threshold */

/* ---- scalar conversions (exact, round to nearest even, used by every format) ---- */
uint16_t ec_f32_to_f16(float x);
float ec_f16_to_f32(uint16_t h);
uint16_t ec_f32_to_bf16(float x);
float ec_bf16_to_f32(uint16_t h);
uint8_t ec_f32_to_e4m3(float x); /* saturates to ±448; NaN only from NaN */
float ec_e4m3_to_f32(uint8_t c);
extern const float ec_nf4_code[16]; /* the 16 NormalFloat-4 values, index = code */
uint8_t ec_nf4_encode(float x_normalized); /* nearest code, bitsandbytes' decision tree */
/* [256] bitsandbytes create_dynamic_map(signed=True) (the nf4-dq absmax code), ascending;
 * index = 8-bit code. Built once, read-only, shared by all threads. */
const float *ec_dynamic_map(void);

/* A quantized weight matrix [rows][cols] in one format. Field shapes per format:
 *   f32:        data = float   [rows][cols]
 *   fp16/bf16:  data = uint16  [rows][cols]
 *   int8(+mixed): data = int8  [rows][cols];  scales = float [rows] (row absmax)
 *   nf4:        data = uint8   [rows][row_bytes] with row_bytes = ceil(cols/2) (two codes per byte,
 *               element 2j in the high nibble); scales = float [rows][nblocks], nblocks =
 *               ceil(cols/64) (block absmax)
 *   nf4-dq:     data as nf4; scales = NULL; qscales = uint8 [rows*nblocks] (8-bit code of
 *               absmax - offset, dynamic map); qscale_absmax = float [ceil(rows*nblocks/256)];
 *               qscale_offset = mean of the absmax values
 *   fp8:        data = uint8 (E4M3 codes) [rows][cols]; scales = float [rows] (row absmax / 448)
 */
typedef struct {
    ec_precision prec;
    int rows, cols;
    void *data;
    float *scales;
    uint8_t *qscales;
    float *qscale_absmax;
    float qscale_offset;
    float threshold; /* int8-mixed outlier threshold (|x| >= threshold); 0 = no outlier path */
} ec_qmatrix;

/* Quantizes w [rows][cols] (float32) into out. Returns 0, or -1 (ec_last_error) on bad input. */
int ec_qmatrix_quantize(ec_qmatrix *out, ec_precision prec, const float *w, int rows, int cols);
void ec_qmatrix_free(ec_qmatrix *m);
/* Bytes the matrix occupies in its format (codes + scales), as read once per decode step. */
size_t ec_qmatrix_bytes(const ec_qmatrix *m);
/* Bytes a [rows][cols] weight takes in a precision, without building it. */
size_t ec_precision_weight_bytes(ec_precision prec, int rows, int cols);
/* Reconstructs row r as float32 (what the format represents). */
void ec_qmatrix_dequantize_row(const ec_qmatrix *m, int r, float *out /* [cols] */);

/* Per-call activation state for the int8 formats (per-token scales, int8 codes, outlier columns),
 * computed once per matmul input and shared by the threads that split the output rows. */
typedef struct {
    int batch, cols;
    int8_t *q;            /* [batch][cols] int8 activations (outlier columns zeroed) */
    float *scale;         /* [batch] per-token absmax / 127 */
    int *outlier_cols;    /* [n_outliers] ascending column indices with any |x| >= threshold */
    int n_outliers;
} ec_qact;
/* Only for int8 / int8-mixed matrices (-1 otherwise). Outliers are found with m->threshold (> 0);
 * outlier columns are left out of every token's absmax. Returns 0, or -1 (ec_last_error). */
int ec_qact_prepare(ec_qact *a, const ec_qmatrix *m, const float *x /* [batch][cols] */, int batch);
void ec_qact_free(ec_qact *a);

/* y[b][r] for r in [r0, r1) with the format's numerics. For int8 formats `a` must come from
 * ec_qact_prepare on the same x; for other formats it may be NULL. Thread-safe on disjoint rows. */
void ec_qmatrix_matmul_rows(const ec_qmatrix *m, const float *x /* [batch][cols] */,
                            const ec_qact *a, int batch, float *y /* [batch][rows] */, int r0,
                            int r1);

/* ---- the format table: everything a layer above needs to know about a precision ----
 * One row per ec_precision, in enum order (like ggml's type_traits). Parsers, help texts, byte
 * counts, the CPU reference's dispatch and the backends' supported lists all read it, so a new
 * format is one row here plus its CPU reference (and, for the CUDA backend, one entry in its
 * own table keyed by ec_precision, which must agree with `backends`). */

/* Backends that run a format (ec_qformat.backends). */
#define EC_QFORMAT_CPU 1u  /* the CPU reference backend */
#define EC_QFORMAT_CUDA 2u /* the CUDA backend */

/* The activations the CPU reference multiplies a format's weights with. */
typedef enum {
    EC_ACT_F32 = 0, /* float32 as they are */
    EC_ACT_F16,     /* rounded to fp16 once per call ("16-bit in, fp32 accumulate") */
    EC_ACT_BF16,    /* rounded to bf16 once per call */
    EC_ACT_INT8,    /* per-token absmax int8 codes (ec_qact_prepare), int32 accumulation */
} ec_act_kind;

typedef struct {
    const char *name;        /* what --precision, sweep files and the database spell */
    const char *description; /* one line for help texts and docs */
    int code_bits;           /* bits of one weight's code: 32, 16, 8 or 4 */
    int scale_block;         /* weights per scale along a row; 0 = one scale per row */
    int scale_bytes;         /* bytes of one scale (4: fp32, 1: nf4-dq's 8-bit code); 0 = none */
    int double_quant;        /* the 8-bit scales carry an fp32 scale per EC_NF4_DQ_BLOCK of them
                                and one fp32 offset per matrix */
    int outliers;            /* LLM.int8(): outlier activation columns take a 16-bit path, so
                                the --int8-threshold applies */
    ec_act_kind act;         /* activations of the CPU reference's matmul */
    unsigned backends;       /* EC_QFORMAT_CPU | EC_QFORMAT_CUDA: where it runs */
    /* CPU reference entry points (the numerics every GPU kernel is tested against). quantize
     * fills the arrays of an ec_qmatrix whose prec, rows and cols are set (input validated);
     * decode returns n (<= 256) weights of row r from column c0 (a multiple of the block),
     * decoded into buf unless stored as float32 already; NULL for int8, whose matmul multiplies
     * the codes themselves. */
    int (*quantize)(ec_qmatrix *m, const float *w /* [rows][cols] */);
    const float *(*decode)(const ec_qmatrix *m, int r, int c0, int n, float *buf /* [n] */);
    void (*dequantize_row)(const ec_qmatrix *m, int r, float *out /* [cols] */);
    void (*matmul_rows)(const ec_qmatrix *m, const float *x /* [batch][cols] */, const ec_qact *a,
                        int batch, float *y /* [batch][rows] */, int r0, int r1);
} ec_qformat;

/* The row of p; NULL when p is not a precision. */
const ec_qformat *ec_qformat_of(ec_precision p);
/* Effective bytes per weight with its scales, for rows long enough that per-row scales vanish
 * (nf4 0.5625, nf4-dq 0.51587, int8 1); NAN when p is not a precision. */
double ec_qformat_bytes_per_weight(ec_precision p);
/* Bytes of the codes alone per weight (32-bit 4 ... nf4 0.5); NAN when p is not a precision. */
double ec_qformat_code_bytes(ec_precision p);
/* Writes the names of the formats that run on any of `backends` (EC_FORMAT_*), joined by sep,
 * into buf [size] (truncated, always terminated); returns buf, for help texts and messages. */
const char *ec_qformat_names(unsigned backends, const char *sep, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
