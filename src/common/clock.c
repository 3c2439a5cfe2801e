/* clock.c — monotonic and wall clocks, interruptible sleep. */
#include "ecocompute/common.h"

#include <errno.h>
#include <time.h>

double ec_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double ec_wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

const char *ec_iso8601(double unix_s, char *buf, size_t len)
{
    time_t t = (time_t)unix_s;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

void ec_sleep_s(double seconds, const volatile int *stop)
{
    /* Sleep in slices of at most 50 ms so a stop request is honoured promptly. */
    double end = ec_now_s() + seconds;
    for (;;) {
        if (stop && *stop) return;
        double left = end - ec_now_s();
        if (left <= 0) return;
        if (left > 0.05) left = 0.05;
        struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
            if (stop && *stop) return;
        }
    }
}
