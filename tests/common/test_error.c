/* test_error.c — error messages keep their cause: a message built from ec_last_error() (the
 * buffer it is written to), and context put in front by each layer, come out whole; regular-file
 * opening refuses FIFOs without blocking; outputs never replace a database or a foreign file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ecocompute/common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void test_message_from_itself(void **state)
{
    (void)state;
    ec_set_error("safetensors: header too long");
    /* The old message is an argument of the new one, written to the same buffer. */
    assert_int_equal(ec_set_error("model %s: %s", "X", ec_last_error()), -1);
    assert_string_equal(ec_last_error(), "model X: safetensors: header too long");
}

static void test_context(void **state)
{
    (void)state;
    ec_set_error("tensor 'w': shape [2] but config.json implies [3]");
    assert_int_equal(ec_error_context("loading %s", "m.safetensors"), -1);
    ec_error_context("model %s", "Llama");
    assert_string_equal(ec_last_error(), "model Llama: loading m.safetensors: tensor 'w': shape "
                                         "[2] but config.json implies [3]");
    /* An overlong chain is cut, never overrun. */
    for (int i = 0; i < 100; i++)
        ec_error_context("layer %d", i);
    assert_true(strlen(ec_last_error()) < 512);
    assert_non_null(strstr(ec_last_error(), "layer 99: layer 98"));
}

static void test_fifo_refused(void **state)
{
    (void)state;
    char dir[] = "/tmp/ec_error_XXXXXX", fifo[64];
    assert_non_null(mkdtemp(dir));
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    /* No writer ever opens it: a blocking open would hang this test. */
    assert_null(ec_fopen_regular(fifo));
    assert_non_null(strstr(ec_last_error(), "is a FIFO, not a regular file"));
    assert_int_equal(ec_open_regular(dir), -1);
    assert_non_null(strstr(ec_last_error(), "is a directory"));
    static const char *const sig[] = {"t_s,gpu", NULL};
    assert_int_equal(ec_output_check(fifo, "trace CSV", sig, 1), -1); /* --force or not */
    unlink(fifo);
    rmdir(dir);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_output_check(void **state)
{
    (void)state;
    char dir[] = "/tmp/ec_output_XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    static const char *const sig[] = {"source,licence,", "{\"ecocompute_export\":", NULL};
    snprintf(path, sizeof path, "%s/new.csv", dir);
    assert_int_equal(ec_output_check(path, "export", sig, 0), 0); /* absent */
    write_file(path, "source,licence,energy\n");
    assert_int_equal(ec_output_check(path, "export", sig, 0), 0); /* an earlier export */
    write_file(path, "{\n\t\"ecocompute_export\":\t\"runs\"}");
    assert_int_equal(ec_output_check(path, "export", sig, 0), 0); /* JSON, indented */
    write_file(path, "my notes\n");
    assert_int_equal(ec_output_check(path, "export", sig, 0), -1);
    assert_non_null(strstr(ec_last_error(), "--force"));
    assert_int_equal(ec_output_check(path, "export", sig, 1), 0); /* --force: a plain file */
    assert_int_equal(ec_output_check(path, "trace", sig, -1), -1);
    assert_null(strstr(ec_last_error(), "--force")); /* not offered */
    write_file(path, "SQLite format 3");
    FILE *f = fopen(path, "a");
    fputc('\0', f);
    fclose(f);
    assert_int_equal(ec_output_check(path, "export", sig, 1), -1); /* never a database */
    assert_non_null(strstr(ec_last_error(), "is a database"));
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_message_from_itself),
        cmocka_unit_test(test_context),
        cmocka_unit_test(test_fifo_refused),
        cmocka_unit_test(test_output_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
