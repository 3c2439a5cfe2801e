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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(csv_quotes_and_empty_cells),
        cmocka_unit_test(json_keeps_numbers_and_nulls),
        cmocka_unit_test(text_aligns_numbers_right),
        cmocka_unit_test(format_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
