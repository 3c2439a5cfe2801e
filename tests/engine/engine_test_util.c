/* engine_test_util.c — see engine_test_util.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine/engine_test_util.h"
#include "test_data.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

ec_model *test_open_model(const char *name, uint64_t seed)
{
    ec_model_options o;
    ec_model_options_default(&o);
    o.seed = seed;
    ec_model *m = NULL;
    if (ec_model_open(&m, name, &o) != 0) fail_msg("opening %s: %s", name, ec_last_error());
    return m;
}

ec_backend *test_load(const ec_model *m, ec_precision p, int max_batch, int max_seq, int threads)
{
    ec_load_options o;
    ec_load_options_default(&o);
    o.precision = p;
    o.max_batch = max_batch;
    o.max_seq = max_seq;
    o.threads = threads;
    ec_backend *b = NULL;
    assert_int_equal(ec_backend_create(&b, "cpu"), 0);
    if (b->ops->load(b, m, &o) != 0)
        fail_msg("loading at %s: %s", ec_precision_name(p), ec_last_error());
    return b;
}

const char *test_data_file(const char *rel)
{
    static char path[4096];
    test_data_path(path, sizeof path, rel);
    if (access(path, R_OK) != 0) fail_msg("test data %s not readable", path);
    return path;
}
