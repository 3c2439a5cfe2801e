/* threadpool.h — a small persistent pthread pool for the CPU backend.
 *
 * One job at a time: ec_pool_run calls fn(arg, t, n) once on each of the pool's n threads
 * (t = 0 on the caller) and returns when all have finished. Work is split by the callee from
 * (t, n) alone, so which element a thread computes is fixed, never raced for. */
#ifndef EC_ENGINE_CPU_THREADPOOL_H
#define EC_ENGINE_CPU_THREADPOOL_H

typedef struct ec_pool ec_pool;
typedef void (*ec_pool_fn)(void *arg, int t, int n);

/* Starts threads-1 workers (the caller is the last one). Returns 0, or -1 (ec_last_error). */
int ec_pool_create(ec_pool **out, int threads);
void ec_pool_destroy(ec_pool *p);
int ec_pool_threads(const ec_pool *p);
/* parts is clamped to [1, threads]; 1 runs fn on the caller without waking anyone. */
void ec_pool_run(ec_pool *p, ec_pool_fn fn, void *arg, int parts);
/* How many parts a job of `work` multiply-adds is worth splitting into: waking a thread costs
 * about as much as tens of thousands of them, so small jobs stay on the caller. */
int ec_pool_parts(const ec_pool *p, double work);

/* The share [*lo, *hi) of [0, count) that thread t of n owns. */
void ec_pool_split(int count, int t, int n, int *lo, int *hi);

#endif
