/* threadpool.c — the CPU backend's persistent worker pool (see threadpool.h). Workers sleep on
 * a condition variable between jobs; a generation counter tells them a new job was posted. */
#include "engine/cpu/threadpool.h"

#include "ecocompute/common.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct ec_pool {
    int n;              /* threads including the caller */
    pthread_t *workers; /* [n - 1] */
    pthread_mutex_t mu;
    pthread_cond_t go;   /* a job was posted (generation changed) or stop was set */
    pthread_cond_t done; /* the last worker finished the job */
    unsigned long generation;
    int pending; /* workers still running the current job */
    int stop;
    ec_pool_fn fn;
    void *arg;
    int parts; /* threads with index >= parts sit the job out */
};

typedef struct {
    ec_pool *pool;
    int index;
} worker_start;

static void *worker_main(void *start_arg)
{
    worker_start start = *(worker_start *)start_arg;
    free(start_arg);
    ec_pool *p = start.pool;
    unsigned long seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->generation == seen && !p->stop)
            pthread_cond_wait(&p->go, &p->mu);
        if (p->stop) break;
        seen = p->generation;
        ec_pool_fn fn = p->fn;
        void *arg = p->arg;
        int parts = p->parts;
        pthread_mutex_unlock(&p->mu);
        if (start.index < parts) fn(arg, start.index, parts);
        pthread_mutex_lock(&p->mu);
        if (--p->pending == 0) pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int ec_pool_create(ec_pool **out, int threads)
{
    if (threads < 1) return ec_set_error("thread pool: %d threads requested", threads);
    ec_pool *p = calloc(1, sizeof *p);
    if (!p) return ec_set_error("thread pool: out of memory");
    p->n = threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->go, NULL);
    pthread_cond_init(&p->done, NULL);
    p->workers = calloc((size_t)threads, sizeof *p->workers);
    if (!p->workers) {
        ec_pool_destroy(p);
        return ec_set_error("thread pool: out of memory");
    }
    for (int i = 1; i < threads; i++) {
        worker_start *s = malloc(sizeof *s);
        if (s) *s = (worker_start){p, i};
        int rc = s ? pthread_create(&p->workers[i - 1], NULL, worker_main, s) : -1;
        if (rc != 0) {
            free(s);
            p->n = i; /* only the first i-1 workers exist and must be joined */
            ec_pool_destroy(p);
            return ec_set_error("thread pool: cannot start thread %d of %d: %s", i, threads,
                                rc > 0 ? strerror(rc) : "out of memory");
        }
    }
    *out = p;
    return 0;
}

void ec_pool_destroy(ec_pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n && p->workers; i++)
        pthread_join(p->workers[i - 1], NULL);
    pthread_cond_destroy(&p->go);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->mu);
    free(p->workers);
    free(p);
}

int ec_pool_threads(const ec_pool *p)
{
    return p->n;
}

void ec_pool_run(ec_pool *p, ec_pool_fn fn, void *arg, int parts)
{
    if (parts > p->n) parts = p->n;
    if (parts <= 1) {
        fn(arg, 0, 1);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->arg = arg;
    p->parts = parts;
    p->pending = p->n - 1;
    p->generation++;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    fn(arg, 0, parts);
    pthread_mutex_lock(&p->mu);
    while (p->pending > 0)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

int ec_pool_parts(const ec_pool *p, double work)
{
    const double per_part = 65536.0;
    double parts = work / per_part;
    return parts >= p->n ? p->n : parts < 1.0 ? 1 : (int)parts;
}

void ec_pool_split(int count, int t, int n, int *lo, int *hi)
{
    *lo = (int)((long long)count * t / n);
    *hi = (int)((long long)count * (t + 1) / n);
}
