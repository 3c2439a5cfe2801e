/* test_seed_import.c — every seed-data file type imports with the expected number of records
 * and spot-checked values, source, licence and energy definition; files that carry no
 * measurements are refused with a clear message. The files are the seeds' own, in
 * tests/data/seed-data (their layout kept; tests/data/README.md). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ecocompute/common.h"
#include "ecocompute/store.h"
#include "store/seed_import.h"
#include "test_data.h"

static char root[1024];

typedef struct {
    const char *file;   /* relative to seed-data */
    size_t n;           /* records */
    size_t summaries;   /* of them, summary rows (run_index -1) */
    const char *licence;
    ec_energy_definition def; /* of record `spot` */
    size_t spot;
    const char *model, *precision;
    int batch;
    double j_per_1k, tok_s, watts; /* NaN: not given */
} expect;

static const expect cases[] = {
    {"ecocompute-dynamic-eval/metadata/batch_size_experiment/"
     "a800_mistral7b_pure_int8_batch_size_raw_20260215_131345.csv",
     70, 0, "MIT", EC_ENERGY_GROSS, 0, "Mistral-7B-Instruct-v0.2", "int8", 1, 6798.190924712908,
     19.061279368728936, 129.58221641791044},
    {"ecocompute-dynamic-eval/metadata/batch_size_experiment/"
     "a800_mistral7b_pure_int8_batch_size_summary_20260215_131345.csv",
     7, 7, "MIT", EC_ENERGY_GROSS, 6, "Mistral-7B-Instruct-v0.2", "int8", 64, 296.44, 1052.54,
     312.02},
    {"ecocompute-dynamic-eval/derived/dashboard_BatchSizeAnalysis_BATCH_SIZE_DATA.csv", 7, 7,
     "MIT", EC_ENERGY_GROSS, 0, "Mistral-7B-Instruct-v0.2", "int8", 1, 1768.0 / 256 * 1000, 19.0,
     252},
    {"ecocompute-dynamic-eval/derived/dashboard_constants_measured_rows.csv", 27, 27, "MIT",
     EC_ENERGY_NET, 13, "Mistral-7B-Instruct-v0.3", "int8-mixed", 1, 7401, 7.88, 75.29},
    {"ecocompute-dynamic-eval/metadata/a800_metadata.json", 9, 9, "MIT", EC_ENERGY_GROSS, 0,
     "Mistral-7B-Instruct-v0.3", "fp16", 1, 4334, 36.18, 156.81},
    {"ecocompute-dynamic-eval/metadata/pure_int8_metadata.json", 6, 6, "MIT", EC_ENERGY_NET, 2,
     "Yi-1.5-6B-Chat", "int8", 1, 4568, 15.47, 87.96},
    {"ecocompute-ai/data/rtx5090_benchmark_results.csv", 8, 8, "CC-BY-4.0", EC_ENERGY_GROSS, 7,
     "Qwen2-7B", "nf4", 1, 4877.88, 41.40, 201.88},
    {"ecocompute-ai/data/t4_benchmark_results.csv", 8, 8, "CC-BY-4.0", EC_ENERGY_UNKNOWN, 6,
     "Qwen2-7B", "fp16", 1, 21722.65, 2.87, 62.34},
    {"ecocompute-ai/data/a800_results/a800_summary.csv", 15, 15, "CC-BY-4.0", EC_ENERGY_GROSS, 1,
     "Mistral-7B-v0.1", "int8-mixed", 1, 10161.92, 10.24, 104.22},
    {"ecocompute-ai/data/a800_results/energy_mistral_7b_fp16.json", 11, 1, "CC-BY-4.0",
     EC_ENERGY_GROSS, 0, "Mistral-7B-v0.1", "fp16", 1, 4518.3, 36.95, 170.02},
    {"ecocompute-ai/data/a800_results/energy_yi_1_5_9b_nf4_dq.json", 11, 1, "CC-BY-4.0",
     EC_ENERGY_GROSS, 10, "Yi-1.5-9B", "nf4-dq", 1, 6145.54, 17.57, 108.65},
    {"ecocompute-ai/data/a800_results/ppl_yi15_9b_int8_default.json", 1, 0, "CC-BY-4.0",
     EC_ENERGY_UNKNOWN, 0, "Yi-1.5-9B", "int8-mixed", -1, NAN, NAN, NAN},
    {"ecocompute-ai/data/ppl_yi1.5_6b_wikitext2_20260224.csv", 3, 0, "CC-BY-4.0",
     EC_ENERGY_UNKNOWN, 2, "Yi-1.5-6B", "int8", -1, NAN, NAN, NAN},
    {"ecocompute-ai/data/ppl_yi1.5_6b_wikitext2_20260224.json", 3, 0, "CC-BY-4.0",
     EC_ENERGY_UNKNOWN, 0, "Yi-1.5-6B", "fp16", -1, NAN, NAN, NAN},
    {"hongping-zh.github.io/data/blackwell_rtxpro6000_fp16_e2e_20260608_124459/results/"
     "blackwell_rtxpro6000_fp16_e2e_runs.csv",
     20, 0, "", EC_ENERGY_GROSS, 0, "Qwen2.5-3B", "fp16", 1, 2895.6011399899367,
     82.58455229477299, 239.98695751633997},
    {"hongping-zh.github.io/data/blackwell_rtxpro6000_fp16_e2e_20260608_124459/results/"
     "summary_fp16_b1_tok512.json",
     1, 1, "", EC_ENERGY_GROSS, 0, "Qwen2.5-3B", "fp16", 1, 2709.6666970716738, 83.16975718625001,
     225.60563928744128},
    {"hongping-zh.github.io/data/rtx_pro6000_phase_results_with_yi15_6b_20260603/"
     "phase_results_backup/qwen15b_b8_phase_matrix.csv",
     3, 0, "", EC_ENERGY_NET, 0, "Qwen2-1.5B", "fp16", 8, 48.155769062344135 / 256 * 1000,
     789.9687688665107, 148.59981875 + 34.431},
    {"hongping-zh.github.io/data/rtx_pro6000_phase_results_with_yi15_6b_20260603/"
     "phase_results_backup/phase_summary_qwen15b_qwen25_3b_yi15_6b.csv",
     15, 15, "", EC_ENERGY_NET, 0, "Qwen2-1.5B", "fp16", 1, 42.73701401309968 / 32 * 1000,
     105.25533359181006, NAN},
    {"hongping-zh.github.io/public_data_benchmarks_ECO_DATA.json", 15, 15, "", EC_ENERGY_UNKNOWN,
     0, "TinyLlama-1.1B", "fp16", -1, 1802, NAN, NAN},
    {"hongping-zh.github.io/compare_html_benchmarkData.json", 30, 30, "", EC_ENERGY_UNKNOWN, 1,
     "TinyLlama-1.1B", "int8-mixed", -1, 3991, NAN, NAN},
    {"quant-energy/build/measured.csv", 50, 50, "CC-BY-4.0", EC_ENERGY_UNKNOWN, 0, "Qwen2-0.5B",
     "nf4", -1, 2301.07, NAN, NAN},
    {"quant-energy/data/rtx4090_paired_energy_quality_2026-08-19.csv", 20, 0, "CC-BY-4.0",
     EC_ENERGY_GROSS, 0, "Qwen2-0.5B", "int8-mixed", 1, 9941.865, 8.6, 85.3},
    {"quant-energy/data/rtx4090_int8_repeats_2026-08-20.csv", 30, 0, "CC-BY-4.0",
     EC_ENERGY_GROSS, 1, "Qwen2-0.5B", "fp16", 1, 1182.642, NAN, NAN},
    {"quant-energy/data/rtx4090_int8_repeats_2026-08-20.summary.csv", 10, 10, "CC-BY-4.0",
     EC_ENERGY_GROSS, 0, "Qwen2-0.5B", "int8-mixed", 1, 8254.213, 8.933, 73.867},
};

static void near_or_nan(double got, double want)
{
    if (isnan(want)) assert_true(isnan(got));
    else assert_true(fabs(got - want) <= 1e-9 * fabs(want) + 1e-9);
}

static void each_file_type(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const expect *e = &cases[i];
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", root, e->file);
        ec_run_record *r;
        size_t n;
        if (ec_seed_read(path, &r, &n)) fail_msg("%s", ec_last_error());
        print_message("%-60.60s %zu records\n", e->file, n);
        assert_int_equal(n, e->n);
        size_t summaries = 0;
        for (size_t k = 0; k < n; k++) {
            summaries += r[k].run_index == -1;
            if (strlen(e->file) < sizeof r[k].source) {
                assert_string_equal(r[k].source, e->file);
            } else { /* too long for the record: folder + "/..." + end of the file name */
                size_t dir = (size_t)(strrchr(e->file, '/') - e->file);
                assert_int_equal(strlen(r[k].source), sizeof r[k].source - 1);
                assert_memory_equal(r[k].source, e->file, dir);
                assert_memory_equal(r[k].source + dir, "/...", 4);
                assert_string_equal(r[k].source + strlen(r[k].source) - 11, "yi15_6b.csv");
            }
            assert_string_equal(r[k].licence, e->licence);
        }
        assert_int_equal(summaries, e->summaries);
        const ec_run_record *s = &r[e->spot];
        assert_int_equal(s->energy_definition, e->def);
        assert_string_equal(s->model, e->model);
        assert_string_equal(s->precision, e->precision);
        assert_int_equal(s->batch, e->batch);
        near_or_nan(s->energy_j_per_1k, e->j_per_1k);
        near_or_nan(s->tok_s, e->tok_s);
        near_or_nan(s->avg_power_w, e->watts);
        free(r);
    }
}

static void spot_values_beyond_energy(void **state)
{
    (void)state;
    char path[2048];
    ec_run_record *r;
    size_t n;
    /* per-run generated tokens of the A800 JSONs (not length-pinned) and perplexities */
    snprintf(path, sizeof path, "%s/ecocompute-ai/data/a800_results/energy_mistral_7b_int8_pure.json",
             root);
    assert_int_equal(ec_seed_read(path, &r, &n), 0);
    assert_int_equal(r[0].decode.tokens, 512);
    assert_string_equal(r[0].gpu_name, "A800-SXM4-80GB");
    assert_int_equal(r[9].run_index, 9);
    free(r);
    snprintf(path, sizeof path, "%s/ecocompute-ai/data/a800_results/ppl_yi_1_5_9b_fp16.json", root);
    assert_int_equal(ec_seed_read(path, &r, &n), 0);
    assert_true(fabs(r[0].perplexity - 5.732) < 1e-12);
    free(r);
    /* the phase matrix keeps both phases and the idle it subtracted */
    snprintf(path, sizeof path,
             "%s/hongping-zh.github.io/data/rtx_pro6000_phase_results_with_yi15_6b_20260603/"
             "phase_results_backup/qwen15b_b1_phase_matrix.csv", root);
    assert_int_equal(ec_seed_read(path, &r, &n), 0);
    assert_true(r[0].idle_power_w == 34.431);
    assert_true(fabs(r[0].prefill.gpu_energy_net_j - 92.4108852299881) < 1e-9);
    assert_true(fabs(r[0].decode.time_s - 1.5201129913330078) < 1e-12);
    free(r);
}

/* Reads `text` as the seed file `name` (in a fresh folder) into *r; returns the record count. */
static size_t read_text(const char *name, const char *text, ec_run_record **r)
{
    char dir[] = "/tmp/test_seed_import.XXXXXX", path[128];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    size_t n = 0;
    if (ec_seed_read(path, r, &n)) fail_msg("%s", ec_last_error());
    unlink(path);
    rmdir(dir);
    return n;
}

/* Counts that are no whole number in 0..1e9 (found by fuzz_seed_import: converting them to an
 * integer was undefined) are read as -2, present but invalid, which the record check refuses;
 * an absent count stays -1 (unknown). tests/fuzz/regressions/fuzz_seed_import has the inputs. */
static void out_of_range_counts_invalid(void **state)
{
    (void)state;
    ec_run_record *r;
    char why[256];
    assert_int_equal(read_text("energy_x.json",
                               "{\"model\": \"m\", \"config\": \"fp16\", \"gpu\": \"A800\", "
                               "\"raw_runs\": [{\"run\": 1, \"tokens\": 1e300, "
                               "\"throughput_tok_s\": 1, \"energy_per_1k_tokens\": 1}, "
                               "{\"run\": 2, \"tokens\": 300}, {\"run\": 3}]}", &r), 3);
    assert_int_equal(r[0].decode.tokens, -2);
    assert_int_equal(ec_run_record_check(&r[0], why, sizeof why), -1);
    assert_int_equal(r[1].decode.tokens, 300);
    assert_int_equal(r[2].decode.tokens, -1);
    free(r);
    assert_int_equal(read_text("summary.json",
                               "{\"precision\": \"FP16\", \"batch\": 1e300, "
                               "\"max_new_tokens\": 9.2e12, \"throughput_tok_s_mean\": 1, "
                               "\"energy_per_1k_tokens_j_mean\": 1}", &r), 1);
    assert_int_equal(r[0].batch, -2);
    assert_int_equal(r[0].gen_len, -2);
    assert_int_equal(ec_run_record_check(&r[0], why, sizeof why), -1);
    free(r);
    assert_int_equal(read_text("raw.csv",
                               "batch_size,total_time_s,throughput_tok_s,avg_power_w,"
                               "total_energy_j,energy_per_1k_tokens_j,tokens_generated\n"
                               "1,13.4,19.06,129.58,1740.34,6798.19,-1e300\n", &r), 1);
    assert_int_equal(r[0].decode.tokens, -2);
    free(r);
}

static void refuses_non_data(void **state)
{
    (void)state;
    const char *files[] = {"quant-energy/curves.json", "ecocompute-ai/data/telemetry_config.json",
                           "ecocompute-dynamic-eval/metadata/rtx5090_metadata.json",
                           "ecocompute-dynamic-eval/metadata/README.md"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", root, files[i]);
        ec_run_record *r = NULL;
        size_t n = 7;
        assert_int_equal(ec_seed_read(path, &r, &n), -1);
        assert_null(r);
        assert_int_equal(n, 0);
        assert_non_null(strstr(ec_last_error(), "not a recognised seed-data file"));
        assert_non_null(strstr(ec_last_error(), path));
    }
    ec_run_record *r;
    size_t n;
    assert_int_equal(ec_seed_read("/nonexistent/x.csv", &r, &n), -1);
    assert_non_null(strstr(ec_last_error(), "cannot open"));
}

int main(void)
{
    struct stat st;
    test_data_path(root, sizeof root, "seed-data");
    if (stat(root, &st) || !S_ISDIR(st.st_mode)) {
        printf("test data %s not found\n", root);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(each_file_type),
        cmocka_unit_test(spot_values_beyond_energy),
        cmocka_unit_test(out_of_range_counts_invalid),
        cmocka_unit_test(refuses_non_data),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
