/* engine_test_util.h — opening models and loaded CPU backends in the engine tests. */
#ifndef EC_TESTS_ENGINE_UTIL_H
#define EC_TESTS_ENGINE_UTIL_H

#include "ecocompute/engine.h"

/* Opens a catalog model (synthetic weights of `seed`) or a path; fails the test on error. */
ec_model *test_open_model(const char *name, uint64_t seed);
/* A CPU backend holding m in precision p; fails the test on error. */
ec_backend *test_load(const ec_model *m, ec_precision p, int max_batch, int max_seq, int threads);
/* tests/data/rel (static buffer; see tests/test_data.h); fails the test when it is unreadable. */
const char *test_data_file(const char *rel);

#endif
