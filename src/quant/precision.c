/* precision.c — precision names and the bytes each format stores per weight matrix. */
#include "quant/quant_internal.h"

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
