/* test_group.c — ec_records_latest: of a configuration measured by several commits only the runs
 * of the commit whose latest run started last stay (also when that commit is the older code,
 * measured again); runs without a commit (the seeds') and configurations of one commit are kept
 * whole, in their order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "ecocompute/analysis.h"
#include "ecocompute/store.h"

static ec_run_record run(const char *model, const char *commit, const char *started, int id)
{
    ec_run_record r;
    ec_run_record_init(&r);
    snprintf(r.source, sizeof r.source, "ecocompute");
    snprintf(r.gpu_name, sizeof r.gpu_name, "NVIDIA H200");
    snprintf(r.model, sizeof r.model, "%s", model);
    snprintf(r.precision, sizeof r.precision, "fp16");
    snprintf(r.kernels, sizeof r.kernels, "fused");
    snprintf(r.git_commit, sizeof r.git_commit, "%s", commit);
    snprintf(r.timestamp_utc, sizeof r.timestamp_utc, "%s", started);
    r.batch = 1;
    r.prompt_len = 512;
    r.gen_len = 256;
    r.run_id = id;
    return r;
}

static void newest_commit_per_configuration(void **state)
{
    (void)state;
    ec_run_record r[] = {
        run("A", "old", "2026-11-01T10:00:00Z", 1),
        run("B", "", "", 2), /* a seed's row: no commit */
        run("A", "new", "2026-11-02T10:00:00Z", 3),
        run("C", "one", "2026-11-01T09:00:00Z", 4),
        run("A", "old", "2026-11-03T10:00:00Z", 5), /* the old code, measured again last */
        run("B", "", "", 6),
        run("C", "one", "2026-11-01T09:00:05Z", 7),
        run("D", "x", "2026-11-05T00:00:00Z", 8),
        run("D", "y", "2026-11-04T00:00:00Z", 9),
    };
    size_t n = sizeof r / sizeof *r;
    assert_int_equal(ec_records_latest(r, &n), 0);
    const int kept[] = {1, 2, 4, 5, 6, 7, 8};
    assert_int_equal(n, sizeof kept / sizeof *kept);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(r[i].run_id, kept[i]);
}

static void nothing_to_leave_out(void **state)
{
    (void)state;
    ec_run_record r[] = {run("A", "c", "2026-11-01T10:00:00Z", 1),
                         run("A", "c", "2026-11-01T10:00:09Z", 2)};
    size_t n = 2;
    assert_int_equal(ec_records_latest(r, &n), 0);
    assert_int_equal(n, 2);
    n = 0;
    assert_int_equal(ec_records_latest(r, &n), 0);
    assert_int_equal(n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(newest_commit_per_configuration),
        cmocka_unit_test(nothing_to_leave_out),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
