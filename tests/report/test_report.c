/* test_report.c — the report model and its text: per-configuration statistics and the Δ vs the
 * fp16 baseline of the same kernels (never another family's), the greenest configuration, a
 * source's summary row giving way to its runs, the batch law fitted over a planted B^-b, number
 * formatting, escaping of hostile names (HTML and the JSON inside <script>), the views of an
 * empty input, and the previous-report signatures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ecocompute/report.h"
#include "report/report_internal.h"

#define NEAR(a, b, tol) assert_true(fabs((a) - (b)) <= (tol))

/* One run: energy e J/1k tok gross, the rest plausible. */
static ec_run_record run(const char *model, const char *prec, const char *kernels, int batch,
                         int index, double e)
{
    ec_run_record r;
    ec_run_record_init(&r);
    snprintf(r.source, sizeof r.source, "ecocompute");
    snprintf(r.gpu_name, sizeof r.gpu_name, "Test GPU");
    snprintf(r.model, sizeof r.model, "%s", model);
    snprintf(r.precision, sizeof r.precision, "%s", prec);
    snprintf(r.kernels, sizeof r.kernels, "%s", kernels);
    snprintf(r.session_id, sizeof r.session_id, "s1");
    r.energy_definition = EC_ENERGY_GROSS;
    r.params_b = 1.0;
    r.batch = batch;
    r.prompt_len = 64;
    r.gen_len = 100;
    r.run_index = index;
    r.gate = EC_GATE_PASS;
    r.j_per_1k_gross = e;
    r.j_per_1k_net = e / 2;
    r.gpu_energy_j = e * r.gen_len * batch / 1000.0;
    r.gpu_energy_net_j = r.gpu_energy_j / 2;
    r.tok_s = 1000;
    r.avg_power_w = 300;
    return r;
}

/* Renders r[0..n) to a string (free it). */
static char *render(const ec_run_record *r, size_t n, ec_report_format fmt)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    ec_report_options o = {.title = "t", .input = "test"};
    assert_int_equal(ec_report_write(f, fmt, r, n, &o), 0);
    fclose(f);
    return buf;
}

static void deltas_stay_within_kernels(void **state)
{
    (void)state;
    /* reference fp16 100, reference int8 150 (+50 %); fused fp16 60, fused int8 45 (−25 %) */
    ec_run_record r[12];
    size_t n = 0;
    for (int i = 0; i < 3; i++) {
        r[n++] = run("m", "fp16", "reference", 1, i, 100 + (i - 1));
        r[n++] = run("m", "int8", "reference", 1, i, 150 + (i - 1));
        r[n++] = run("m", "fp16", "fused", 1, i, 60 + (i - 1));
        r[n++] = run("m", "int8", "fused", 1, i, 45 + (i - 1));
    }
    rp_model m;
    assert_int_equal(rp_model_build(&m, r, n, NULL), 0);
    assert_int_equal(m.nc, 4);
    int seen = 0;
    for (size_t i = 0; i < m.nc; i++) {
        const rp_config *c = &m.c[i];
        assert_int_equal(c->e.n, 3);
        NEAR(c->e.sd, 1.0, 1e-12);
        NEAR(c->req_gross.mean, c->e.mean * 100 / 1000.0, 1e-9); /* J per sequence */
        if (strcmp(c->key->precision, "int8")) continue;
        assert_true(c->has_delta);
        assert_string_equal(m.c[c->baseline].key->kernels, c->key->kernels);
        NEAR(c->delta.pct, strcmp(c->key->kernels, "fused") ? 50.0 : -25.0, 1e-9);
        assert_true(c->delta.pct_lo < c->delta.pct && c->delta.pct < c->delta.pct_hi);
        seen++;
    }
    assert_int_equal(seen, 2);
    /* the greenest of the one GPU × model: fused int8 */
    assert_int_equal(m.nbest, 1);
    assert_string_equal(m.c[m.best[0]].label, "int8 · fused · B=1");
    /* precisions view: one experiment, fp16 first, reference before fused */
    assert_int_equal(m.nprec, 1);
    assert_string_equal(m.c[m.prec[0].cfg[0]].key->kernels, "reference");
    assert_string_equal(m.c[m.prec[0].cfg[1]].key->precision, "fp16");
    rp_model_free(&m);
}

static void batch_law_recovered(void **state)
{
    (void)state;
    /* J/1k = 1000·B^-0.8 at B = 1, 4, 16, 64: J per request (100 tokens) = 100·B^-0.8 */
    ec_run_record r[8];
    size_t n = 0;
    for (int b = 1; b <= 64; b *= 4)
        for (int i = 0; i < 2; i++) r[n++] = run("m", "fp16", "fused", b, i, 1000 * pow(b, -0.8) * (i ? 1.01 : 0.99));
    rp_model m;
    assert_int_equal(rp_model_build(&m, r, n, NULL), 0);
    assert_int_equal(m.nbatch, 1);
    char members[8];
    rp_batch_fit f;
    assert_int_equal(rp_batch_series_fit(&m, &m.batch[0], 0, members, &f), 0);
    assert_true(f.ok);
    NEAR(f.fit.b, 0.8, 1e-3);
    NEAR(f.fit.a, 100, 0.5);
    double lo, hi;
    rp_batch_band(&f, 8, &lo, &hi);
    assert_true(lo < 100 * pow(8, -0.8) && 100 * pow(8, -0.8) < hi);
    rp_model_free(&m);
}

static void summary_rows_give_way_to_runs(void **state)
{
    (void)state;
    /* a source's summary row (run_index −1) of a configuration whose runs are loaded too: the
     * runs stand for it; a summary of a configuration without runs stays */
    ec_run_record r[4] = {run("m", "fp16", "", 1, -1, 99), run("m", "fp16", "", 1, 0, 100),
                          run("m", "fp16", "", 1, 1, 102), run("m", "int8", "", 1, -1, 80)};
    rp_model m;
    assert_int_equal(rp_model_build(&m, r, 4, NULL), 0);
    assert_int_equal(m.nc, 2);
    assert_int_equal(m.c[0].e.n, 2);
    NEAR(m.c[0].e.mean, 101, 1e-9);
    assert_true(ec_record_is_summary(m.c[1].key));
    NEAR(m.c[1].delta.pct, -100.0 * 21 / 101, 1e-9); /* Δ vs the runs' mean */
    rp_model_free(&m);
}

static void numbers(void **state)
{
    (void)state;
    char b[40];
    assert_string_equal(rp_num(b, sizeof b, NAN), "–");
    assert_string_equal(rp_num(b, sizeof b, 0), "0.00");
    assert_string_equal(rp_num(b, sizeof b, 0.012345), "0.0123");
    assert_string_equal(rp_num(b, sizeof b, 3.14159), "3.14");
    assert_string_equal(rp_num(b, sizeof b, 42.44), "42.4");
    assert_string_equal(rp_num(b, sizeof b, 512.4), "512");
    assert_string_equal(rp_num(b, sizeof b, 18041.2), "18,041");
    assert_string_equal(rp_num(b, sizeof b, -1234567), "-1,234,567");
}

static void hostile_names_escaped(void **state)
{
    (void)state;
    ec_run_record r[2] = {run("</script><img src=x onerror=alert(1)>", "fp16", "fused", 1, 0, 10),
                          run("</script><img src=x onerror=alert(1)>", "int8", "fused", 1, 0, 9)};
    char *html = render(r, 2, EC_REPORT_HTML);
    assert_null(strstr(html, "<img src=x"));
    assert_null(strstr(html, "</script><img"));
    assert_non_null(strstr(html, "&lt;/script&gt;&lt;img src=x"));       /* HTML text */
    assert_non_null(strstr(html, "\\u003c/script\\u003e\\u003cimg src=x")); /* JSON in <script> */
    free(html);
    char *md = render(r, 2, EC_REPORT_MARKDOWN);
    assert_non_null(strstr(md, "| </script><img src=x onerror=alert(1)> |")); /* md: as text */
    free(md);
}

static void empty_input_says_why(void **state)
{
    (void)state;
    char *html = render(NULL, 0, EC_REPORT_HTML);
    size_t empties = 0, sections = 0;
    for (const char *p = html; (p = strstr(p, "<p class=\"empty\"")); p++) empties++;
    for (const char *p = html; (p = strstr(p, "<section class=\"view\"")); p++) sections++;
    assert_int_equal(sections, 8);
    assert_int_equal(empties, 8);
    free(html);
    char *md = render(NULL, 0, EC_REPORT_MARKDOWN);
    assert_non_null(strstr(md, "> The input holds no runs."));
    free(md);
}

static void marker_recognised(void **state)
{
    (void)state;
    char path[] = "/tmp/test_report_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    ec_run_record r[1] = {run("m", "fp16", "fused", 1, 0, 10)};
    for (int k = 0; k < 3; k++) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        if (k < 2) assert_int_equal(ec_report_write(f, k ? EC_REPORT_MARKDOWN : EC_REPORT_HTML, r, 1, NULL), 0);
        else fputs("<!DOCTYPE html><html><head><meta name=\"generator\" content=\"other\">", f);
        fclose(f);
        assert_int_equal(ec_output_check(path, "report", ec_report_signatures, 0), k < 2 ? 0 : -1);
    }
    unlink(path);
    assert_int_equal(ec_output_check(path, "report", ec_report_signatures, 0), 0); /* new */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(deltas_stay_within_kernels),
        cmocka_unit_test(batch_law_recovered),
        cmocka_unit_test(summary_rows_give_way_to_runs),
        cmocka_unit_test(numbers),
        cmocka_unit_test(hostile_names_escaped),
        cmocka_unit_test(empty_input_says_why),
        cmocka_unit_test(marker_recognised),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
