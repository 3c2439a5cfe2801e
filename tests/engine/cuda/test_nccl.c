/* test_nccl.c — NCCL through dlopen (src/engine/cuda/nccl.c), host side, no GPU needed: with
 * ECOCOMPUTE_NCCL_LIBRARY naming a missing file, loading fails with one line that says what
 * needs NCCL and how to point at it; with the loader's own library (test_nccl_found, skipped
 * where none is installed), the version is NCCL 2's and a communicator id is made (ncclGetUniqueId
 * needs no GPU). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ecocompute/common.h"
#include "engine/cuda/nccl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void missing_library(void **state)
{
    (void)state;
    assert_int_equal(ec_nccl_load(), -1);
    const char *e = ec_last_error();
    assert_non_null(strstr(e, "tensor parallelism over GPUs needs NCCL"));
    assert_non_null(strstr(e, getenv("ECOCOMPUTE_NCCL_LIBRARY")));
    assert_non_null(strstr(e, "ECOCOMPUTE_NCCL_LIBRARY"));
    assert_null(strchr(e, '\n'));
    unsigned char id[EC_NCCL_ID_BYTES];
    assert_int_equal(ec_nccl_unique_id(id), -1);
    assert_int_equal(ec_nccl_version(), 0);
}

static void found_library(void **state)
{
    (void)state;
    assert_int_equal(ec_nccl_version() / 10000, 2);
    unsigned char id[EC_NCCL_ID_BYTES], zero[EC_NCCL_ID_BYTES] = {0};
    if (ec_nccl_unique_id(id) != 0) fail_msg("%s", ec_last_error());
    assert_memory_not_equal(id, zero, sizeof id);
}

int main(void)
{
    const char *path = getenv("ECOCOMPUTE_NCCL_LIBRARY");
    if (path && *path) {
        const struct CMUnitTest tests[] = {cmocka_unit_test(missing_library)};
        return cmocka_run_group_tests(tests, NULL, NULL);
    }
    if (ec_nccl_load() != 0) {
        printf("skipped: %s\n", ec_last_error());
        return 77;
    }
    const struct CMUnitTest tests[] = {cmocka_unit_test(found_library)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
