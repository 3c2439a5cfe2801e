/* test_dataset.c — export files: CSV and JSON round trips that are exact (awkward text, NaN,
 * extreme numbers), detection of files that are not exports, malformed inputs (each a clean
 * error, never a crash: the reader is a parser of untrusted files), and that
 * docs/data-schema.md documents exactly the column set. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "ecocompute/store.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void sample(ec_run_record *r, int i)
{
    ec_run_record_init(r);
    snprintf(r->source, sizeof r->source, i ? "seed, \"quoted\"\nnew line" : "ecocompute");
    snprintf(r->licence, sizeof r->licence, "CC-BY-4.0");
    r->energy_definition = (ec_energy_definition)(i % 3);
    snprintf(r->session_id, sizeof r->session_id, "s-%d", i);
    r->run_id = 1000 + i;
    snprintf(r->gpu_name, sizeof r->gpu_name, "NVIDIA H100 80GB HBM3 — ünïcode");
    snprintf(r->model, sizeof r->model, "Llama-2-7B");
    snprintf(r->precision, sizeof r->precision, "int8-mixed");
    r->batch = 8;
    r->prompt_len = -1;
    r->gen_len = 256;
    r->run_index = i;
    r->gate = (ec_gate_status)(i % 4);
    r->power_limit_w = 700;
    r->prefill.time_s = 0.1 + i / 3.0;
    r->prefill.tokens = 512;
    r->decode.gpu_energy_j = DBL_MAX;
    r->decode.cpu_energy_j = DBL_MIN;
    r->tok_s = 1.0 / 3.0;
    r->j_per_1k_gross = -0.0;
    r->energy_j_per_1k = 1e-300;
    r->clock_event_reasons = 0xffffffffffffffffull;
    snprintf(r->gpu_energy_method, sizeof r->gpu_energy_method, "counter");
}

/* Field-by-field equality, NaN equal to NaN and -0.0 to -0.0. */
static void assert_same(const ec_run_record *a, const ec_run_record *b)
{
    size_t n;
    const ec_column *c = ec_run_columns(&n);
    for (size_t j = 0; j < n; j++) {
        const char *p = (const char *)a + c[j].offset, *q = (const char *)b + c[j].offset;
        if (c[j].type == EC_COL_TEXT) {
            assert_string_equal(p, q);
        } else if (c[j].type == EC_COL_REAL) {
            double x = *(const double *)(const void *)p, y = *(const double *)(const void *)q;
            if (!(isnan(x) && isnan(y)) && memcmp(&x, &y, sizeof x) != 0)
                fail_msg("%s: %.17g != %.17g", c[j].name, x, y);
        } else {
            size_t size = c[j].type == EC_COL_HEX    ? sizeof(unsigned long long)
                          : c[j].type == EC_COL_LONG ? sizeof(long)
                                                     : sizeof(int);
            if (memcmp(p, q, size) != 0) fail_msg("%s differs", c[j].name);
        }
    }
}

static void round_trip(ec_export_format fmt)
{
    ec_run_record in[4];
    for (int i = 0; i < 4; i++)
        sample(&in[i], i);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(ec_dataset_write(f, fmt, in, 4), 0);
    fclose(f);
    ec_run_record *out;
    size_t n;
    assert_int_equal(ec_dataset_parse("mem", buf, len, &out, &n), 0);
    assert_int_equal(n, 4);
    for (int i = 0; i < 4; i++)
        assert_same(&in[i], &out[i]);
    free(out);
    free(buf);
}

static void test_csv_round_trip(void **state)
{
    (void)state;
    round_trip(EC_EXPORT_CSV);
}

static void test_json_round_trip(void **state)
{
    (void)state;
    round_trip(EC_EXPORT_JSON);
}

static void test_jsonl_round_trip(void **state)
{
    (void)state;
    round_trip(EC_EXPORT_JSONL);
}

static void test_empty_export(void **state)
{
    (void)state;
    for (int fmt = EC_EXPORT_CSV; fmt <= EC_EXPORT_JSON; fmt++) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        assert_int_equal(ec_dataset_write(f, (ec_export_format)fmt, NULL, 0), 0);
        fclose(f);
        ec_run_record *out;
        size_t n = 99;
        assert_int_equal(ec_dataset_parse("mem", buf, len, &out, &n), 0);
        assert_int_equal(n, 0);
        free(out);
        free(buf);
    }
}

/* A column subset in another order reads; absent columns stay unknown. */
static void test_csv_subset(void **state)
{
    (void)state;
    const char *text = "source,tok_s,model,gate\r\nx,12.5,m,pass\n\nx,,m2,fail";
    ec_run_record *r;
    size_t n;
    assert_int_equal(ec_dataset_parse("mem", text, strlen(text), &r, &n), 0);
    assert_int_equal(n, 2);
    assert_true(r[0].tok_s == 12.5);
    assert_true(isnan(r[1].tok_s));
    assert_string_equal(r[1].model, "m2");
    assert_int_equal(r[1].gate, EC_GATE_FAIL);
    assert_int_equal(r[0].batch, -1);
    assert_int_equal(r[0].energy_definition, EC_ENERGY_UNKNOWN);
    free(r);
}

static void test_not_an_export(void **state)
{
    (void)state;
    const char *texts[] = {"", "model,precision\nx,fp16\n", "[{\"source\": \"x\"}]",
                           "{\"rows\": []}", "\xff\xfe garbage", "   \n"};
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        ec_run_record *r;
        size_t n;
        assert_int_equal(ec_dataset_parse("f.csv", texts[i], strlen(texts[i]), &r, &n), -1);
        assert_non_null(strstr(ec_last_error(), "f.csv: not an ecocompute export"));
        assert_null(r);
    }
}

/* Malformed exports: each fails with a message naming the file; none crashes or leaks. */
static void test_malformed(void **state)
{
    (void)state;
    static const struct {
        const char *text, *why;
    } cases[] = {
        {"source,nope\nx,1\n", "unknown column"},
        {"source,model,model\nx,a,b\n", "appears twice"},
        {"source,model\nx\n", "1 fields, the header has 2"},
        {"source,model\nx,a,b\n", "3 fields"},
        {"source,model\n\"x,a\n", "unterminated"},
        {"source,model\n\"x\"y,a\n", "stray quote"},
        {"source,model\nx\"y,a\n", "stray quote"},
        {"source,tok_s\nx,12abc\n", "bad tok_s"},
        {"source,batch\nx,1.5\n", "bad batch"},
        {"source,batch\nx,99999999999\n", "bad batch"},
        {"source,gate\nx,maybe\n", "bad gate"},
        {"source,energy_definition\nx,sometimes\n", "bad energy_definition"},
        {"source,clock_event_reasons\nx,12\n", "bad clock_event_reasons"},
        {"source,clock_event_reasons\nx,0x-1\n", "bad clock_event_reasons"},
        {"source,precision\nx,this-precision-name-is-far-too-long\n", "longer than"},
        {"{\"ecocompute_export\": \"summary\", \"schema_version\": 2, \"rows\": []}", "summary"},
        {"{\"ecocompute_export\": \"runs\", \"schema_version\": 99, \"rows\": []}", "newer"},
        {"{\"ecocompute_export\": \"runs\", \"rows\": []}", "missing"},
        {"{\"ecocompute_export\": \"runs\", \"schema_version\": 2}", "no \"rows\""},
        {"{\"ecocompute_export\": \"runs\", \"schema_version\": 2, \"rows\": [1]}",
         "not an object"},
        {"{\"ecocompute_export\": \"runs\", \"schema_version\": 2, \"rows\": [{\"x\": 1}]}",
         "unknown column"},
        {"{\"ecocompute_export\": \"runs\", \"schema_version\": 2, \"rows\": [{\"batch\": 1.5}]}",
         "whole number"},
        {"{\"ecocompute_export\": \"runs\", \"schema_version\": 2, \"rows\": [{\"model\": 3}]}",
         "wrong JSON type"},
        {"{\"ecocompute_export\": \"runs\", \"schema_version\": 2, \"rows\": [{\"tok_s\": \"1\"}]}",
         "wrong JSON type"},
        {"{\"ecocompute_export\": \"runs\", \"schema_version\": 2, \"rows\": [{\"gate\": \"?\"}]}",
         "bad gate"},
        {"{\"ecocompute_export\": 7, \"schema_version\": 2, \"rows\": []}", "cannot be imported"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ec_run_record *r;
        size_t n;
        int rc = ec_dataset_parse("bad.csv", cases[i].text, strlen(cases[i].text), &r, &n);
        if (rc != -1) fail_msg("case %zu parsed", i);
        if (!strstr(ec_last_error(), cases[i].why) || !strstr(ec_last_error(), "bad.csv"))
            fail_msg("case %zu: '%s' lacks '%s'", i, ec_last_error(), cases[i].why);
        assert_null(r);
    }
    /* Every prefix of a valid export: a clean verdict either way. */
    ec_run_record in[2];
    sample(&in[0], 0);
    sample(&in[1], 1);
    for (int fmt = EC_EXPORT_CSV; fmt <= EC_EXPORT_JSONL; fmt++) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        ec_dataset_write(f, (ec_export_format)fmt, in, 2);
        fclose(f);
        for (size_t k = 0; k < len; k += 7) {
            ec_run_record *r;
            size_t n;
            if (ec_dataset_parse("cut", buf, k, &r, &n) == 0) free(r);
        }
        free(buf);
    }
}

/* docs/data-schema.md lists every column, in order, with its unit (a table row per column). */
static void test_documented(void **state)
{
    (void)state;
    FILE *f = fopen(EC_SOURCE_DIR "/docs/data-schema.md", "r");
    assert_non_null(f);
    size_t n, next = 0;
    const ec_column *c = ec_run_columns(&n);
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        char name[128];
        if (sscanf(line, "| `%127[^`]` |", name) != 1) continue;
        if (next < n && !strcmp(name, c[next].name)) {
            if (*c[next].unit && !strstr(line, c[next].unit))
                fail_msg("docs: %s lacks its unit %s", name, c[next].unit);
            next++;
        }
    }
    fclose(f);
    if (next != n) fail_msg("docs/data-schema.md: column %s missing or out of order", c[next].name);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_csv_round_trip), cmocka_unit_test(test_json_round_trip),
        cmocka_unit_test(test_jsonl_round_trip),
        cmocka_unit_test(test_empty_export),   cmocka_unit_test(test_csv_subset),
        cmocka_unit_test(test_not_an_export),  cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_documented),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
