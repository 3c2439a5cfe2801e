/* test_run_key.c — which records are one configuration: ec_run_key_of and ec_run_key_equal
 * under each named variant, field by field, and the source-folder and kernel-family rules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ecocompute/store.h"

#include <stdio.h>
#include <string.h>

static ec_run_record base(void)
{
    ec_run_record r;
    ec_run_record_init(&r);
    snprintf(r.source, sizeof r.source, "seeds/h100/run-a.csv");
    snprintf(r.gpu_name, sizeof r.gpu_name, "NVIDIA H100");
    snprintf(r.gpu_uuid, sizeof r.gpu_uuid, "GPU-1");
    snprintf(r.model, sizeof r.model, "Llama-2-7B");
    snprintf(r.precision, sizeof r.precision, "nf4");
    snprintf(r.kernels, sizeof r.kernels, "fused");
    snprintf(r.device, sizeof r.device, "cuda:0");
    r.batch = 8;
    r.prompt_len = 64;
    r.gen_len = 256;
    r.run_index = 0;
    return r;
}

static int equal(const ec_run_record *a, const ec_run_record *b, unsigned variant)
{
    ec_run_key ka = ec_run_key_of(a), kb = ec_run_key_of(b);
    int same = ec_run_key_equal(&ka, &kb, variant);
    assert_int_equal(ec_records_match(a, b, variant), same);
    return same;
}

/* One change each, and which variants still call the two records one configuration. */
static void test_each_field_under_each_variant(void **state)
{
    (void)state;
    static const unsigned variants[] = {
        EC_KEY_CONFIG,      EC_KEY_BENCH,        EC_KEY_BENCH_BASELINE, EC_KEY_SUMMARY_OF,
        EC_KEY_BASELINE,    EC_KEY_BATCH_SERIES, EC_KEY_EXPERIMENT,     EC_KEY_ACROSS_DATASETS,
        EC_KEY_BATCH_CHART, EC_KEY_MODEL_SERIES};
    enum { NV = sizeof variants / sizeof *variants };
    static const struct {
        const char *what;
        int same[NV]; /* in the order of variants */
    } change[] = {
        {"source file in the same folder", {0, 0, 0, 1, 1, 1, 1, 1, 1, 1}},
        {"source folder", {0, 0, 0, 0, 1, 0, 1, 1, 1, 1}},
        {"gpu name", {0, 1, 1, 0, 0, 0, 0, 0, 0, 0}},
        {"gpu uuid", {1, 0, 0, 1, 1, 1, 1, 1, 1, 1}},
        {"model", {0, 0, 0, 0, 0, 0, 0, 0, 0, 1}},
        {"precision", {0, 0, 1, 0, 1, 0, 1, 0, 1, 1}},
        {"kernels named otherwise", {0, 0, 0, 0, 0, 0, 1, 0, 0, 0}},
        {"kernels unnamed", {0, 0, 0, 1, 1, 0, 1, 0, 0, 0}},
        {"device", {0, 0, 0, 1, 1, 1, 1, 1, 1, 1}},
        {"batch", {0, 0, 0, 0, 0, 1, 0, 0, 1, 0}},
        {"prompt length", {0, 0, 0, 0, 0, 0, 0, 0, 0, 1}},
        {"generation length", {0, 0, 0, 0, 0, 0, 0, 0, 0, 1}},
        {"tensor-parallel ranks", {0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
        {"summary row", {0, 1, 1, 1, 1, 0, 1, 1, 1, 1}},
    };
    ec_run_record a = base();
    for (size_t v = 0; v < NV; v++)
        assert_true(equal(&a, &a, variants[v]));
    for (size_t c = 0; c < sizeof change / sizeof *change; c++) {
        ec_run_record b = base();
        switch (c) {
        case 0:
            snprintf(b.source, sizeof b.source, "seeds/h100/run-b.csv");
            break;
        case 1:
            snprintf(b.source, sizeof b.source, "seeds/a100/run-a.csv");
            break;
        case 2:
            snprintf(b.gpu_name, sizeof b.gpu_name, "NVIDIA H200");
            break;
        case 3:
            snprintf(b.gpu_uuid, sizeof b.gpu_uuid, "GPU-2");
            break;
        case 4:
            snprintf(b.model, sizeof b.model, "Llama-2-13B");
            break;
        case 5:
            snprintf(b.precision, sizeof b.precision, "fp16");
            break;
        case 6:
            snprintf(b.kernels, sizeof b.kernels, "reference");
            break;
        case 7:
            b.kernels[0] = '\0';
            break;
        case 8:
            snprintf(b.device, sizeof b.device, "cuda:1");
            break;
        case 9:
            b.batch = 16;
            break;
        case 10:
            b.prompt_len = 128;
            break;
        case 11:
            b.gen_len = 128;
            break;
        case 12:
            b.tp = 2;
            break;
        default:
            b.run_index = -1;
            break;
        }
        for (size_t v = 0; v < NV; v++)
            if (equal(&a, &b, variants[v]) != change[c].same[v])
                fail_msg("%s, variant %zu: %s, expected %s", change[c].what, v,
                         equal(&a, &b, variants[v]) ? "same" : "different",
                         change[c].same[v] ? "same" : "different");
        assert_int_equal(ec_same_config(&a, &b), change[c].same[0]);
    }
}

static void test_key_is_a_view_of_the_record(void **state)
{
    (void)state;
    ec_run_record r = base();
    ec_run_key k = ec_run_key_of(&r);
    assert_ptr_equal(k.model, r.model);
    assert_int_equal(k.summary, 0);
    r.run_index = -1;
    assert_int_equal(ec_run_key_of(&r).summary, 1);
}

static void test_folders_and_kernels(void **state)
{
    (void)state;
    assert_true(ec_same_source_folder("a/b/x.csv", "a/b/y.csv"));
    assert_false(ec_same_source_folder("a/b/x.csv", "a/c/x.csv"));
    assert_true(ec_same_source_folder("ecocompute", "other")); /* no folder on either side */
    assert_false(ec_same_source_folder("a/x.csv", "x.csv"));
    assert_true(ec_kernels_comparable("", "bitsandbytes"));
    assert_true(ec_kernels_comparable("fused", "fused"));
    assert_false(ec_kernels_comparable("fused", "reference"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_field_under_each_variant),
        cmocka_unit_test(test_key_is_a_view_of_the_record),
        cmocka_unit_test(test_folders_and_kernels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
