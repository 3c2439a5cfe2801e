/* meter_internal.h — the meter's state, shared by the files of src/meter (not a public API). */
#ifndef EC_METER_INTERNAL_H
#define EC_METER_INTERNAL_H

#include "ecocompute/meter.h"
#include "nvml.h"
#include "rapl.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

typedef struct {
    nvmlDevice_t handle;
    ec_gpu_info info;
} ec_gpu;

/* An open window: what was read at its begin edge. */
typedef struct {
    int open, aligned;
    char name[64];
    double t_begin_s;
    ec_gpu_sample edge[EC_METER_MAX_GPUS];
    double cpu_package_j, cpu_dram_j; /* RAPL totals at begin */
} ec_window_slot;

struct ec_meter {
    ec_nvml nv; /* nv.lib == NULL: no driver */
    char driver_version[80];
    char gpu_unavailable[256]; /* "" when there are GPUs */
    int ngpus;
    ec_gpu gpus[EC_METER_MAX_GPUS];
    double interval_s;
    double t_open_s; /* origin of the trace's t_s */
    FILE *trace;     /* written by the sampler thread only */

    pthread_mutex_t mu;        /* guards everything below */
    ec_rapl *rapl;             /* NULL when unavailable ... */
    char cpu_unavailable[160]; /* ... and this says why */
    double rapl_read_s;        /* when RAPL was last read */
    ec_gpu_sample *samples;    /* sampler readings still needed by an open window */
    size_t nsamples, cap;
    ec_window_slot *windows;
    int nwindows;
    int has_idle;
    double idle_power_w[EC_METER_MAX_GPUS];
    double counter_period_s; /* 0 until measured; NaN: no counter */
    double counter_read_s;   /* CPU time of one counter read, s (measured with the period) */

    pthread_t thread;
    int started;
    atomic_int stop;
    unsigned long tick; /* sampler thread only */
    _Atomic double sampler_cpu_s; /* CPU time the sampler thread has used, s */
};

/* gpu.c */
/* Selects the GPUs `selection` names (NULL or "": all). Returns 0, -2 when the selection names
 * no usable GPU (the caller's usage error) or -1 when NVML fails; ec_last_error says which. */
int ec_gpu_select(ec_meter *m, const char *selection);
/* What a reading includes besides instant and 1 s average power (always read, one NVML call). */
enum {
    EC_READ_COUNTER = 1u,   /* the energy counter: ~3 ms of CPU per read on an H100 */
    EC_READ_TELEMETRY = 2u, /* clocks, temperature, clock-event reasons, utilisation */
    EC_READ_ALL = 3u,
};
void ec_gpu_read(const ec_nvml *nv, const ec_gpu *g, int pos, unsigned what, ec_gpu_sample *s);
/* Reads every selected GPU now (window edges read everything). */
void ec_gpu_read_all(ec_meter *m, unsigned what, ec_gpu_sample *out);

/* sampler.c */
int ec_sampler_start(ec_meter *m);
void ec_sampler_stop(ec_meter *m);
/* Reads RAPL if it is due (or if force); call with m->mu held. */
void ec_rapl_poll_locked(ec_meter *m, double now_s, int force);

#endif
