/* formats.c — the format table (one row per precision: name, storage, activations, backends,
 * CPU reference entry points), the names parsed from it, the seeds' spellings of them, and the
 * bytes each format stores per weight matrix. */
#include "quant/quant_internal.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define ALL (EC_QFORMAT_CPU | EC_QFORMAT_CUDA)
/* The CPU reference of a format with a decode: qmatrix.c's chunked decode-then-dot. */
#define DECODED .dequantize_row = ec_decoded_dequantize_row, .matmul_rows = ec_decoded_matmul_rows
#define INT8_REF                                                                                   \
    .act = EC_ACT_INT8, .quantize = ec_int8_quantize, .dequantize_row = ec_int8_dequantize_row,    \
    .matmul_rows = ec_int8_matmul_rows

/* Fields left out are 0: no scales, no double quantization, no outlier path, fp32 activations. */
static const ec_qformat formats[] = {
    [EC_PREC_F32] = {.name = "f32",
                     .description = "float32 reference, no quantization",
                     .code_bits = 32,
                     .backends = EC_QFORMAT_CPU,
                     .quantize = ec_f32_quantize,
                     .decode = ec_f32_decode,
                     DECODED},
    [EC_PREC_FP16] = {.name = "fp16",
                      .description = "IEEE half, fp32 accumulation",
                      .code_bits = 16,
                      .act = EC_ACT_F16,
                      .backends = ALL,
                      .quantize = ec_fp16_quantize,
                      .decode = ec_fp16_decode,
                      DECODED},
    [EC_PREC_BF16] = {.name = "bf16",
                      .description = "bfloat16, fp32 accumulation",
                      .code_bits = 16,
                      .act = EC_ACT_BF16,
                      .backends = ALL,
                      .quantize = ec_bf16_quantize,
                      .decode = ec_bf16_decode,
                      DECODED},
    [EC_PREC_INT8] = {.name = "int8",
                      .description = "int8 row-absmax weights x int8 token-absmax activations",
                      .code_bits = 8,
                      .scale_bytes = 4,
                      .backends = ALL,
                      INT8_REF},
    [EC_PREC_INT8_MIXED] = {.name = "int8-mixed",
                            .description = "LLM.int8(): int8 plus 16-bit outlier columns",
                            .code_bits = 8,
                            .scale_bytes = 4,
                            .outliers = 1,
                            .backends = ALL,
                            INT8_REF},
    [EC_PREC_NF4] = {.name = "nf4",
                     .description = "4-bit NormalFloat, fp32 absmax per 64 weights",
                     .code_bits = 4,
                     .scale_block = EC_NF4_BLOCK,
                     .scale_bytes = 4,
                     .backends = ALL,
                     .quantize = ec_nf4_quantize,
                     .decode = ec_nf4_decode,
                     DECODED},
    [EC_PREC_NF4_DQ] = {.name = "nf4-dq",
                        .description = "nf4 with 8-bit double-quantized absmax",
                        .code_bits = 4,
                        .scale_block = EC_NF4_BLOCK,
                        .scale_bytes = 1,
                        .double_quant = 1,
                        .backends = ALL,
                        .quantize = ec_nf4_dq_quantize,
                        .decode = ec_nf4_decode,
                        DECODED},
    [EC_PREC_FP8] = {.name = "fp8",
                     .description = "FP8 E4M3 weight-only, fp32 scale per row",
                     .code_bits = 8,
                     .scale_bytes = 4,
                     .backends = ALL,
                     .quantize = ec_fp8_quantize,
                     .decode = ec_fp8_decode,
                     DECODED},
};
_Static_assert(sizeof formats / sizeof *formats == EC_PREC_COUNT,
               "every ec_precision needs its row in the format table");

const ec_qformat *ec_qformat_of(ec_precision p)
{
    return (unsigned)p < EC_PREC_COUNT ? &formats[p] : NULL;
}

const char *ec_precision_name(ec_precision p)
{
    return (unsigned)p < EC_PREC_COUNT ? formats[p].name : "unknown";
}

const char *ec_qformat_names(unsigned backends, const char *sep, char *buf, size_t size)
{
    size_t n = 0;
    if (size == 0) return buf;
    buf[0] = '\0';
    for (int p = 0; p < EC_PREC_COUNT; p++) {
        if (!(formats[p].backends & backends)) continue;
        int w = snprintf(buf + n, size - n, "%s%s", n ? sep : "", formats[p].name);
        if (w < 0 || (size_t)w >= size - n) { /* whole names only */
            buf[n] = '\0';
            break;
        }
        n += (size_t)w;
    }
    return buf;
}

int ec_precision_parse(const char *name, ec_precision *out)
{
    for (int p = 0; p < EC_PREC_COUNT; p++)
        if (name && strcmp(name, formats[p].name) == 0) {
            *out = (ec_precision)p;
            return 0;
        }
    char names[128];
    return ec_set_error(
        "unknown precision '%s' (expected %s)", name ? name : "(null)",
        ec_qformat_names(EC_QFORMAT_CPU | EC_QFORMAT_CUDA, ", ", names, sizeof names));
}

double ec_qformat_code_bytes(ec_precision p)
{
    return (unsigned)p < EC_PREC_COUNT ? formats[p].code_bits / 8.0 : NAN;
}

double ec_qformat_bytes_per_weight(ec_precision p)
{
    if ((unsigned)p >= EC_PREC_COUNT) return NAN;
    const ec_qformat *f = &formats[p];
    double bytes = f->code_bits / 8.0;
    if (f->scale_block > 0) bytes += (double)f->scale_bytes / f->scale_block;
    if (f->double_quant) bytes += 4.0 / ((double)f->scale_block * EC_NF4_DQ_BLOCK);
    return bytes;
}

size_t ec_precision_weight_bytes(ec_precision prec, int rows, int cols)
{
    if (rows < 1 || cols < 1 || (unsigned)prec >= EC_PREC_COUNT) return 0;
    const ec_qformat *f = &formats[prec];
    size_t r = (size_t)rows, c = (size_t)cols;
    size_t bytes = r * ((c * (size_t)f->code_bits + 7) / 8); /* rows of whole bytes */
    size_t nscales = f->scale_block > 0
                         ? r * ((c + (size_t)f->scale_block - 1) / (size_t)f->scale_block)
                         : (f->scale_bytes ? r : 0);
    bytes += nscales * (size_t)f->scale_bytes;
    if (f->double_quant) /* an fp32 per EC_NF4_DQ_BLOCK 8-bit scales, and the offset */
        bytes += (nscales + EC_NF4_DQ_BLOCK - 1) / EC_NF4_DQ_BLOCK * 4 + 4;
    return bytes;
}

int ec_precision_from_text(const char *text, ec_precision *out)
{
    char t[32];
    size_t n = 0;
    for (const char *p = text; p && *p && n + 1 < sizeof t; p++)
        t[n++] = (*p == ' ' || *p == '_') ? '-' : (char)tolower((unsigned char)*p);
    t[n] = '\0';
    static const struct {
        const char *text;
        ec_precision p;
    } alias[] = {
        {"float16", EC_PREC_FP16},
        {"half", EC_PREC_FP16},
        {"bfloat16", EC_PREC_BF16},
        {"float32", EC_PREC_F32},
        {"fp32", EC_PREC_F32},
        /* bitsandbytes' load_in_8bit default is LLM.int8() (threshold 6): the seeds' "INT8" */
        {"int8-default", EC_PREC_INT8_MIXED},
        {"int8", EC_PREC_INT8_MIXED},
        {"int8-pure", EC_PREC_INT8},
        {"pure-int8", EC_PREC_INT8},
        {"nf4dq", EC_PREC_NF4_DQ},
        {"fp8-e4m3", EC_PREC_FP8},
    };
    for (size_t i = 0; i < sizeof alias / sizeof *alias; i++)
        if (!strcmp(t, alias[i].text)) {
            *out = alias[i].p;
            return 0;
        }
    if (ec_precision_parse(t, out) == 0) return 0;
    return ec_set_error("unknown precision '%s'", text ? text : "(null)");
}
