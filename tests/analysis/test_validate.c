/* test_validate.c — each validate check flags a planted inconsistency, names the right row, and
 * stays silent on a clean dataset (consistent energies, one definition, plausible throughput,
 * pinned lengths, summaries equal to their runs). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "ecocompute/analysis.h"
#include "ecocompute/store.h"

#define N 12

/* A clean dataset: Llama-2-7B on an H100, fp16 and nf4, 5 runs each, gross energy that equals
 * 1000·P/tok_s, 256 tokens each, plus one summary row per precision equal to the runs' means. */
static size_t clean(ec_run_record *r)
{
    size_t n = 0;
    for (int p = 0; p < 2; p++) {
        double tok = p ? 60.0 : 28.9, w = p ? 150.0 : 178.0;
        for (int i = 0; i < 5; i++) {
            ec_run_record *x = &r[n++];
            ec_run_record_init(x);
            strcpy(x->source, "clean.csv");
            strcpy(x->gpu_name, "NVIDIA H100 80GB HBM3");
            strcpy(x->model, "Llama-2-7B");
            strcpy(x->precision, p ? "nf4" : "fp16");
            x->energy_definition = EC_ENERGY_GROSS;
            x->batch = 1;
            x->prompt_len = 64;
            x->gen_len = 256;
            x->run_index = i;
            x->decode.tokens = 256;
            x->tok_s = tok * (1 + 0.01 * (i - 2));
            x->avg_power_w = w;
            x->total_time_s = 256 / x->tok_s;
            x->gpu_energy_j = w * x->total_time_s;
            x->energy_j_per_1k = 1000 * w / x->tok_s;
        }
        ec_run_record *s = &r[n++];
        *s = r[n - 2];
        s->run_index = -1;
        double se = 0, st = 0;
        for (int i = 0; i < 5; i++) {
            se += r[n - 6 + i].energy_j_per_1k / 5;
            st += r[n - 6 + i].tok_s / 5;
        }
        s->energy_j_per_1k = se;
        s->tok_s = st;
        s->avg_power_w = w;
        s->gpu_energy_j = s->total_time_s = NAN;
    }
    return n;
}

static size_t count(const ec_findings *f, const char *check, ec_severity min)
{
    size_t k = 0;
    for (size_t i = 0; i < f->n; i++)
        if (!strcmp(f->v[i].check, check) && f->v[i].severity >= min) k++;
    return k;
}

static ec_validate_options opts(void)
{
    ec_validate_options o;
    ec_validate_options_default(&o);
    return o;
}

static void clean_dataset_passes(void **state)
{
    (void)state;
    ec_run_record r[N];
    size_t n = clean(r);
    ec_validate_options o = opts();
    ec_findings f = {0};
    assert_int_equal(ec_validate(r, n, &o, &f), 0);
    for (size_t i = 0; i < f.n; i++) print_message("unexpected: %s %s\n", f.v[i].check, f.v[i].message);
    assert_int_equal(f.n, 0);
    ec_findings_free(&f);
}

static void planted_energy_identity(void **state)
{
    (void)state;
    ec_run_record r[N];
    size_t n = clean(r);
    r[3].energy_j_per_1k *= 0.8;   /* gross figure 20% below 1000·P/T */
    r[7].gpu_energy_j *= 1.1;      /* joules ≠ power × time */
    ec_validate_options o = opts();
    ec_findings f = {0};
    assert_int_equal(ec_check_energy_identity(r, n, &o, &f), 0);
    assert_int_equal(f.n, 2);
    assert_int_equal(f.v[0].row, 3);
    assert_int_equal(f.v[1].row, 7);
    assert_int_equal(f.v[0].severity, EC_SEV_ERROR);
    assert_non_null(strstr(f.v[0].message, "as if"));
    ec_findings_free(&f);
    /* "net" that equals the gross identity: labelled net, but nothing was subtracted */
    n = clean(r);
    r[0].energy_definition = EC_ENERGY_NET;
    assert_int_equal(ec_check_energy_identity(r, n, &o, &f), 0);
    assert_int_equal(f.n, 1);
    assert_int_equal(f.v[0].severity, EC_SEV_WARNING);
    ec_findings_free(&f);
}

/* ecocompute's own rows: tok/s over the decode phase, J/1k over the whole run (prefill too).
 * The identity holds for the whole run's rate (tokens / total time), not for the decode rate. */
static void whole_run_rate_with_prefill(void **state)
{
    (void)state;
    ec_run_record r[N];
    size_t n = clean(r);
    for (size_t i = 0; i < n; i++) {
        r[i].prefill.time_s = 0.5;            /* a measured prefill phase */
        r[i].total_time_s += 0.5;             /* the whole run includes it */
        r[i].gpu_energy_j = r[i].avg_power_w * r[i].total_time_s;
        r[i].energy_j_per_1k = NAN;
        r[i].j_per_1k_gross = 1000.0 * r[i].gpu_energy_j / (r[i].batch * r[i].gen_len);
    }
    ec_validate_options o = opts();
    ec_findings f = {0};
    assert_int_equal(ec_check_energy_identity(r, n, &o, &f), 0);
    for (size_t i = 0; i < f.n; i++) print_message("unexpected: %s\n", f.v[i].message);
    assert_int_equal(f.n, 0);
    ec_findings_free(&f);
    r[2].j_per_1k_gross *= 1.2; /* still caught when it is wrong */
    assert_int_equal(ec_check_energy_identity(r, n, &o, &f), 0);
    assert_int_equal(f.n, 1);
    assert_int_equal(f.v[0].row, 2);
    ec_findings_free(&f);
}

static void planted_mixed_definitions(void **state)
{
    (void)state;
    ec_run_record r[N];
    size_t n = clean(r);
    for (int i = 6; i < 11; i++) r[i].energy_definition = EC_ENERGY_NET;
    ec_validate_options o = opts();
    ec_findings f = {0};
    assert_int_equal(ec_check_energy_definitions(r, n, &o, &f), 0);
    assert_int_equal(count(&f, "mixed-energy-definition", EC_SEV_ERROR), 1); /* the comparison */
    assert_int_equal(count(&f, "mixed-energy-definition", EC_SEV_WARNING), 2); /* + dataset */
    ec_findings_free(&f);
}

static void planted_roofline(void **state)
{
    (void)state;
    ec_run_record r[N];
    size_t n = clean(r);
    /* Llama-2-7B fp16 at batch 1 on 3.35 TB/s: 13.5 GB per token, at most ~248 tok/s */
    r[2].tok_s = 400;
    r[2].energy_j_per_1k = 1000 * r[2].avg_power_w / r[2].tok_s;
    r[2].total_time_s = 256 / r[2].tok_s;
    r[2].gpu_energy_j = r[2].avg_power_w * r[2].total_time_s;
    ec_validate_options o = opts();
    ec_findings f = {0};
    assert_int_equal(ec_check_roofline(r, n, &o, &f), 0);
    assert_int_equal(f.n, 1);
    assert_int_equal(f.v[0].row, 2);
    assert_non_null(strstr(f.v[0].message, "bound"));
    ec_findings_free(&f);
    /* The same rate from the model split over two GPUs: their bandwidths add, ~496 tok/s. */
    r[2].tp = 2;
    assert_int_equal(ec_check_roofline(r, n, &o, &f), 0);
    assert_int_equal(f.n, 0);
    ec_findings_free(&f);
}

static void planted_output_lengths(void **state)
{
    (void)state;
    ec_run_record r[N];
    size_t n = clean(r);
    for (int i = 6; i < 11; i++) r[i].decode.tokens = 512; /* nf4 ran to a different length */
    ec_validate_options o = opts();
    ec_findings f = {0};
    assert_int_equal(ec_check_output_lengths(r, n, &o, &f), 0);
    assert_int_equal(f.n, 1);
    assert_non_null(strstr(f.v[0].message, "fp16 256"));
    assert_non_null(strstr(f.v[0].message, "nf4 512"));
    ec_findings_free(&f);
    n = clean(r);
    r[1].decode.tokens = 200; /* one run stopped early */
    assert_int_equal(ec_check_output_lengths(r, n, &o, &f), 0);
    assert_int_equal(f.n, 1);
    assert_non_null(strstr(f.v[0].message, "200 to 256"));
    ec_findings_free(&f);
}

static void planted_summary_mismatch(void **state)
{
    (void)state;
    ec_run_record r[N];
    size_t n = clean(r);
    r[11].avg_power_w *= 1.9; /* like the dashboard's power column */
    ec_validate_options o = opts();
    ec_findings f = {0};
    assert_int_equal(ec_check_summaries(r, n, &o, &f), 0);
    assert_int_equal(f.n, 1);
    assert_int_equal(f.v[0].row, 11);
    assert_non_null(strstr(f.v[0].message, "average power"));
    ec_findings_free(&f);
}

static void planted_duplicates(void **state)
{
    (void)state;
    /* Three models carry one table's figures: three pairs, one copy, so one finding. */
    enum { MODELS = 3, PRECS = 3 };
    ec_run_record r[MODELS * PRECS];
    const char *prec[] = {"fp16", "int8", "nf4"};
    const char *model[] = {"Qwen2.5-14B", "Yi-1.5-6B", "Mistral-7B"};
    const double e[] = {7360, 9807, 7545};
    for (int m = 0; m < MODELS; m++)
        for (int p = 0; p < PRECS; p++) {
            ec_run_record *x = &r[m * PRECS + p];
            ec_run_record_init(x);
            strcpy(x->source, m ? "data/b.json" : "data/a.csv");
            strcpy(x->model, model[m]);
            strcpy(x->precision, prec[p]);
            x->run_index = -1;
            x->energy_j_per_1k = e[p] + 0.2 * m; /* rounded copies */
        }
    ec_validate_options o = opts();
    ec_findings f = {0};
    assert_int_equal(ec_check_duplicates(r, MODELS * PRECS, &o, &f), 0);
    assert_int_equal(f.n, 1);
    assert_non_null(strstr(f.v[0].message, "3 models"));
    assert_non_null(strstr(f.v[0].message, "3 precisions"));
    for (int m = 0; m < MODELS; m++) assert_non_null(strstr(f.v[0].where, model[m]));
    assert_null(strstr(f.v[0].where, "data/")); /* file names keep the line short */
    ec_findings_free(&f);
    /* Two models only: still one finding, naming two. */
    assert_int_equal(ec_check_duplicates(r, 2 * PRECS, &o, &f), 0);
    assert_int_equal(f.n, 1);
    assert_non_null(strstr(f.v[0].message, "2 models"));
    ec_findings_free(&f);
    r[5].energy_j_per_1k += 10; /* only 2 equal: coincidence, not copying */
    assert_int_equal(ec_check_duplicates(r, 2 * PRECS, &o, &f), 0);
    assert_int_equal(f.n, 0);
    ec_findings_free(&f);
}

static void gpu_bandwidth_table(void **state)
{
    (void)state;
    assert_true(ec_gpu_peak_bandwidth("NVIDIA H100 80GB HBM3") == 3.35e12);
    assert_true(ec_gpu_peak_bandwidth("NVIDIA H100 PCIe") == 2.0e12);
    assert_true(ec_gpu_peak_bandwidth("A800-SXM4-80GB") == 2.039e12);
    assert_true(ec_gpu_peak_bandwidth("NVIDIA GeForce RTX 4090D") == 1.008e12);
    assert_true(ec_gpu_peak_bandwidth("Tesla T4") == 0.32e12);
    assert_true(ec_gpu_peak_bandwidth("NVIDIA L40S") == 0.864e12);
    assert_true(isnan(ec_gpu_peak_bandwidth("Radeon VII")));
    assert_non_null(ec_catalog_match("mistralai/Mistral-7B-Instruct-v0.2"));
    assert_string_equal(ec_catalog_match("01-ai/Yi-1.5-6B-Chat")->name, "Yi-1.5-6B");
    assert_string_equal(ec_catalog_match("Phi-3-mini-4k-instruct")->name, "Phi-3-mini-4k");
    assert_null(ec_catalog_match("Qwen2-3B"));
    ec_precision p;
    assert_int_equal(ec_precision_from_text("INT8 Default", &p), 0);
    assert_int_equal(p, EC_PREC_INT8_MIXED);
    assert_int_equal(ec_precision_from_text("int8_pure", &p), 0);
    assert_int_equal(p, EC_PREC_INT8);
    assert_int_equal(ec_precision_from_text("NF4 DQ", &p), 0);
    assert_int_equal(p, EC_PREC_NF4_DQ);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(clean_dataset_passes),     cmocka_unit_test(planted_energy_identity),
        cmocka_unit_test(whole_run_rate_with_prefill),
        cmocka_unit_test(planted_mixed_definitions), cmocka_unit_test(planted_roofline),
        cmocka_unit_test(planted_output_lengths),   cmocka_unit_test(planted_summary_mismatch),
        cmocka_unit_test(planted_duplicates),       cmocka_unit_test(gpu_bandwidth_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
