/* tp.h — a tensor-parallel group: the ranks of one model split over devices (ec_model_shard),
 * each driven by its own thread of one process. The group gives them what they share: a
 * barrier that a failing rank can break (so no rank waits forever for one that stopped), an
 * agreement on whether every rank succeeded, the host all-reduce the CPU backend sums its
 * partial outputs with, and a small blob through which a GPU backend's ranks exchange a
 * communicator id (rank 0 writes, the others read after a barrier). */
#ifndef EC_ENGINE_TP_H
#define EC_ENGINE_TP_H

#include "ecocompute/engine.h"

#include <stddef.h>

enum { EC_TP_MAX_WORLD = 8, EC_TP_SHARED_BYTES = 256 };

int ec_tp_group_create(ec_tp_group **out, int world);
void ec_tp_group_destroy(ec_tp_group *g);
int ec_tp_group_world(const ec_tp_group *g);
/* Returns 0 once every rank has called it, -1 (ec_last_error) when the group was broken. */
int ec_tp_barrier(ec_tp_group *g);
/* Breaks the group: every barrier, now or later, returns -1. Called by a rank that fails. */
void ec_tp_break(ec_tp_group *g, int rank);
/* The rank that broke the group first, or -1 when it is whole. */
int ec_tp_broken_by(const ec_tp_group *g);
/* Makes a broken group whole again; only while no rank is inside a call of the group. */
void ec_tp_reset(ec_tp_group *g);
/* Every rank calls it with its own success (1) or failure (0); returns 1 when all succeeded, on
 * every rank alike, so that they take the same branch after it. A rank that returns 0 sets an
 * error naming the failed ranks (ec_last_error). */
int ec_tp_all_ok(ec_tp_group *g, int rank, int ok);
/* x [n] of every rank becomes the sum over ranks, added in rank order so that every rank holds
 * the same bits. Every rank calls it with the same n. Returns 0 or -1 (broken group). */
int ec_tp_allreduce_sum(ec_tp_group *g, int rank, float *x, size_t n);
/* EC_TP_SHARED_BYTES bytes every rank sees (write before a barrier, read after it). */
unsigned char *ec_tp_shared(ec_tp_group *g);

#endif
