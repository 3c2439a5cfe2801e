/* test_data.h — where the tests find their real data (tests/data: the 260K model, tokenizers,
 * golden texts, seed-data excerpts; tests/data/README.md lists them). The source tree's folder is
 * compiled in (EC_TEST_DATA_DIR, set by tests/CMakeLists.txt) so that a test binary runs from any
 * directory; $EC_TEST_DATA overrides it for a binary run away from its source tree (bench/gpu.sh
 * on the GPU machine). */
#ifndef EC_TESTS_TEST_DATA_H
#define EC_TESTS_TEST_DATA_H

#include <stdio.h>
#include <stdlib.h>

#ifndef EC_TEST_DATA_DIR
#error "EC_TEST_DATA_DIR must name tests/data (tests/CMakeLists.txt defines it)"
#endif

/* The test-data folder: $EC_TEST_DATA when set and not empty, else the source tree's. */
static inline const char *test_data_dir(void)
{
    const char *dir = getenv("EC_TEST_DATA");
    return dir && *dir ? dir : EC_TEST_DATA_DIR;
}

/* Writes test_data_dir()/rel into buf; returns buf. A path cut short by size aborts: a test must
 * not open a different file than it names. */
static inline char *test_data_path(char *buf, size_t size, const char *rel)
{
    int n = snprintf(buf, size, "%s/%s", test_data_dir(), rel);
    if (n < 0 || (size_t)n >= size) {
        fprintf(stderr, "test data path too long: %s/%s\n", test_data_dir(), rel);
        abort();
    }
    return buf;
}

#endif
