/* gpu_support.c — which of this build's CUDA code runs on a GPU of a given compute capability,
 * the features that code has, and which precisions the CUDA backend runs with them: pure
 * functions of the compute capability and the architecture list compiled in (CMake passes
 * CMAKE_CUDA_ARCHITECTURES as EC_CUDA_ARCHITECTURES), so `ecocompute gpus` answers without a
 * CUDA call and the rules are tested on any machine. The CUDA backend applies ec_gpu_features to
 * the architecture it reads from the loaded code (src/engine/cuda/code_arch.cu). */
#include "ecocompute/engine.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#ifndef EC_CUDA_ARCHITECTURES
#define EC_CUDA_ARCHITECTURES ""
#endif

const char *ec_cuda_build_architectures(void)
{
    return EC_CUDA_ARCHITECTURES;
}

unsigned ec_gpu_features(int code_arch, int arch_specific)
{
    unsigned f = 0;
    if (code_arch >= 80) f |= EC_GPU_BF16 | EC_GPU_CP_ASYNC;
    if (code_arch >= 89) f |= EC_GPU_FP8_CVT;
    if (code_arch >= 90) f |= EC_GPU_CLUSTERS | EC_GPU_PDL | EC_GPU_L2_PREFETCH;
    if (code_arch == 90 && arch_specific) f |= EC_GPU_WGMMA;
    return f;
}

const char *ec_gpu_feature_name(unsigned bit)
{
    static const char *const names[EC_GPU_FEATURE_COUNT] = {
        "bf16", "cp.async", "fp8-cvt", "clusters", "pdl", "l2-prefetch", "wgmma"};
    for (int i = 0; i < EC_GPU_FEATURE_COUNT; i++)
        if (bit == 1u << i) return names[i];
    return "?";
}

const char *ec_gpu_precision_missing(ec_precision p, unsigned features)
{
    if (p == EC_PREC_BF16 && !(features & EC_GPU_BF16))
        return "bf16 arithmetic and bf16 tensor cores (compute capability 8.0+)";
    return NULL;
}

/* One entry of an architecture list: "90a-real" is arch 90, suffix 'a', machine code only. */
typedef struct {
    int arch;
    char suffix; /* 'a' (arch-specific), 'f' (family-specific) or 0 */
    int real, virt;
} arch_entry;

/* Parses the entry at *s (advancing past it); 0, or -1 for an entry that is no architecture
 * ("native", "all"), which is skipped. */
static int next_entry(const char **s, arch_entry *e)
{
    const char *p = *s;
    size_t n = strcspn(p, " ;,");
    *s = p + n;
    memset(e, 0, sizeof *e);
    if (n == 0 || !isdigit((unsigned char)*p)) return -1;
    char *end;
    e->arch = (int)strtol(p, &end, 10);
    if (*end == 'a' || *end == 'f') e->suffix = *end++;
    size_t rest = n - (size_t)(end - p);
    if (rest == 0) {
        e->real = e->virt = 1;
    } else if (rest == 5 && !strncmp(end, "-real", 5)) {
        e->real = 1;
    } else if (rest == 8 && !strncmp(end, "-virtual", 8)) {
        e->virt = 1;
    } else {
        return -1;
    }
    return 0;
}

int ec_gpu_code_for(const char *archs, int major, int minor, ec_gpu_code *out)
{
    memset(out, 0, sizeof *out);
    int cc = 10 * major + minor;
    arch_entry best_sass = {0}, best_ptx = {0}, e;
    for (const char *s = archs; *s;) {
        if (strchr(" ;,", *s)) {
            s++;
            continue;
        }
        if (next_entry(&s, &e) != 0) continue;
        /* Arch-specific code runs on its own compute capability alone; family code and plain
         * machine code on the same major version from its minor up; plain PTX on anything newer. */
        int same_family = e.arch / 10 == major && e.arch <= cc;
        int sass_runs = e.suffix == 'a' ? e.arch == cc : same_family;
        int ptx_runs = e.suffix == 'a' ? e.arch == cc : e.suffix == 'f' ? same_family : e.arch <= cc;
        if (e.real && sass_runs &&
            (e.arch > best_sass.arch || (e.arch == best_sass.arch && e.suffix == 'a')))
            best_sass = e;
        if (e.virt && ptx_runs &&
            (e.arch > best_ptx.arch || (e.arch == best_ptx.arch && e.suffix == 'a')))
            best_ptx = e;
    }
    /* The driver prefers machine code that runs to compiling PTX. */
    const arch_entry *pick = best_sass.arch ? &best_sass : best_ptx.arch ? &best_ptx : NULL;
    if (!pick) return -1;
    out->code_arch = pick->arch;
    out->arch_specific = pick->suffix == 'a';
    out->jit = pick == &best_ptx;
    out->features = ec_gpu_features(out->code_arch, out->arch_specific);
    return 0;
}
