/* test_gpu_support.c — which of a build's CUDA code runs on a GPU of a given compute capability
 * and what it can do (src/engine/gpu_support.c): the default architecture list on the GPUs its
 * users have, PTX-only builds (what the GPU machine runs to stand in for older GPUs), and lists
 * that hold nothing for a GPU. No GPU needed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ecocompute/engine.h"

#include <string.h>

/* CMakeLists.txt's default CMAKE_CUDA_ARCHITECTURES, as CMake passes it (semicolons). */
static const char *const default_archs =
    "75-real;80-real;86-real;89-real;90a-real;120-real;120-virtual";

static ec_gpu_code code_for(const char *archs, int major, int minor)
{
    ec_gpu_code c;
    int rc = ec_gpu_code_for(archs, major, minor, &c);
    assert_int_equal(rc, c.code_arch ? 0 : -1);
    return c;
}

/* T4, A100, RTX 3090, RTX 4090, H200 and RTX 5090 each run their own machine code. */
static void default_build_has_machine_code_for_each_users_gpu(void **state)
{
    (void)state;
    const int cc[][2] = {{7, 5}, {8, 0}, {8, 6}, {8, 9}, {9, 0}, {12, 0}};
    for (size_t i = 0; i < sizeof cc / sizeof *cc; i++) {
        ec_gpu_code c = code_for(default_archs, cc[i][0], cc[i][1]);
        assert_int_equal(c.code_arch, 10 * cc[i][0] + cc[i][1]);
        assert_false(c.jit);
    }
    ec_gpu_code h = code_for(default_archs, 9, 0);
    assert_true(h.arch_specific);
    assert_true(h.features & EC_GPU_WGMMA);
    /* A100's code on an A30-like 8.7 part; sm_120's PTX on a GPU newer than the build. */
    assert_int_equal(code_for(default_archs, 8, 7).code_arch, 86);
    ec_gpu_code future = code_for(default_archs, 13, 0);
    assert_int_equal(future.code_arch, 120);
    assert_true(future.jit);
}

/* What each generation's code can do: Turing has no bf16, Ampere no hardware fp8 conversion,
 * Ada no clusters, and wgmma exists in sm_90a code alone (not on Blackwell). */
static void features_follow_the_code_architecture(void **state)
{
    (void)state;
    ec_gpu_code t4 = code_for(default_archs, 7, 5);
    assert_int_equal(t4.features, 0);
    assert_non_null(ec_gpu_precision_missing(EC_PREC_BF16, t4.features));
    for (int p = EC_PREC_FP16; p < EC_PREC_COUNT; p++)
        if (p != EC_PREC_BF16) assert_null(ec_gpu_precision_missing((ec_precision)p, t4.features));
    unsigned a100 = code_for(default_archs, 8, 0).features;
    assert_int_equal(a100, EC_GPU_BF16 | EC_GPU_CP_ASYNC);
    assert_null(ec_gpu_precision_missing(EC_PREC_BF16, a100));
    unsigned ada = code_for(default_archs, 8, 9).features;
    assert_true(ada & EC_GPU_FP8_CVT);
    assert_false(ada & EC_GPU_CLUSTERS);
    unsigned blackwell = code_for(default_archs, 12, 0).features;
    assert_true(blackwell & EC_GPU_CLUSTERS);
    assert_true(blackwell & EC_GPU_PDL);
    assert_false(blackwell & EC_GPU_WGMMA);
    assert_false(ec_gpu_features(90, 0) & EC_GPU_WGMMA); /* sm_90 without the "a" */
    assert_string_equal(ec_gpu_feature_name(EC_GPU_WGMMA), "wgmma");
}

/* A compute_80-only build runs compute_80 code on an H200 (the driver compiles the PTX): what an
 * A100 runs, so no Hopper path may be chosen. */
static void ptx_only_builds_run_their_own_architecture_on_newer_gpus(void **state)
{
    (void)state;
    ec_gpu_code c = code_for("80-virtual", 9, 0);
    assert_int_equal(c.code_arch, 80);
    assert_true(c.jit);
    assert_false(c.features & (EC_GPU_CLUSTERS | EC_GPU_PDL | EC_GPU_WGMMA));
    ec_gpu_code t = code_for("75-virtual", 9, 0);
    assert_int_equal(t.code_arch, 75);
    assert_non_null(ec_gpu_precision_missing(EC_PREC_BF16, t.features));
    assert_int_equal(code_for("89-virtual", 9, 0).code_arch, 89);
    /* The newest PTX that runs wins; machine code that runs beats any PTX. */
    assert_int_equal(code_for("75-virtual 89-virtual 120-virtual", 9, 0).code_arch, 89);
    ec_gpu_code sass = code_for("80-real 86-virtual", 8, 6);
    assert_int_equal(sass.code_arch, 80);
    assert_false(sass.jit);
}

/* No code for the GPU: machine code of another major version, arch-specific code of another
 * GPU, PTX newer than the GPU, or a list with no architecture at all. */
static void lists_without_code_for_the_gpu(void **state)
{
    (void)state;
    assert_int_equal(code_for("90a-real", 8, 0).code_arch, 0);
    assert_int_equal(code_for("90a-real 90a-virtual", 10, 0).code_arch, 0);
    assert_int_equal(code_for("80-real", 9, 0).code_arch, 0);
    assert_int_equal(code_for("89-real", 8, 6).code_arch, 0);
    assert_int_equal(code_for("120-virtual", 9, 0).code_arch, 0);
    assert_int_equal(code_for("", 9, 0).code_arch, 0);
    assert_int_equal(code_for("native", 9, 0).code_arch, 0);
    /* Both real and virtual when neither is said. */
    assert_int_equal(code_for("86", 9, 0).code_arch, 86);
    assert_int_equal(code_for("86", 8, 9).code_arch, 86);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(default_build_has_machine_code_for_each_users_gpu),
        cmocka_unit_test(features_follow_the_code_architecture),
        cmocka_unit_test(ptx_only_builds_run_their_own_architecture_on_newer_gpus),
        cmocka_unit_test(lists_without_code_for_the_gpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
