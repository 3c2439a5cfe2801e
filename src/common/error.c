/* error.c — per-thread last-error message, and the build's version/commit. */
#include "ecocompute/common.h"
#include "ecocompute_version.h"

#include <stdio.h>
#include <string.h>

static _Thread_local char last_error[512];

/* Formats into a copy first: callers pass ec_last_error() as an argument (directly or through
 * ec_error_context), and vsnprintf into the buffer it reads from is undefined behaviour. */
int ec_set_error(const char *fmt, ...)
{
    char message[sizeof last_error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    memcpy(last_error, message, sizeof last_error);
    return -1;
}

int ec_error_context(const char *fmt, ...)
{
    char cause[sizeof last_error], context[sizeof last_error];
    memcpy(cause, last_error, sizeof cause);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(context, sizeof context, fmt, ap);
    va_end(ap);
    if (!cause[0]) return ec_set_error("%s", context);
    return ec_set_error("%s: %s", context, cause);
}

const char *ec_last_error(void) { return last_error; }
const char *ec_version(void) { return ECOCOMPUTE_VERSION; }
const char *ec_git_commit(void) { return ECOCOMPUTE_GIT_COMMIT; }
