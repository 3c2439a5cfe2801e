/* roofline.c — the memory-bandwidth bound on decode throughput, and the datasheet bandwidth of
 * the GPUs that appear in our own and in foreign data.
 *
 * At small batch a decode step reads every weight once plus each sequence's KV cache, and does
 * little arithmetic per byte, so tokens/s ≤ batch · bandwidth / bytes per step. With the
 * datasheet peak as bandwidth this is an upper bound no real measurement can beat (an H100
 * streams about 3.0 of its 3.35 TB/s), which is what `validate` uses it for. */
#include "ecocompute/analysis.h"

#include <ctype.h>
#include <math.h>
#include <string.h>

#include "ecocompute/common.h"

/* Peak memory bandwidth, bytes/s, from NVIDIA's datasheets / product pages:
 *  H100 SXM5 80GB 3.35 TB/s, H100 PCIe 80GB 2.0 TB/s — "NVIDIA H100 Tensor Core GPU" datasheet;
 *  H200 SXM 141GB 4.8 TB/s — "NVIDIA H200 Tensor Core GPU" datasheet;
 *  A100 80GB SXM 2.039 TB/s, A100 80GB PCIe 1.935 TB/s, A100 40GB 1.555 TB/s — "NVIDIA A100
 *    Tensor Core GPU" datasheet (2021);
 *  A800 80GB 2.039 TB/s (SXM) / 1.935 TB/s (PCIe), A800 40GB PCIe 1.555 TB/s — NVIDIA A800
 *    product brief (the A100's memory system with a cut NVLink);
 *  RTX 4090 and RTX 4090 D 1,008 GB/s (384-bit GDDR6X at 21 Gbps) — NVIDIA Ada GPU architecture
 *    whitepaper v2.1, table 2; the 4090 D keeps the memory system;
 *  RTX 5090 1,792 GB/s and RTX PRO 6000 Blackwell 1,792 GB/s (512-bit GDDR7 at 28 Gbps) —
 *    NVIDIA RTX Blackwell GPU architecture whitepaper v1.0 / RTX PRO 6000 datasheet;
 *  RTX 3090 936 GB/s — NVIDIA Ampere GA102 whitepaper v2.0, table 9;
 *  Tesla T4 320 GB/s — NVIDIA T4 datasheet; L4 300 GB/s — NVIDIA L4 datasheet;
 *  L40S 864 GB/s — NVIDIA L40S datasheet; V100 SXM2/PCIe 900 GB/s — NVIDIA V100 datasheet.
 * Order matters: the first pattern whose words all appear in the name wins, so variants come
 * before the plain name. */
static const struct {
    const char *words[3]; /* lowercase whole words that must all appear */
    double bytes_per_s;
} gpu_bw[] = {
    {{"h100", "pcie"}, 2.0e12},
    {{"h100"}, 3.35e12},
    {{"h200"}, 4.8e12},
    {{"a100", "40gb"}, 1.555e12},
    {{"a100", "pcie"}, 1.935e12},
    {{"a100"}, 2.039e12},
    {{"a800", "40gb"}, 1.555e12},
    {{"a800", "pcie"}, 1.935e12},
    {{"a800"}, 2.039e12},
    {{"4090d"}, 1.008e12},
    {{"4090", "d"}, 1.008e12},
    {{"4090"}, 1.008e12},
    {{"5090"}, 1.792e12},
    {{"pro", "6000", "blackwell"}, 1.792e12},
    {{"3090"}, 0.936e12},
    {{"t4"}, 0.32e12},
    {{"l4"}, 0.30e12},
    {{"l40s"}, 0.864e12},
    {{"v100"}, 0.90e12},
};

/* 1 if word occurs in text as a whole word (text lowercased, words split at non-alphanumerics,
 * so "A800-SXM4-80GB" has the words a800, sxm4, 80gb). */
static int has_word(const char *text, const char *word)
{
    size_t wl = strlen(word);
    for (const char *p = text; *p;) {
        while (*p && !isalnum((unsigned char)*p)) p++;
        const char *s = p;
        while (*p && isalnum((unsigned char)*p)) p++;
        if ((size_t)(p - s) == wl) {
            size_t i = 0;
            while (i < wl && tolower((unsigned char)s[i]) == word[i]) i++;
            if (i == wl) return 1;
        }
    }
    return 0;
}

double ec_gpu_peak_bandwidth(const char *gpu_name)
{
    if (!gpu_name || !*gpu_name) return NAN;
    for (size_t i = 0; i < sizeof gpu_bw / sizeof *gpu_bw; i++) {
        int all = 1;
        for (int w = 0; w < 3 && gpu_bw[i].words[w]; w++)
            all &= has_word(gpu_name, gpu_bw[i].words[w]);
        if (all) return gpu_bw[i].bytes_per_s;
    }
    return NAN;
}

int ec_roofline_decode(const ec_model_config *model, double params_b, ec_precision prec,
                       int batch, int context_len, double bandwidth_Bps, ec_roofline *out)
{
    out->weight_bytes = out->kv_bytes = out->max_tok_s = NAN;
    out->from_catalog = model != NULL;
    if ((unsigned)prec >= EC_PREC_COUNT) return ec_set_error("roofline: unknown precision");
    if (batch < 1) batch = 1;
    if (model) {
        out->weight_bytes = (double)ec_model_weight_bytes(model, prec);
        /* K and V, fp16, every layer and KV head, for each sequence's whole context. */
        out->kv_bytes = context_len > 0 ? 2.0 * model->n_layers * model->n_kv_heads *
                                              model->head_dim * 2.0 * context_len * batch
                                        : 0.0;
    } else if (params_b > 0) {
        /* Only a parameter count: the codes without their scales, so the bound errs on the
         * generous side. */
        out->weight_bytes = params_b * 1e9 * ec_qformat_code_bytes(prec);
        out->kv_bytes = 0.0;
    } else {
        return ec_set_error("roofline: neither a known model nor a parameter count");
    }
    out->max_tok_s = batch * bandwidth_Bps / (out->weight_bytes + out->kv_bytes);
    return 0;
}
