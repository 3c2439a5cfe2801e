/* test_sweep_config.c — sweep files (`bench --config`, bench/sweeps/NAME.json): every key the
 * stored spec writes reads back, a description is allowed, a misspelt key or a bad value is refused
 * with its name, and each shipped sweep file parses and says what it measures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ecocompute/bench.h"
#include "ecocompute/common.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_stored_spec_reads_as_a_config(void **state)
{
    (void)state;
    ec_bench_spec s, back;
    ec_bench_spec_default(&s);
    snprintf(s.models[0], sizeof s.models[0], "tiny");
    s.nmodels = 1;
    s.precisions[1] = EC_PREC_NF4_DQ;
    s.nprecisions = 2;
    s.runs = 3;
    s.outliers = 2;
    s.outlier_mag = 40.0f;
    s.stabilize_auto = 1;
    assert_int_equal(ec_bench_spec_parse_shard("2/3", &s), 0);
    snprintf(s.tag, sizeof s.tag, "again");
    char *json = ec_bench_spec_to_json(&s);
    assert_int_equal(ec_bench_spec_from_config(json, &back), 0);
    free(json);
    assert_string_equal(back.models[0], "tiny");
    assert_int_equal(back.precisions[1], EC_PREC_NF4_DQ);
    assert_int_equal(back.runs, 3);
    assert_int_equal(back.shard_index, 2);
    assert_string_equal(back.tag, "again");
}

static void test_description_and_unknown_keys(void **state)
{
    (void)state;
    ec_bench_spec s;
    assert_int_equal(ec_bench_spec_from_config(
                         "{\"description\": \"what it measures\", \"models\": [\"tiny\"]}", &s),
                     0);
    assert_int_equal(ec_bench_spec_from_config("{\"models\": [\"tiny\"], \"batch\": [1, 8]}", &s),
                     -1);
    assert_non_null(strstr(ec_last_error(), "unknown key 'batch'"));
    assert_int_equal(ec_bench_spec_from_config("{\"models\": [\"tiny\"], \"description\": 3}", &s),
                     -1);
    assert_non_null(strstr(ec_last_error(), "description"));
    assert_int_equal(ec_bench_spec_from_config("{\"models\": [\"tiny\"], \"precisions\": "
                                               "[\"nf5\"]}",
                                               &s),
                     -1);
    assert_int_equal(ec_bench_spec_from_config("[1]", &s), -1);
    /* The stored spec stays lenient: a session written by another version still resumes. */
    assert_int_equal(ec_bench_spec_from_json("{\"models\": [\"tiny\"], \"retired\": 1}", &s), 0);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *t = malloc((size_t)n + 1);
    if (t && fread(t, 1, (size_t)n, f) != (size_t)n) {
        free(t);
        t = NULL;
    }
    if (t) t[n] = '\0';
    fclose(f);
    return t;
}

static void test_shipped_sweep_files(void **state)
{
    (void)state;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/bench/sweeps", EC_SOURCE_DIR);
    DIR *d = opendir(dir);
    assert_non_null(d);
    int files = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (n < 6 || strcmp(e->d_name + n - 5, ".json")) continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        char *text = slurp(path);
        assert_non_null(text);
        ec_bench_spec s;
        if (ec_bench_spec_from_config(text, &s) != 0)
            fail_msg("%s: %s", e->d_name, ec_last_error());
        if (!strstr(text, "\"description\"")) fail_msg("%s: no description", e->d_name);
        assert_true(s.nmodels > 0);
        free(text);
        files++;
    }
    closedir(d);
    assert_true(files > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stored_spec_reads_as_a_config),
        cmocka_unit_test(test_description_and_unknown_keys),
        cmocka_unit_test(test_shipped_sweep_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
