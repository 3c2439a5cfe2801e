/* sampler.c — the sampler thread: reads every selected GPU each tick on an absolute-deadline
 * schedule, keeps the readings open windows still need, polls RAPL often enough to unwrap its
 * counters, and streams the trace CSV. */
#include "meter_internal.h"

#include "ecocompute/common.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* RAPL counters wrap after minutes (AMD at ~280 W: ~4 min); 10 Hz unwraps safely and costs
 * little even when GPUs are sampled at 1 kHz. */
#define RAPL_PERIOD_S 0.1

void ec_rapl_poll_locked(ec_meter *m, double now_s, int force)
{
    if (!m->rapl || (!force && now_s - m->rapl_read_s < RAPL_PERIOD_S)) return;
    m->rapl_read_s = now_s;
    char why[sizeof m->cpu_unavailable];
    if (ec_rapl_update(m->rapl, why, sizeof why) == 0) return;
    /* A counter we stopped seeing cannot be unwrapped any more: from now on it is unavailable. */
    snprintf(m->cpu_unavailable, sizeof m->cpu_unavailable, "%s", why);
    ec_rapl_close(m->rapl);
    m->rapl = NULL;
}

/* Oldest begin among open windows; readings before it are needed by no one. */
static double keep_from_locked(const ec_meter *m)
{
    double t = 1e300;
    for (int i = 0; i < m->nwindows; i++)
        if (m->windows[i].open && m->windows[i].t_begin_s < t) t = m->windows[i].t_begin_s;
    return t;
}

static void push_locked(ec_meter *m, const ec_gpu_sample *s, int n)
{
    if (n == 0) return;
    if (m->nsamples + (size_t)n > m->cap && m->nsamples) {
        double keep = keep_from_locked(m);
        size_t drop = 0;
        while (drop < m->nsamples && m->samples[drop].t_s < keep)
            drop++;
        memmove(m->samples, m->samples + drop, (m->nsamples - drop) * sizeof *m->samples);
        m->nsamples -= drop;
    }
    if (m->nsamples + (size_t)n > m->cap) {
        m->cap = m->cap ? 2 * m->cap : 1024;
        while (m->cap < m->nsamples + (size_t)n)
            m->cap *= 2;
        m->samples = realloc(m->samples, m->cap * sizeof *m->samples);
        if (!m->samples) abort();
    }
    memcpy(m->samples + m->nsamples, s, (size_t)n * sizeof *s);
    m->nsamples += (size_t)n;
}

static void trace_header(FILE *f)
{
    fputs(EC_TRACE_CSV_HEADER "\n", f);
}

/* One trace cell and its separator: the value when it was read, empty otherwise. Counters in mJ
 * stay exact as doubles (below 2^53 mJ, i.e. 285,000 years at 1 kW). */
static void cell(FILE *f, unsigned valid, unsigned bit, const char *fmt, double v)
{
    if (valid & bit) fprintf(f, fmt, v);
    fputc(',', f);
}

static void trace_row(const ec_meter *m, const ec_gpu_sample *s)
{
    FILE *f = m->trace;
    unsigned v = s->valid;
    fprintf(f, "%.6f,%u,", s->t_s - m->t_open_s, m->gpus[s->gpu].info.index);
    cell(f, v, EC_SAMPLE_ENERGY, "%.0f", (double)s->energy_mj);
    cell(f, v, EC_SAMPLE_POWER_INSTANT, "%.3f", s->power_instant_w);
    cell(f, v, EC_SAMPLE_POWER_AVERAGE, "%.3f", s->power_avg_w);
    cell(f, v, EC_SAMPLE_SM_CLOCK, "%.0f", s->sm_mhz);
    cell(f, v, EC_SAMPLE_MEM_CLOCK, "%.0f", s->mem_mhz);
    cell(f, v, EC_SAMPLE_TEMP, "%.0f", s->temp_c);
    if (v & EC_SAMPLE_CLOCK_REASONS) fprintf(f, "0x%llx", s->clock_event_reasons);
    fputc(',', f);
    cell(f, v, EC_SAMPLE_UTIL, "%.0f", s->util_gpu_pct);
    cell(f, v, EC_SAMPLE_UTIL, "%.0f", s->util_mem_pct);
    fprintf(f, "%d\n", (v & EC_SAMPLE_LOST) != 0);
}

/* Power is read every tick. Clocks, temperatures, event reasons and utilisation are read at most
 * every 100 ms (NVML refreshes them no faster). The energy counter is read at most once a second:
 * each read costs ~3 ms of CPU on an H100, and windows read it exactly at their edges anyway;
 * these mid-window reads only feed the trace and counter-reset detection. */
#define TELEMETRY_PERIOD_S 0.1
#define COUNTER_PERIOD_S 1.0

static unsigned long ticks_per(double period_s, double interval_s)
{
    unsigned long n = (unsigned long)(period_s / interval_s + 0.5);
    return n < 1 ? 1 : n;
}

static void tick(ec_meter *m, unsigned long telemetry_every, unsigned long counter_every)
{
    ec_gpu_sample batch[EC_METER_MAX_GPUS];
    unsigned what = (m->tick % telemetry_every == 0 ? EC_READ_TELEMETRY : 0u) |
                    (m->tick % counter_every == 0 ? EC_READ_COUNTER : 0u);
    ec_gpu_read_all(m, what, batch);
    for (int i = 0; i < m->ngpus; i++)
        batch[i].tick = m->tick;
    m->tick++;
    pthread_mutex_lock(&m->mu);
    push_locked(m, batch, m->ngpus);
    ec_rapl_poll_locked(m, ec_now_s(), 0);
    pthread_mutex_unlock(&m->mu);
    if (m->trace)
        for (int i = 0; i < m->ngpus; i++)
            trace_row(m, &batch[i]);
}

static void timespec_add(struct timespec *t, long ns)
{
    t->tv_nsec += ns;
    while (t->tv_nsec >= 1000000000L) {
        t->tv_nsec -= 1000000000L;
        t->tv_sec++;
    }
}

static int before(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

static void *sampler_main(void *arg)
{
    ec_meter *m = arg;
    long period_ns = (long)(m->interval_s * 1e9 + 0.5);
    unsigned long telemetry_every = ticks_per(TELEMETRY_PERIOD_S, m->interval_s);
    unsigned long counter_every = ticks_per(COUNTER_PERIOD_S, m->interval_s);
    struct timespec next, now, cpu;
    clock_gettime(CLOCK_MONOTONIC, &next);
    while (!atomic_load(&m->stop)) {
        tick(m, telemetry_every, counter_every);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
        atomic_store(&m->sampler_cpu_s, (double)cpu.tv_sec + (double)cpu.tv_nsec * 1e-9);
        /* Absolute deadlines keep the grid fixed however long a tick took; ticks missed while
         * descheduled are skipped, not replayed in a burst. */
        timespec_add(&next, period_ns);
        clock_gettime(CLOCK_MONOTONIC, &now);
        while (before(&next, &now))
            timespec_add(&next, period_ns);
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR) {
        }
    }
    return NULL;
}

int ec_sampler_start(ec_meter *m)
{
    if (m->started) return ec_set_error("the sampler is already running");
    if (m->trace) trace_header(m->trace);
    /* The sampler must never run a signal handler: the caller's handlers expect its thread. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    atomic_store(&m->stop, 0);
    int rc = pthread_create(&m->thread, NULL, sampler_main, m);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) return ec_set_error("cannot start the sampler thread: %s", strerror(rc));
    m->started = 1;
    return 0;
}

void ec_sampler_stop(ec_meter *m)
{
    if (!m->started) return;
    atomic_store(&m->stop, 1);
    pthread_join(m->thread, NULL);
    m->started = 0;
}
