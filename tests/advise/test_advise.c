/* test_advise.c — the advise layer: workload and footprint arithmetic, the shipped tables and
 * their citations, name lookups, the physical model's fit and leave-one-out computation on a
 * dataset with a known answer, the Python tokenizer, every audit rule (positive and negative,
 * comments / strings / docstrings included) and the SARIF output. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ecocompute/advise.h"
#include "ecocompute/analysis.h"
#include "ecocompute/common.h"
#include "ecocompute/store.h"
#include <unistd.h>

#define NEAR(a, b, rel)                                                                            \
    assert_true(fabs((double)(a) - (double)(b)) <= (rel)*fabs((double)(b)) + 1e-12)

static ec_workload_input blank(void)
{
    ec_workload_input in = {NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, EC_PER_MONTH};
    return in;
}

static void test_workload(void **state)
{
    (void)state;
    ec_workload w;
    ec_workload_input in = blank();
    assert_int_equal(ec_workload_tokens(&in, &w), -1); /* nothing given */
    in.requests = 1e6;
    in.tokens_per_request = 300;
    assert_int_equal(ec_workload_tokens(&in, &w), 0);
    NEAR(w.tokens, 3e8, 1e-12);
    NEAR(w.requests, 1e6, 1e-12);
    in.tokens = 5; /* two quantities */
    assert_int_equal(ec_workload_tokens(&in, &w), -1);

    in = blank();
    in.chars = 1e6;
    in.chars_per_token = 0.7;
    assert_int_equal(ec_workload_tokens(&in, &w), 0);
    NEAR(w.tokens, 1e6 / 0.7, 1e-12);

    in = blank();
    in.users = 1000;
    in.requests_per_user = 30;
    in.tokens_per_request = 256;
    assert_int_equal(ec_workload_tokens(&in, &w), 0);
    NEAR(w.tokens, 1000.0 * 30 * 256, 1e-12);

    /* hours a day at full throughput: a month is 365.25/12 days, a year 12 months */
    in = blank();
    in.hours_per_day = 8;
    in.tok_s = 100;
    assert_int_equal(ec_workload_tokens(&in, &w), 0);
    NEAR(w.tokens, 8 * 3600.0 * 100 * 365.25 / 12, 1e-12);
    double month = w.tokens;
    in.period = EC_PER_YEAR;
    assert_int_equal(ec_workload_tokens(&in, &w), 0);
    NEAR(w.tokens, 12 * month, 1e-12);
    in.period = EC_PER_DAY;
    assert_int_equal(ec_workload_tokens(&in, &w), 0);
    NEAR(w.tokens, 8 * 3600.0 * 100, 1e-12);
    in.hours_per_day = 25;
    assert_int_equal(ec_workload_tokens(&in, &w), -1);
    ec_period p;
    assert_int_equal(ec_period_parse("week", &p), -1);
}

static void test_quantities(void **state)
{
    (void)state;
    double x;
    static const struct {
        const char *text;
        double value;
    } ok[] = {{"1000000", 1e6},   {"1,000,000", 1e6},
              {"1e6", 1e6},       {"1M", 1e6},
              {"2.5k", 2500},     {"3B", 3e9},
              {"100\u4e07", 1e6}, {"100\u4e07\u5b57", 1e6},
              {"1\u4ebf", 1e8},   {"0", 0}};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        assert_int_equal(ec_parse_quantity(ok[i].text, &x), 0);
        NEAR(x, ok[i].value, 1e-12);
    }
    static const char *const bad[] = {"", "M", "1x", "-5", "1..2", "one", "1 M", NULL};
    for (const char *const *b = bad; *b; b++)
        assert_int_equal(ec_parse_quantity(*b, &x), -1);
}

static void test_footprint(void **state)
{
    (void)state;
    ec_footprint f;
    /* 3.6e9 tokens at 1000 J/1k = 3.6e9 J = 1000 kWh */
    ec_footprint_of(3.6e9, 1000, 500, 1.5, 0.10, 400, &f);
    NEAR(f.gpu_kwh, 1000, 1e-12);
    NEAR(f.facility_kwh, 1500, 1e-12); /* × PUE */
    NEAR(f.cost_usd, 150, 1e-12);      /* facility kWh × price */
    NEAR(f.kg_co2, 600, 1e-12);        /* facility kWh × g/kWh / 1000 */
    NEAR(f.gpu_hours, 3.6e9 / 500 / 3600, 1e-12);
    ec_footprint_of(3.6e9, 1000, 500, 1.0, NAN, 400, &f);
    assert_true(isnan(f.cost_usd));
    NEAR(f.kg_co2, 400, 1e-12);
}

static ec_advise_data data;
static int data_loaded;

static int load_data(void **state)
{
    (void)state;
    if (!data_loaded) {
        if (ec_advise_data_load(EC_SHIPPED_DATA_DIR, &data)) {
            fprintf(stderr, "%s\n", ec_last_error());
            return -1;
        }
        data_loaded = 1;
    }
    return 0;
}

static void test_tables_cite_sources(void **state)
{
    (void)state;
    assert_true(data.ngpus >= 15);
    static const char *const required[] = {
        "T4",       "V100",     "A10",       "A100 40GB", "A100 80GB", "A800",     "L4",  "L40S",
        "RTX 3090", "RTX 4090", "RTX 4090D", "RTX 5090",  "H100 PCIe", "H100 SXM", "H200"};
    for (size_t i = 0; i < sizeof required / sizeof *required; i++)
        assert_non_null(ec_advise_find_gpu(&data, required[i]));
    for (size_t i = 0; i < data.ngpus; i++) {
        assert_true(strlen(data.gpus[i].source) > 0);
        assert_true(data.gpus[i].bandwidth_gbs > 0);
        if (isfinite(data.gpus[i].idle_w)) assert_true(strlen(data.gpus[i].idle_basis) > 0);
    }
    for (size_t i = 0; i < data.nregions; i++) {
        assert_true(strlen(data.regions[i].intensity_source) > 0);
        assert_true(data.regions[i].intensity_year >= 2019);
        if (isfinite(data.regions[i].usd_per_kwh))
            assert_true(strlen(data.regions[i].price_source) > 0);
    }
    static const char *const regions[] = {"world", "us", "cn", "eu", "gcp-us-east4"};
    for (size_t i = 0; i < 5; i++)
        assert_non_null(ec_advise_find_region(&data, regions[i]));
    for (size_t i = 0; i < data.nequivalents; i++)
        assert_true(strlen(data.equivalents[i].source) > 0);
    assert_non_null(ec_advise_find_cpt(&data, "zh", NULL));
    assert_non_null(ec_advise_find_cpt(&data, "en", "llama-3"));
    /* every reference row keeps its source and energy definition; seed rows their licence */
    assert_true(data.nreference > 500);
    for (size_t i = 0; i < data.nreference; i++) {
        assert_true(strlen(data.records[i].source) > 0);
        if (strcmp(data.records[i].source, "ecocompute") &&
            !strncmp(data.records[i].source, "ecocompute-ai", 13))
            assert_string_equal(data.records[i].licence, "CC-BY-4.0");
    }
}

/* A calibration in the user's database replaces the table's idle power of that GPU. */
static void test_calibration_idle(void **state)
{
    (void)state;
    char path[] = "/tmp/ec_advise_cal_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    unlink(path);
    ec_store *s;
    assert_int_equal(ec_store_open(&s, path, 0), 0);
    ec_calibration c;
    memset(&c, 0, sizeof c);
    snprintf(c.gpu_name, sizeof c.gpu_name, "NVIDIA A10");
    snprintf(c.gpu_uuid, sizeof c.gpu_uuid, "GPU-a10");
    snprintf(c.timestamp_utc, sizeof c.timestamp_utc, "2026-11-29T00:00:00Z");
    c.idle_power_w = 21.5;
    c.gemm.avg_power_w = NAN;
    assert_int_equal(ec_store_insert_calibration(s, &c), 0);
    ec_run_record r[2];
    ec_run_record_init(&r[0]);
    ec_run_record_init(&r[1]);
    snprintf(r[0].gpu_uuid, sizeof r[0].gpu_uuid, "GPU-a10");
    snprintf(r[1].gpu_uuid, sizeof r[1].gpu_uuid, "GPU-other");
    const ec_gpu_spec *a10 = ec_advise_find_gpu(&data, "A10");
    assert_true(isnan(a10->idle_w)); /* no sourced figure in the table */
    assert_int_equal(ec_advise_use_calibrations(&data, s, r, 2, path), 1);
    assert_true(a10->idle_w == 21.5);
    assert_non_null(strstr(a10->idle_basis, "calibrate"));
    ec_store_close(s);
    unlink(path);
    char side[64];
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
}

static void test_names(void **state)
{
    (void)state;
    /* NVML's spellings reach the table */
    assert_string_equal(ec_advise_find_gpu(&data, "NVIDIA H100 80GB HBM3")->name, "H100-SXM");
    assert_string_equal(ec_advise_find_gpu(&data, "A800-SXM4-80GB")->name, "A800");
    assert_string_equal(ec_advise_find_gpu(&data, "NVIDIA GeForce RTX 4090 D")->name, "RTX-4090D");
    assert_string_equal(ec_advise_find_gpu(&data, "NVIDIA GeForce RTX 4090")->name, "RTX-4090");
    assert_string_equal(ec_advise_find_gpu(&data, "Tesla T4")->name, "T4");
    assert_null(ec_advise_find_gpu(&data, "H1000"));
    assert_null(ec_advise_find_region(&data, "atlantis"));
    assert_int_equal(ec_edit_distance("kitten", "sitting"), 3);
    assert_int_equal(ec_edit_distance("H100", "h100"), 0);
    const char *names[] = {"H100-SXM", "H200", "A100-80GB", "T4"};
    char near[128];
    ec_closest_names("H20", names, 4, near, sizeof near);
    assert_int_equal(strncmp(near, "H200", 4), 0);
}

/* ---- the model: points generated from known parameters are fitted back ---- */

static const ec_gpu_spec test_gpu = {"TEST-GPU", "TEST-GPU", "Hopper sm_90", 80,  3000,   700,
                                     900,        1800,       1800,           120, "test", "test"};

static size_t make_points(ec_ref_point *p, const ec_model_params *truth)
{
    static const char *const models[] = {"TinyLlama-1.1B", "Qwen2.5-3B", "Llama-2-7B",
                                         "Qwen2.5-14B"};
    static const int batches[] = {1, 8, 64};
    size_t n = 0;
    for (size_t m = 0; m < 4; m++)
        for (size_t b = 0; b < 3; b++) {
            ec_ref_point *x = &p[n++];
            memset(x, 0, sizeof *x);
            snprintf(x->gpu, sizeof x->gpu, "TEST-GPU");
            snprintf(x->model, sizeof x->model, "%s", models[m]);
            snprintf(x->precision, sizeof x->precision, "fp16");
            snprintf(x->stack, sizeof x->stack, "fused");
            x->batch = batches[b];
            x->prompt_len = 512;
            x->gen_len = 256;
            x->n = 3;
            x->idle_w = NAN;
            x->def = EC_ENERGY_GROSS;
            x->verdict = -1;
            ec_step_work w;
            assert_int_equal(ec_step_work_of(x->model, 0, "fp16", x->batch, 512, 256, &w), 0);
            x->params_b = w.params_b;
            assert_int_equal(
                ec_model_predict(truth, &test_gpu, &w, x->batch, 120, &x->tok_s, &x->j_per_1k), 0);
        }
    return n;
}

static void test_model_fit_and_loo(void **state)
{
    (void)state;
    ec_advise_data d;
    memset(&d, 0, sizeof d);
    d.gpus = (ec_gpu_spec *)&test_gpu;
    d.ngpus = 1;
    ec_model_params truth = {.stack = "fused",
                             .precision = "fp16",
                             .eta_bw = 0.8,
                             .eta_tf = 0.3,
                             .overhead_s = 20e-6,
                             .seq_overhead_s = 1e-6,
                             .pj_per_byte = 100,
                             .pj_per_flop = 1.0,
                             .active_w = 50};
    ec_ref_point p[12];
    size_t n = make_points(p, &truth);
    ec_model_params fit;
    assert_int_equal(ec_model_fit(p, n, &d, "fused", "fp16", (size_t)-1, &fit), 0);
    assert_int_equal(fit.n_time, 12);
    assert_int_equal(fit.n_energy, 12);
    /* The fitted model reproduces every point (the parameters themselves may trade off). */
    for (size_t i = 0; i < n; i++) {
        ec_step_work w;
        double t, e;
        ec_step_work_of(p[i].model, 0, "fp16", p[i].batch, 512, 256, &w);
        ec_model_predict(&fit, &test_gpu, &w, p[i].batch, 120, &t, &e);
        NEAR(t, p[i].tok_s, 0.03);
        NEAR(e, p[i].j_per_1k, 0.03);
    }
    ec_loo_error *loo;
    size_t nl;
    assert_int_equal(ec_model_loo(p, n, &d, &loo, &nl), 0);
    assert_int_equal(nl, 12);
    size_t cnt;
    assert_true(ec_loo_median(loo, nl, p, &d, "fused", NULL, 0, &cnt) < 3.0);
    assert_int_equal(cnt, 12);
    assert_true(ec_loo_median(loo, nl, p, &d, "fused", "Hopper", 1, &cnt) < 3.0);
    assert_true(isnan(ec_loo_median(loo, nl, p, &d, "fused", "Ampere", 1, &cnt)));
    assert_int_equal(cnt, 0);
    free(loo);

    /* A point 50 % off: its own LOO error shows it (the others predict the truth). */
    p[4].tok_s *= 1.5;
    assert_int_equal(ec_model_loo(p, n, &d, &loo, &nl), 0);
    double e4 = NAN;
    for (size_t i = 0; i < nl; i++)
        if (loo[i].point == 4) e4 = loo[i].tok_s_err_pct;
    assert_true(e4 < -20); /* predicted well below the inflated measurement */
    free(loo);

    /* The median itself: |−10|, |5|, |20| → 10; points of another stack are not counted. */
    ec_loo_error e[4] = {{0, -10, NAN}, {1, 5, NAN}, {2, 20, NAN}, {3, 99, NAN}};
    snprintf(p[3].stack, sizeof p[3].stack, "reference");
    NEAR(ec_loo_median(e, 4, p, &d, "fused", NULL, 0, &cnt), 10.0, 1e-12);
    assert_int_equal(cnt, 3);
    /* Too few points: no fit, and it says why. */
    assert_int_equal(ec_model_fit(p, 1, &d, "fused", "fp16", (size_t)-1, &fit), -1);
}

static void test_answers(void **state)
{
    (void)state;
    ec_advisor a;
    assert_int_equal(ec_advisor_init(&a, &data), 0);
    ec_query q = {"Mistral-7B", 0,  ec_advise_find_gpu(&data, "A800"), "fp16", 1, "hf-bnb",
                  128,          256};
    ec_answer an;
    assert_int_equal(ec_advise_answer(&a, &q, &an), 0);
    assert_int_equal(an.method, EC_ANSWER_MEASURED);
    assert_non_null(strstr(an.sources, "a800"));
    q.batch = 2; /* between measured batch 1 and 4 */
    assert_int_equal(ec_advise_answer(&a, &q, &an), 0);
    assert_int_equal(an.method, EC_ANSWER_INTERPOLATED);
    q.gpu = ec_advise_find_gpu(&data, "L4");
    q.stack = "fused";
    q.batch = 8;
    assert_int_equal(ec_advise_answer(&a, &q, &an), 0);
    assert_int_equal(an.method, EC_ANSWER_MODELLED);
    assert_true(isfinite(an.pm_energy_pct));
    assert_non_null(strstr(an.reason, "no source")); /* L4 has no sourced idle power */
    q.precision = "int8";
    q.stack = "reference"; /* never measured: no model, no number */
    assert_int_equal(ec_advise_answer(&a, &q, &an), 0);
    assert_int_equal(an.method, EC_ANSWER_NONE);
    assert_true(strlen(an.reason) > 0);
    ec_advisor_free(&a);
}

/* ---- tokenizer ---- */

static size_t count_name(const char *src, const char *name)
{
    ec_pytoken *t;
    size_t n, c = 0;
    assert_int_equal(ec_py_tokenize(src, strlen(src), &t, &n), 0);
    for (size_t i = 0; i < n; i++)
        c += t[i].kind == EC_PYT_NAME && !strcmp(t[i].text, name);
    ec_py_tokens_free(t, n);
    return c;
}

static void test_tokenizer(void **state)
{
    (void)state;
    assert_int_equal(count_name("x = 1  # load_in_8bit\n", "load_in_8bit"), 0);
    assert_int_equal(count_name("s = 'load_in_8bit'\n", "load_in_8bit"), 0);
    assert_int_equal(count_name("s = rb\"load_in_8bit\\\"\"\n", "load_in_8bit"), 0);
    assert_int_equal(count_name("'''\nload_in_8bit\n'''\nf(load_in_8bit=1)\n", "load_in_8bit"), 1);
    ec_pytoken *t;
    size_t n;
    const char *src = "def f():\n    \"\"\"doc\n    more\"\"\"\n    g(a,\n      b)\n";
    assert_int_equal(ec_py_tokenize(src, strlen(src), &t, &n), 0);
    /* the docstring is one STRING token on line 2; b is on line 5 but in line 4's logical line */
    int saw_b = 0;
    for (size_t i = 0; i < n; i++) {
        if (t[i].kind == EC_PYT_STRING) {
            assert_int_equal(t[i].line, 2);
            assert_string_equal(t[i].text, "doc\n    more");
        }
        if (t[i].kind == EC_PYT_NAME && !strcmp(t[i].text, "b")) {
            assert_int_equal(t[i].line, 5);
            assert_int_equal(t[i].indent, 4);
            saw_b = 1;
        }
    }
    assert_true(saw_b);
    ec_py_tokens_free(t, n);
    assert_int_equal(ec_py_tokenize("s = 'open\n", 10, &t, &n), -1);
    assert_non_null(strstr(ec_last_error(), "line 1"));
    assert_int_equal(ec_py_tokenize("s = \"\"\"never closed\n", 21, &t, &n), -1);
}

/* ---- audit rules ---- */

static size_t audit(const char *src, int python, const char *rule, ec_audit_severity *sev,
                    int *line)
{
    ec_audit_findings f = {0};
    assert_int_equal(ec_audit_source(NULL, "t.py", src, strlen(src), python, &f), 0);
    size_t c = 0;
    for (size_t i = 0; i < f.n; i++)
        if (!strcmp(f.v[i].rule->id, rule)) {
            c++;
            if (sev) *sev = f.v[i].severity;
            if (line) *line = f.v[i].line;
        }
    ec_audit_findings_free(&f);
    return c;
}

static void test_rule_int8(void **state)
{
    (void)state;
    ec_audit_severity s;
    int line;
    assert_int_equal(
        audit("cfg = BitsAndBytesConfig(\n    bnb_4bit=False,\n    load_in_8bit=True,\n)\n", 1,
              "int8-default", &s, &line),
        1);
    assert_int_equal(s, EC_AUDIT_RED);
    assert_int_equal(line, 3);
    /* through a **kwargs dict */
    assert_int_equal(audit("kw = {\"load_in_8bit\": True}\nm = M.from_pretrained(i, **kw)\n", 1,
                           "int8-default", NULL, NULL),
                     1);
    assert_int_equal(audit("kw = dict(load_in_8bit=True)\n", 1, "int8-default", NULL, NULL), 1);
    /* pure INT8 is the fix */
    assert_int_equal(audit("BitsAndBytesConfig(load_in_8bit=True, llm_int8_threshold=0.0)\n", 1,
                           "int8-default", NULL, NULL),
                     0);
    /* comments, strings, docstrings never trigger */
    assert_int_equal(
        audit("# load_in_8bit=True\nx = 'load_in_8bit=True'\n\"\"\"\nload_in_8bit=True\n\"\"\"\n",
              1, "int8-default", NULL, NULL),
        0);
    assert_int_equal(audit("f(load_in_8bit=False)\n", 1, "int8-default", NULL, NULL), 0);
}

static void test_rule_nf4(void **state)
{
    (void)state;
    ec_audit_severity s;
    assert_int_equal(audit("model_id = \"Qwen/Qwen2.5-3B-Instruct\"\nc = B(load_in_4bit=True)\n", 1,
                           "nf4-small-model", &s, NULL),
                     1);
    assert_int_equal(s, EC_AUDIT_ORANGE);
    assert_int_equal(
        audit("m = A.from_pretrained(\"mistralai/Mistral-7B-v0.1\", load_in_4bit=True)\n", 1,
              "nf4-small-model", &s, NULL),
        1);
    assert_int_equal(s, EC_AUDIT_GREEN);
    assert_int_equal(
        audit("m = A.from_pretrained(path, load_in_4bit=True)\n", 1, "nf4-small-model", &s, NULL),
        1);
    assert_int_equal(s, EC_AUDIT_GRAY);
    assert_int_equal(audit("# load_in_4bit=True\n", 1, "nf4-small-model", NULL, NULL), 0);
}

static void test_rule_loop_fp8_misc(void **state)
{
    (void)state;
    int line;
    assert_int_equal(audit("for p in ps:\n    ids = tok(p)\n    out = model.generate(**ids)\n", 1,
                           "batch1-loop", NULL, &line),
                     1);
    assert_int_equal(line, 3);
    assert_int_equal(
        audit("for p in ps:\n    batch.append(p)\nout = model.generate(**tok(batch))\n", 1,
              "batch1-loop", NULL, NULL),
        0);
    assert_int_equal(audit("quantize_(model, Float8WeightOnlyConfig())\nmodel.generate(x)\n", 1,
                           "fp8-eager", NULL, NULL),
                     1);
    assert_int_equal(
        audit("quantize_(model, Float8WeightOnlyConfig())\nmodel = torch.compile(model)\n", 1,
              "fp8-eager", NULL, NULL),
        0);
    assert_int_equal(audit("# Float8WeightOnlyConfig\n", 1, "fp8-eager", NULL, NULL), 0);
    assert_int_equal(
        audit("m = AutoModelForCausalLM.from_pretrained(p, device_map={\"\": \"cpu\"})\n", 1,
              "cpu-offload", NULL, NULL),
        1);
    assert_int_equal(audit("m = AutoModelForCausalLM.from_pretrained(p, device_map=\"cuda:0\", "
                           "torch_dtype=torch.float16)\n",
                           1, "cpu-offload", NULL, NULL),
                     0);
    ec_audit_severity s;
    assert_int_equal(
        audit("m = AutoModelForCausalLM.from_pretrained(p, torch_dtype=torch.float32)\n", 1,
              "fp32-load", &s, NULL),
        1);
    assert_int_equal(s, EC_AUDIT_ORANGE);
    assert_int_equal(
        audit("m = AutoModelForCausalLM.from_pretrained(p)\n", 1, "fp32-load", &s, NULL), 1);
    assert_int_equal(s, EC_AUDIT_YELLOW);
    assert_int_equal(audit("t = AutoTokenizer.from_pretrained(p)\n", 1, "fp32-load", NULL, NULL),
                     0);
    assert_int_equal(audit("y = model(x)\n", 1, "no-inference-mode", &s, NULL), 1);
    assert_int_equal(s, EC_AUDIT_YELLOW);
    assert_int_equal(audit("with torch.inference_mode():\n    y = model(x)\n", 1,
                           "no-inference-mode", NULL, NULL),
                     0);
}

static void test_rule_requirements(void **state)
{
    (void)state;
    int line;
    assert_int_equal(audit("numpy\ntorch==2.12.0.dev20260315\n", 0, "nightly-pin", NULL, &line), 1);
    assert_int_equal(line, 2);
    assert_int_equal(audit("torchao==0.17.0.dev20260316\nbitsandbytes==0.45.0rc1\n", 0,
                           "nightly-pin", NULL, NULL),
                     2);
    ec_audit_severity s;
    int l2;
    assert_int_equal(audit("x = 1\ns = 'never closed\n", 1, "unreadable", &s, &l2), 1);
    assert_int_equal(s, EC_AUDIT_GRAY);
    assert_int_equal(l2, 2);
    assert_int_equal(audit("torch==2.5.1\ntorchvision==0.20.0.dev1\n# torch nightly\n", 0,
                           "nightly-pin", NULL, NULL),
                     0);
    assert_int_equal(audit("dependencies = [\"torch>=2.4\", \"torchao @ git+https://x\"]\n", 0,
                           "nightly-pin", NULL, NULL),
                     1);
}

/* The advisor ranks the CUDA backend's formats but bf16 (no reference source measured it). */
static void test_ranked_precisions(void **state)
{
    (void)state;
    static const ec_precision ranked[] = {EC_PREC_FP16, EC_PREC_INT8,   EC_PREC_INT8_MIXED,
                                          EC_PREC_NF4,  EC_PREC_NF4_DQ, EC_PREC_FP8};
    int n = 0;
    for (int p = 0; p < EC_PREC_COUNT; p++)
        n += ec_advise_ranks_precision((ec_precision)p);
    assert_int_equal(n, (int)(sizeof ranked / sizeof *ranked));
    for (size_t i = 0; i < sizeof ranked / sizeof *ranked; i++)
        assert_true(ec_advise_ranks_precision(ranked[i]));
    assert_false(ec_advise_ranks_precision(EC_PREC_BF16));
    assert_false(ec_advise_ranks_precision(EC_PREC_F32)); /* the CPU reference alone */
    assert_false(ec_advise_ranks_precision((ec_precision)EC_PREC_COUNT));
}

static void test_sarif(void **state)
{
    (void)state;
    ec_audit_findings f = {0};
    const char *src = "BitsAndBytesConfig(load_in_8bit=True)\n";
    assert_int_equal(ec_audit_source(NULL, "./src/infer.py", src, strlen(src), 1, &f), 0);
    assert_int_equal(f.n, 1);
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    assert_int_equal(ec_audit_write_sarif(mem, &f), 0);
    fclose(mem);
    cJSON *o = cJSON_Parse(buf);
    assert_non_null(o);
    assert_string_equal(cJSON_GetObjectItem(o, "version")->valuestring, "2.1.0");
    cJSON *run = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "runs"), 0);
    cJSON *driver = cJSON_GetObjectItem(cJSON_GetObjectItem(run, "tool"), "driver");
    assert_non_null(cJSON_GetObjectItem(driver, "name"));
    size_t nrules;
    ec_audit_rules(&nrules);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(driver, "rules")), (int)nrules);
    cJSON *r = cJSON_GetArrayItem(cJSON_GetObjectItem(run, "results"), 0);
    assert_string_equal(cJSON_GetObjectItem(r, "ruleId")->valuestring, "int8-default");
    assert_string_equal(cJSON_GetObjectItem(r, "level")->valuestring, "error");
    assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "message"), "text"));
    cJSON *loc = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "locations"), 0),
                                     "physicalLocation");
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(loc, "artifactLocation"), "uri")->valuestring,
        "src/infer.py");
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(loc, "region"), "startLine")->valueint,
                     1);
    cJSON_Delete(o);
    free(buf);
    ec_audit_findings_free(&f);
}

static int free_data(void **state)
{
    (void)state;
    if (data_loaded) ec_advise_data_free(&data);
    data_loaded = 0;
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_workload),
        cmocka_unit_test(test_quantities),
        cmocka_unit_test(test_footprint),
        cmocka_unit_test(test_tables_cite_sources),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_calibration_idle),
        cmocka_unit_test(test_model_fit_and_loo),
        cmocka_unit_test(test_answers),
        cmocka_unit_test(test_tokenizer),
        cmocka_unit_test(test_rule_int8),
        cmocka_unit_test(test_rule_nf4),
        cmocka_unit_test(test_rule_loop_fp8_misc),
        cmocka_unit_test(test_rule_requirements),
        cmocka_unit_test(test_ranked_precisions),
        cmocka_unit_test(test_sarif),
    };
    return cmocka_run_group_tests(tests, load_data, free_data);
}
