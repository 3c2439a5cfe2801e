/* precision.c — precision names (ours, and the spellings of the seeds' sources) and the bytes
 * each format stores per weight matrix. */
#include "quant/quant_internal.h"

#include <ctype.h>
#include <string.h>

static const char *const names[EC_PREC_COUNT] = {
    "f32", "fp16", "bf16", "int8", "int8-mixed", "nf4", "nf4-dq", "fp8",
};

const char *ec_precision_name(ec_precision p)
{
    return (unsigned)p < EC_PREC_COUNT ? names[p] : "unknown";
}

int ec_precision_parse(const char *name, ec_precision *out)
{
    for (int p = 0; p < EC_PREC_COUNT; p++)
        if (name && strcmp(name, names[p]) == 0) {
            *out = (ec_precision)p;
            return 0;
        }
    return ec_set_error("unknown precision '%s' (expected f32, fp16, bf16, int8, int8-mixed, "
                        "nf4, nf4-dq or fp8)", name ? name : "(null)");
}

size_t ec_precision_weight_bytes(ec_precision prec, int rows, int cols)
{
    if (rows < 1 || cols < 1)
        return 0;
    size_t r = (size_t)rows, c = (size_t)cols;
    size_t nblocks = r * ((c + EC_NF4_BLOCK - 1) / EC_NF4_BLOCK), nibbles = r * ((c + 1) / 2);
    switch (prec) {
    case EC_PREC_F32:
        return r * c * 4;
    case EC_PREC_FP16:
    case EC_PREC_BF16:
        return r * c * 2;
    case EC_PREC_INT8:
    case EC_PREC_INT8_MIXED:
    case EC_PREC_FP8:
        return r * c + r * 4; /* codes + one fp32 per row */
    case EC_PREC_NF4:
        return nibbles + nblocks * 4;
    case EC_PREC_NF4_DQ: /* codes + 8-bit absmax codes + fp32 per 256 of them + the offset */
        return nibbles + nblocks + (nblocks + EC_NF4_DQ_BLOCK - 1) / EC_NF4_DQ_BLOCK * 4 + 4;
    default:
        return 0;
    }
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
        {"float16", EC_PREC_FP16},       {"half", EC_PREC_FP16},
        {"bfloat16", EC_PREC_BF16},      {"float32", EC_PREC_F32},
        {"fp32", EC_PREC_F32},
        /* bitsandbytes' load_in_8bit default is LLM.int8() (threshold 6): the seeds' "INT8" */
        {"int8-default", EC_PREC_INT8_MIXED}, {"int8", EC_PREC_INT8_MIXED},
        {"int8-pure", EC_PREC_INT8},     {"pure-int8", EC_PREC_INT8},
        {"nf4dq", EC_PREC_NF4_DQ},       {"fp8-e4m3", EC_PREC_FP8},
    };
    for (size_t i = 0; i < sizeof alias / sizeof *alias; i++)
        if (!strcmp(t, alias[i].text)) {
            *out = alias[i].p;
            return 0;
        }
    if (ec_precision_parse(t, out) == 0) return 0;
    return ec_set_error("unknown precision '%s'", text ? text : "(null)");
}
