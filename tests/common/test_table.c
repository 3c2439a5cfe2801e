/* test_table.c — the shared table renders the same data as text, CSV and JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ecocompute/common.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static char *render(const ec_table *t, ec_format fmt)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ec_table_print(t, fmt, f);
    fclose(f);
    return buf;
}

static ec_table *sample(void)
{
    ec_table *t = ec_table_new();
    int name = ec_table_column(t, "gpu", "GPU");
    int energy = ec_table_column(t, "energy_j", "Energy (J)");
    ec_table_row(t);
    ec_table_text(t, name, "H100, \"SXM\"");
    ec_table_number(t, energy, "%.1f", 600.04);
    ec_table_row(t);
    ec_table_text(t, name, "idle");
    ec_table_number(t, energy, "%.1f", NAN); /* not data: empty cell */
    return t;
}

static void csv_quotes_and_empty_cells(void **state)
{
    (void)state;
    ec_table *t = sample();
    char *s = render(t, EC_FORMAT_CSV);
    assert_string_equal(s, "gpu,energy_j\r\n\"H100, \"\"SXM\"\"\",600.0\r\nidle,\r\n");
    free(s);
    ec_table_free(t);
}

static void json_keeps_numbers_and_nulls(void **state)
{
    (void)state;
    ec_table *t = sample();
    char *s = render(t, EC_FORMAT_JSON);
    cJSON *j = cJSON_Parse(s);
    assert_non_null(j);
    assert_int_equal(cJSON_GetArraySize(j), 2);
    cJSON *e0 = cJSON_GetObjectItem(cJSON_GetArrayItem(j, 0), "energy_j");
    assert_true(cJSON_IsNumber(e0));
    assert_true(fabs(e0->valuedouble - 600.04) < 1e-9); /* full precision, not the printed one */
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetArrayItem(j, 1), "energy_j")));
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(j, 0), "gpu")->valuestring,
                        "H100, \"SXM\"");
    cJSON_Delete(j);
    free(s);
    ec_table_free(t);
}

static void text_aligns_numbers_right(void **state)
{
    (void)state;
    ec_table *t = sample();
    char *s = render(t, EC_FORMAT_TABLE);
    assert_string_equal(s, "GPU          Energy (J)\n"
                           "H100, \"SXM\"       600.0\n"
                           "idle                  -\n");
    free(s);
    ec_table_free(t);
}

static void format_names(void **state)
{
    (void)state;
    ec_format f;
    assert_int_equal(ec_format_parse("csv", &f), 0);
    assert_int_equal(f, EC_FORMAT_CSV);
    assert_int_equal(ec_format_parse("yaml", &f), -1);
    assert_non_null(strstr(ec_last_error(), "yaml"));
}

/* The widest line of text, in code points. */
static size_t widest(const char *s)
{
    size_t w = 0, cur = 0;
    for (; *s; s++) {
        if (*s == '\n') {
            if (cur > w) w = cur;
            cur = 0;
        } else if (((unsigned char)*s & 0xC0) != 0x80) {
            cur++;
        }
    }
    return cur > w ? cur : w;
}

/* A table of a 60-character name, four 12-character figures of priority 0..3, a sentence. */
static ec_table *wide_sample(void)
{
    ec_table *t = ec_table_new();
    int name = ec_table_column(t, "name", "Name");
    int fig[4];
    for (int k = 0; k < 4; k++) {
        char key[8];
        snprintf(key, sizeof key, "f%d", k);
        fig[k] = ec_table_column(t, key, key);
        ec_table_priority(t, fig[k], k);
    }
    int note = ec_table_column(t, "note", "Note");
    ec_table_wrap(t, note);
    ec_table_row(t);
    ec_table_text(t, name, "models/a-very-long-directory-name/with-a-long-file-name.bin");
    for (int k = 0; k < 4; k++) ec_table_number(t, fig[k], "%.1f", 1234567890.5 + k);
    ec_table_text(t, note, "a sentence long enough to need more than one line once the table is "
                           "fitted to its width, ending here");
    return t;
}

static void narrow_text_leaves_out_shortens_and_wraps(void **state)
{
    (void)state;
    ec_table *t = wide_sample();
    ec_table_set_text_width(80);
    char *s = render(t, EC_FORMAT_TABLE);
    assert_true(widest(s) <= 80);
    /* the highest priority numbers go first; priority 0 stays */
    assert_null(strstr(s, "f3"));
    assert_non_null(strstr(s, "f0"));
    assert_non_null(strstr(s, "1234567890.5"));
    /* the long name keeps its start and end */
    assert_non_null(strstr(s, "models/"));
    assert_non_null(strstr(s, "…"));
    assert_non_null(strstr(s, "name.bin"));
    /* the sentence is whole, over several lines (more than header + one row) */
    assert_non_null(strstr(s, "ending here"));
    size_t lines = 0;
    for (const char *p = s; *p; p++) lines += *p == '\n';
    assert_true(lines > 2);
    free(s);
    /* CSV and JSON keep every column whatever the width */
    s = render(t, EC_FORMAT_CSV);
    assert_non_null(strstr(s, "name,f0,f1,f2,f3,note"));
    free(s);
    /* no limit: everything on one line per row */
    ec_table_set_text_width(0);
    s = render(t, EC_FORMAT_TABLE);
    assert_non_null(strstr(s, "f3"));
    assert_non_null(strstr(s, "with-a-long-file-name.bin"));
    assert_true(widest(s) > 120);
    free(s);
    ec_table_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(csv_quotes_and_empty_cells),
        cmocka_unit_test(json_keeps_numbers_and_nulls),
        cmocka_unit_test(text_aligns_numbers_right),
        cmocka_unit_test(format_names),
        cmocka_unit_test(narrow_text_leaves_out_shortens_and_wraps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
