/* tp.c — the tensor-parallel group of threads: a breakable barrier (mutex, condition and a
 * generation count), the all-ranks-succeeded agreement and the host all-reduce. */
#include "tp.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ec_tp_group {
    int world;
    pthread_mutex_t lock;
    pthread_cond_t turn;
    int arrived;            /* ranks waiting at the barrier of this generation */
    unsigned long generation;
    int broken;             /* the rank that broke the group + 1, 0 while it is whole */
    int ok[EC_TP_MAX_WORLD];     /* ec_tp_all_ok: each rank's answer */
    float *buf[EC_TP_MAX_WORLD]; /* ec_tp_allreduce_sum: each rank's buffer */
    unsigned char shared[EC_TP_SHARED_BYTES];
};

int ec_tp_group_create(ec_tp_group **out, int world)
{
    *out = NULL;
    if (world < 1 || world > EC_TP_MAX_WORLD)
        return ec_set_error("tensor parallelism over %d ranks: 1 to %d are supported", world,
                            EC_TP_MAX_WORLD);
    ec_tp_group *g = calloc(1, sizeof *g);
    if (!g) return ec_set_error("out of memory for a tensor-parallel group");
    g->world = world;
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->turn, NULL);
    *out = g;
    return 0;
}

void ec_tp_group_destroy(ec_tp_group *g)
{
    if (!g) return;
    pthread_mutex_destroy(&g->lock);
    pthread_cond_destroy(&g->turn);
    free(g);
}

int ec_tp_group_world(const ec_tp_group *g) { return g->world; }

unsigned char *ec_tp_shared(ec_tp_group *g) { return g->shared; }

void ec_tp_break(ec_tp_group *g, int rank)
{
    pthread_mutex_lock(&g->lock);
    if (!g->broken) g->broken = rank + 1;
    pthread_cond_broadcast(&g->turn);
    pthread_mutex_unlock(&g->lock);
}

int ec_tp_broken_by(const ec_tp_group *g) { return g->broken - 1; }

void ec_tp_reset(ec_tp_group *g)
{
    g->broken = 0;
    g->arrived = 0;
}

int ec_tp_barrier(ec_tp_group *g)
{
    pthread_mutex_lock(&g->lock);
    unsigned long gen = g->generation;
    if (!g->broken && ++g->arrived == g->world) {
        g->arrived = 0;
        g->generation++;
        pthread_cond_broadcast(&g->turn);
    }
    while (!g->broken && g->generation == gen)
        pthread_cond_wait(&g->turn, &g->lock);
    int broken = g->broken;
    pthread_mutex_unlock(&g->lock);
    return broken ? ec_set_error("tensor-parallel group: another rank failed") : 0;
}

int ec_tp_all_ok(ec_tp_group *g, int rank, int ok)
{
    g->ok[rank] = ok;
    if (ec_tp_barrier(g)) return 0;
    int all = 1;
    char failed[64] = "";
    for (int r = 0; r < g->world; r++) {
        if (g->ok[r]) continue;
        all = 0;
        size_t l = strlen(failed);
        snprintf(failed + l, sizeof failed - l, "%s%d", l ? ", " : "", r);
    }
    /* Nobody writes ok[] again before everyone has read it. */
    if (ec_tp_barrier(g)) return 0;
    if (!all && ok) ec_set_error("tensor-parallel group: rank(s) %s failed", failed);
    return all;
}

int ec_tp_allreduce_sum(ec_tp_group *g, int rank, float *x, size_t n)
{
    g->buf[rank] = x;
    if (ec_tp_barrier(g)) return -1;
    /* Each rank sums its own slice of the elements over all ranks and writes it back to every
     * rank: no element has two writers, and the sum's order is the ranks' order everywhere. */
    size_t lo = n * (size_t)rank / (size_t)g->world, hi = n * (size_t)(rank + 1) / (size_t)g->world;
    for (size_t i = lo; i < hi; i++) {
        float s = 0;
        for (int r = 0; r < g->world; r++)
            s += g->buf[r][i];
        for (int r = 0; r < g->world; r++)
            g->buf[r][i] = s;
    }
    return ec_tp_barrier(g);
}
