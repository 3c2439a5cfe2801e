/* error.c — per-thread last-error message, and the build's version/commit. */
#include "ecocompute/common.h"
#include "ecocompute_version.h"

#include <stdio.h>

static _Thread_local char last_error[512];

int ec_set_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return -1;
}

const char *ec_last_error(void) { return last_error; }
const char *ec_version(void) { return ECOCOMPUTE_VERSION; }
const char *ec_git_commit(void) { return ECOCOMPUTE_GIT_COMMIT; }
