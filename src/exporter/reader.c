/* reader.c — the exporter's reader thread and its snapshot: reads every GPU (and RAPL) when a
 * scrape asks or when the refresh interval has passed, and publishes complete snapshots under a
 * mutex, so that a scrape waits for NVML at most max_read_s and otherwise serves the last one. */
#include "ecocompute/exporter.h"

#include "ecocompute/common.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct ec_exporter {
    ec_meter *meter;
    ec_exporter_options opt;
    pthread_t thread;
    pthread_mutex_t mu; /* guards everything below */
    pthread_cond_t cv;  /* signalled on a request, on a published snapshot and on stop */
    int stop;
    unsigned long requested; /* scrapes that asked for fresh readings */
    unsigned long served;    /* requests covered by the published snapshot */
    ec_exporter_snapshot snap;
    double snap_done_s; /* when the published snapshot's reading finished */
    int have_snap;
};

void ec_exporter_options_default(ec_exporter_options *o)
{
    o->interval_s = 1.0;
    o->max_read_s = 0.2;
}

static struct timespec deadline_after(double s)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    double whole = floor(s);
    t.tv_sec += (time_t)whole;
    t.tv_nsec += (long)((s - whole) * 1e9);
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

/* One complete reading of every GPU and of RAPL, without the lock (NVML may be slow). */
static void read_all(ec_exporter *x, ec_exporter_snapshot *s)
{
    memset(s, 0, sizeof *s);
    double t0 = ec_now_s();
    s->ngpus = ec_meter_gpu_count(x->meter);
    for (int i = 0; i < s->ngpus; i++) {
        s->info[i] = ec_meter_gpu(x->meter, i);
        ec_exporter_gpu *g = &s->gpus[i];
        ec_meter_read(x->meter, i, &g->s);
        /* Up means the GPU answered: lost, or nothing readable at all, is down. */
        g->up = !(g->s.valid & EC_SAMPLE_LOST) && g->s.valid != 0;
    }
    s->cpu_available = ec_meter_cpu_energy(x->meter, &s->cpu_package_j, &s->cpu_dram_j) == 0;
    s->read_duration_s = ec_now_s() - t0;
    s->driver_version = ec_meter_driver_version(x->meter);
    s->version = ec_version();
}

static void *reader_main(void *arg)
{
    ec_exporter *x = arg;
    pthread_mutex_lock(&x->mu);
    while (!x->stop) {
        int due = !x->have_snap || x->requested > x->served ||
                  ec_now_s() - x->snap_done_s >= x->opt.interval_s;
        if (!due) {
            struct timespec until =
                deadline_after(x->opt.interval_s - (ec_now_s() - x->snap_done_s));
            pthread_cond_timedwait(&x->cv, &x->mu, &until);
            continue;
        }
        unsigned long covers = x->requested;
        pthread_mutex_unlock(&x->mu);
        ec_exporter_snapshot s;
        read_all(x, &s);
        pthread_mutex_lock(&x->mu);
        s.reads = x->snap.reads + 1;
        x->snap = s;
        x->snap_done_s = ec_now_s();
        x->have_snap = 1;
        x->served = covers;
        pthread_cond_broadcast(&x->cv);
    }
    pthread_mutex_unlock(&x->mu);
    return NULL;
}

ec_exporter *ec_exporter_start(ec_meter *m, const ec_exporter_options *o)
{
    ec_exporter *x = calloc(1, sizeof *x);
    if (!x) {
        ec_set_error("out of memory");
        return NULL;
    }
    x->meter = m;
    if (o)
        x->opt = *o;
    else
        ec_exporter_options_default(&x->opt);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&x->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&x->mu, NULL);
    /* The reader must never run a signal handler: the caller waits for SIGTERM in its thread. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = pthread_create(&x->thread, NULL, reader_main, x);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        ec_set_error("cannot start the exporter's reader thread: %s", strerror(rc));
        pthread_cond_destroy(&x->cv);
        pthread_mutex_destroy(&x->mu);
        free(x);
        return NULL;
    }
    return x;
}

void ec_exporter_stop(ec_exporter *x)
{
    if (!x) return;
    pthread_mutex_lock(&x->mu);
    x->stop = 1;
    pthread_cond_broadcast(&x->cv);
    pthread_mutex_unlock(&x->mu);
    pthread_join(x->thread, NULL);
    pthread_cond_destroy(&x->cv);
    pthread_mutex_destroy(&x->mu);
    free(x);
}

int ec_exporter_snapshot_now(ec_exporter *x, ec_exporter_snapshot *out)
{
    struct timespec until = deadline_after(x->opt.max_read_s);
    pthread_mutex_lock(&x->mu);
    unsigned long mine = ++x->requested;
    pthread_cond_broadcast(&x->cv);
    int timed_out = 0;
    while (x->served < mine && !timed_out)
        timed_out = pthread_cond_timedwait(&x->cv, &x->mu, &until) == ETIMEDOUT;
    int fresh = x->served >= mine;
    int rc = x->have_snap ? fresh : -1;
    if (x->have_snap) {
        *out = x->snap;
        out->age_s = ec_now_s() - x->snap_done_s;
    }
    pthread_mutex_unlock(&x->mu);
    return rc;
}

char *ec_exporter_scrape(ec_exporter *x, size_t *len)
{
    double t0 = ec_now_s();
    ec_exporter_snapshot s;
    if (ec_exporter_snapshot_now(x, &s) < 0) {
        ec_set_error("no reading has completed yet (NVML is slower than --max-read-ms)");
        return NULL;
    }
    s.scrape_duration_s = ec_now_s() - t0;
    char *text = ec_exposition_render(&s, len);
    if (!text) ec_set_error("out of memory");
    return text;
}
