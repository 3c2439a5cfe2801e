/* test_csv.c — the RFC 4180 reader: quoting, CRLF, BOM, blank lines, a missing final newline,
 * and malformed input rejected with the line named (never a crash: see also fuzz_csv). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "common/csv.h"
#include "ecocompute/common.h"

static ec_csv parse_ok(const char *text)
{
    ec_csv c;
    int rc = ec_csv_parse(text, strlen(text), "t.csv", &c);
    if (rc) fail_msg("%s", ec_last_error());
    return c;
}

static void quoting_and_line_ends(void **state)
{
    (void)state;
    ec_csv c = parse_ok("\xEF\xBB\xBFgpu,note\r\n\"H100, SXM\",\"say \"\"hi\"\"\"\r\n\n"
                        "A800,\"two\nlines\"\nT4,");
    assert_int_equal(c.nrows, 4);
    assert_string_equal(c.rows[0].fields[0], "gpu"); /* BOM dropped */
    assert_string_equal(c.rows[1].fields[0], "H100, SXM");
    assert_string_equal(c.rows[1].fields[1], "say \"hi\"");
    assert_string_equal(c.rows[2].fields[1], "two\nlines");
    assert_int_equal(c.rows[3].nfields, 2); /* trailing comma: an empty last field */
    assert_string_equal(c.rows[3].fields[1], "");
    assert_int_equal(ec_csv_column(&c, "note"), 1);
    assert_int_equal(ec_csv_column(&c, "absent"), -1);
    ec_csv_free(&c);
    c = parse_ok("");
    assert_int_equal(c.nrows, 0);
    ec_csv_free(&c);
    c = parse_ok("a,,b\r"); /* bare CR ends a record too */
    assert_int_equal(c.nrows, 1);
    assert_int_equal(c.rows[0].nfields, 3);
    ec_csv_free(&c);
}

static void malformed_is_rejected(void **state)
{
    (void)state;
    const struct {
        const char *text;
        size_t len;
        const char *why;
    } bad[] = {
        {"a,b\nx\"y,1\n", 10, "t.csv:2: malformed CSV: quote inside an unquoted field"},
        {"a\n\"open,1\n", 10, "t.csv:3: malformed CSV: unterminated quoted field"},
        {"\"ab\"c,1\n", 8, "t.csv:1: malformed CSV: text after a closing quote"},
        {"a,b\0c\n", 6, "t.csv:1: malformed CSV: NUL byte"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ec_csv c;
        assert_int_equal(ec_csv_parse(bad[i].text, bad[i].len, "t.csv", &c), -1);
        assert_string_equal(ec_last_error(), bad[i].why);
        assert_null(c.rows);
    }
}

static void too_many_fields(void **state)
{
    (void)state;
    static char text[2 * (EC_CSV_MAX_FIELDS + 2)];
    size_t n = 0;
    for (int i = 0; i < EC_CSV_MAX_FIELDS + 1; i++) {
        text[n++] = 'x';
        text[n++] = ',';
    }
    ec_csv c;
    assert_int_equal(ec_csv_parse(text, n, "t.csv", &c), -1);
    assert_non_null(strstr(ec_last_error(), "too many fields"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(quoting_and_line_ends),
        cmocka_unit_test(malformed_is_rejected),
        cmocka_unit_test(too_many_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
