/* bench_gpus.h — the GPUs one configuration runs on, within the meter's selection (gpus.c). */
#ifndef ECOCOMPUTE_BENCH_GPUS_H
#define ECOCOMPUTE_BENCH_GPUS_H

#include "ecocompute/bench.h"

/* The meter positions of the GPUs `device` with `tp` ranks runs on, in rank order. When the
 * device is the CPU, or one of its GPUs is not metered (--gpu chose others), every metered GPU,
 * as before tensor parallelism. Returns the count (0 without metered GPUs). */
int ec_bench_config_gpus(ec_meter *m, const char *device, int tp, int *pos);
/* w's figures over the GPUs at pos[0..n) of its selection: their sums (uncertainties in
 * quadrature; the peak is the sum of their peaks, an upper bound of the per-tick sum, unless
 * they are all of w's GPUs). CPU energy and the window's time are w's. */
void ec_bench_window_over(const ec_window_result *w, const int *pos, int n, ec_window_result *out);
/* "e1;e2;..." : energy_j of the GPUs at pos, each divided by reps, shortest exact. */
void ec_bench_energy_list(const ec_window_result *w, const int *pos, int n, int reps, char *out,
                          size_t len);

#endif
