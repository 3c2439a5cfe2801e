/* ecocompute/meter.h — the energy meter: NVML GPUs (loaded at run time), RAPL CPU/DRAM, a sampler
 * thread and named, nestable measurement windows.
 *
 * Lifecycle:
 *   ec_meter_options o; ec_meter_options_default(&o);
 *   ec_meter *m = ec_meter_open(&o);           // loads NVML, selects GPUs, opens RAPL
 *   ec_meter_start(m);                         // starts the sampler thread
 *   ec_meter_idle_baseline(m, 10.0, NULL, &b); // optional: later windows report net energy too
 *   int run = ec_meter_window_begin(m, "run");
 *     int pre = ec_meter_window_begin(m, "prefill"); ... ec_meter_window_end(m, pre, &r1);
 *   ec_meter_window_end(m, run, &r);
 *   ec_meter_close(m);
 *
 * A machine without the NVIDIA driver (or without GPUs) is not an error: the meter has zero GPUs,
 * ec_meter_gpu_unavailable() says why, and windows still measure time and CPU energy.
 * Energy is always "gross" (what the board drew) unless a field says "net" (gross minus idle
 * power × duration). Every function may be called from any thread; windows are protected
 * against the sampler by the meter's mutex. */
#ifndef ECOCOMPUTE_METER_H
#define ECOCOMPUTE_METER_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Fixed bound so results are plain structs; larger than any single host we know of. */
#define EC_METER_MAX_GPUS 32

typedef struct ec_meter ec_meter;

typedef struct {
    const char *gpus;       /* "0,1", "GPU-<uuid>", "00000000:3B:00.0" or a mix; NULL/"" = all */
    double interval_s;      /* sampler period, s (default 0.1; 0.001 .. 1.0) */
    const char *trace_path; /* write every sampler tick as CSV here; NULL = no trace */
} ec_meter_options;
void ec_meter_options_default(ec_meter_options *o);

/* What one GPU is, recorded once at open (provenance). */
typedef struct {
    unsigned index; /* NVML index (PCI bus order, not necessarily CUDA's order) */
    char name[96];
    char uuid[96];
    char pci_bus_id[32];    /* "00000000:3B:00.0" */
    unsigned arch;          /* nvmlDeviceArchitecture_t; see ec_gpu_arch_name() */
    double power_limit_w;   /* enforced limit, W; NaN if unknown (likewise below) */
    double power_default_w; /* default limit, W */
    double power_min_w;     /* lowest settable limit, W */
    double power_max_w;     /* highest settable limit, W */
    double max_sm_mhz;      /* MHz */
    double max_mem_mhz;     /* MHz */
    int cc_major, cc_minor; /* CUDA compute capability (9, 0 for an H100); -1 if unknown */
    double mem_bus_bits;    /* memory bus width, bits; NaN if unknown */
    /* Theoretical memory bandwidth, GB/s (1e9 bytes/s): 2 transfers per memory clock (NVML's
     * clock is half the data rate for HBM and GDDR alike) x max_mem_mhz x bus width / 8; NaN if
     * either is unknown. */
    double mem_bandwidth_gbs;
    int persistence_mode;   /* 1 on, 0 off, -1 unknown */
    int has_energy_counter; /* nvmlDeviceGetTotalEnergyConsumption works (Volta+) */
    int has_power_instant;  /* field 186 works */
    int has_power_average;  /* field 185 works (Ampere-non-GA100 and newer) */
} ec_gpu_info;
const char *ec_gpu_arch_name(unsigned arch); /* "Hopper", ...; "unknown" */

/* Bits of ec_gpu_sample.valid: each value is checked on its own, a failed one is simply absent. */
enum {
    EC_SAMPLE_ENERGY = 1u << 0,
    EC_SAMPLE_POWER_INSTANT = 1u << 1,
    EC_SAMPLE_POWER_AVERAGE = 1u << 2,
    EC_SAMPLE_SM_CLOCK = 1u << 3,
    EC_SAMPLE_MEM_CLOCK = 1u << 4,
    EC_SAMPLE_TEMP = 1u << 5,
    EC_SAMPLE_CLOCK_REASONS = 1u << 6,
    EC_SAMPLE_UTIL = 1u << 7,
    EC_SAMPLE_LOST = 1u << 8, /* the GPU answered NVML_ERROR_GPU_IS_LOST */
    EC_SAMPLE_MEMORY = 1u << 9,
};

/* One reading of one GPU. */
typedef struct {
    double t_s;                             /* CLOCK_MONOTONIC, s (see ec_now_s) */
    unsigned long long energy_mj;           /* counter, mJ since driver load */
    unsigned long long clock_event_reasons; /* nvmlClocksEventReasons bits (GpuIdle = 0x1) */
    double power_instant_w;                 /* field 186, W */
    double power_avg_w;                     /* field 185 (1 s average), W */
    unsigned sm_mhz, mem_mhz;               /* current clocks, MHz */
    int temp_c;                             /* °C */
    unsigned util_gpu_pct, util_mem_pct;    /* % */
    unsigned long long mem_used_bytes, mem_total_bytes; /* framebuffer memory, bytes */
    unsigned valid;                         /* EC_SAMPLE_* bits */
    int gpu;                                /* position in the meter's selection */
    unsigned long tick;                     /* sampler tick number (same for all GPUs of a tick) */
} ec_gpu_sample;

/* Per-GPU figures of one window. Values that could not be measured are NaN. */
typedef struct {
    unsigned index; /* NVML index */
    const char
        *energy_method;      /* "counter" or "integrated" (trapezoid of instant power) or "none" */
    double energy_j;         /* gross energy by energy_method, J */
    double energy_counter_j; /* counter delta, J */
    double energy_integrated_j;    /* trapezoid of instant power, edges at the window's edges, J */
    double disagreement_pct;       /* (integrated - counter) / counter × 100, % */
    double avg_power_w;            /* energy_j / measured_s, W */
    double peak_power_w;           /* highest instant power seen, W */
    double temp_min_c, temp_max_c; /* °C */
    unsigned long long clock_event_reasons; /* OR of every reading in the window */
    int throttled;                          /* any reason other than GpuIdle (0x1) was seen */
    int incomplete;      /* GPU lost inside the window: figures cover measured_s only */
    int counter_reset;   /* the counter went backwards (driver reload): energy integrated */
    double measured_s;   /* span the figures cover, s (= window duration unless incomplete) */
    int samples;         /* readings used (sampler ticks plus the two edge readings) */
    double idle_power_w; /* idle baseline, W (NaN without a baseline) */
    double net_energy_j; /* energy_j - idle_power_w × measured_s, J (NaN without baseline) */
    /* One standard uncertainty of energy_j from the window's edges, J: a counter read at a
     * random moment is stale by up to one update period, at each edge (P x period / sqrt 6);
     * an aligned edge (ec_meter_window_begin_aligned) is stale by one counter read at most. */
    double energy_uncert_j;
} ec_gpu_window;

typedef struct {
    char name[64];
    double t_begin_s;  /* CLOCK_MONOTONIC at begin, s */
    double duration_s; /* s */
    int ngpus;
    ec_gpu_window gpus[EC_METER_MAX_GPUS];
    /* Sums over the selected GPUs. */
    const char *gpu_energy_method;  /* "counter", "integrated", "mixed", or "none" (no GPU) */
    double gpu_energy_j;            /* gross, J */
    double gpu_energy_counter_j;    /* NaN unless every GPU had a counter delta */
    double gpu_energy_integrated_j; /* NaN unless every GPU had power readings */
    double gpu_disagreement_pct;    /* %, NaN unless both sums exist */
    double gpu_avg_power_w;         /* gpu_energy_j / duration_s, W */
    double gpu_peak_power_w;        /* highest sum of instant power over one sampler tick, W */
    double gpu_idle_power_w;        /* W, NaN without a baseline */
    double gpu_net_energy_j;        /* J, NaN without a baseline */
    double gpu_energy_uncert_j;     /* J, 1 standard uncertainty (GPUs in quadrature) */
    int aligned;                    /* edges at counter updates (the *_aligned calls) */
    unsigned long long clock_event_reasons;
    int throttled, incomplete, counter_reset;
    /* RAPL: package + dram zones (never core/uncore/psys). */
    int cpu_available;
    double cpu_package_energy_j, cpu_dram_energy_j, cpu_energy_j; /* gross, J */
    char cpu_unavailable[160];                                    /* reason when !cpu_available */
} ec_window_result;

typedef struct {
    double duration_s; /* s */
    int ngpus;
    double gpu_power_w[EC_METER_MAX_GPUS]; /* W, per GPU (NaN if not measurable) */
    double gpu_total_power_w;              /* W */
    const char *method;                    /* energy method of the baseline window */
} ec_idle_baseline;

/* Loads NVML (ECOCOMPUTE_NVML_LIBRARY overrides the path), selects GPUs, opens RAPL
 * (ECOCOMPUTE_POWERCAP_ROOT overrides /sys/class/powercap) and the trace file.
 * Returns NULL (ec_last_error) on a bad selection, an unknown GPU or an unwritable trace. */
ec_meter *ec_meter_open(const ec_meter_options *o);

/* Why ec_meter_open_ex failed: callers map a GPU selection that names no usable GPU to a usage
 * error and anything else to a plain failure, without reading the message text. */
typedef enum {
    EC_METER_OPEN_OK = 0,
    EC_METER_OPEN_BAD_SELECTION, /* o->gpus names no GPU, a MIG slice, a duplicate or an empty item,
                                  * or there is no driver to select from */
    EC_METER_OPEN_FAILED         /* anything else: a bad interval, NVML errors, the trace file */
} ec_meter_open_status;
/* ec_meter_open that also says why it failed (status may be NULL). */
ec_meter *ec_meter_open_ex(const ec_meter_options *o, ec_meter_open_status *status);
void ec_meter_close(ec_meter *m); /* stops the sampler, flushes the trace, unloads NVML */

int ec_meter_gpu_count(const ec_meter *m);
const ec_gpu_info *ec_meter_gpu(const ec_meter *m, int i);
/* Why there are no GPUs ("no NVIDIA driver: ..."), or NULL when there are. */
const char *ec_meter_gpu_unavailable(const ec_meter *m);
const char *ec_meter_driver_version(const ec_meter *m); /* "" when unknown */
/* CPU time (user + system) the sampler thread has used since it started, s: the meter's
 * overhead on the host, which must stay negligible next to the work it measures. */
double ec_meter_sampler_cpu_s(ec_meter *m);
/* Why RAPL is unavailable, or NULL when it is readable. */
const char *ec_meter_cpu_unavailable(ec_meter *m);
double ec_meter_interval_s(const ec_meter *m);
/* The first line of a trace CSV (one row per sampler tick and GPU); a trace file is recognised by
 * it, so that --trace only ever replaces an earlier trace. */
#define EC_TRACE_CSV_HEADER                                                                        \
    "t_s,gpu,energy_mj,power_instant_w,power_avg_w,sm_mhz,mem_mhz,temp_c,clock_event_reasons,"    \
    "util_gpu_pct,util_mem_pct,lost"

/* CLOCK_MONOTONIC time at which the meter was opened, s: the zero of the trace's t_s column. */
double ec_meter_t0_s(const ec_meter *m);

/* CPU package and DRAM energy (RAPL) accumulated since the meter was opened, read now, J; *dram_j
 * is NaN on hosts without a DRAM zone. Returns 0, or -1 when RAPL is unavailable (see
 * ec_meter_cpu_unavailable). Call at least every few minutes so the counters' wraps are seen. */
int ec_meter_cpu_energy(ec_meter *m, double *package_j, double *dram_j);

/* Reads GPU i now, directly (not from the sampler). Returns 0, or -1 when i is out of range. */
int ec_meter_read(ec_meter *m, int i, ec_gpu_sample *out);

/* Starts the sampler thread. Returns 0 or -1 (ec_last_error). */
int ec_meter_start(ec_meter *m);

/* Opens a window; windows nest and overlap freely. Returns its id (>= 0), or -1. */
int ec_meter_window_begin(ec_meter *m, const char *name);
/* Closes window id and computes its figures. Returns 0, or -1 on an unknown id. */
int ec_meter_window_end(ec_meter *m, int id, ec_window_result *out);

/* A measured phase lasts at least this many updates of the GPU's energy counter (5 s at the
 * 0.1 s of H100 and H200), repeated inside its window as often as that takes: the edges' stale
 * energy is then under 1 % of the window's, and aligned edges bring it far lower. */
#define EC_MIN_WINDOW_PERIODS 50

/* The energy counter's update period, s: how often its value changes (about 0.1 s on H100 and
 * H200). Measured once, on the first call, by reading the first GPU's counter until it has
 * changed five times (at most about 1.5 s, as Zeus does at start-up); NaN without a counter.
 * Window uncertainties are computed from it. */
double ec_meter_counter_period_s(ec_meter *m);
/* A window whose edges are counter updates, for work shorter than many counter periods: begin
 * returns just after the first GPU's counter changed (start the work then); end waits for the
 * counter's next change after the work and takes the idle baseline's power over that wait off
 * (without a baseline, the wait's energy stays in and widens the uncertainty). Each edge is then
 * stale by one counter read, not by up to a period. Costs up to two periods of waiting. Such a
 * window is ended by ec_meter_window_end, which knows how it began. */
int ec_meter_window_begin_aligned(ec_meter *m, const char *name);

/* How the GPUs at positions gpus[0..n) of the meter's selection are connected, as NVML reports
 * it: "nvlink:L" when every one has L or more active NVLink links (L the fewest of them),
 * else "pcie:LEVEL", the farthest PCIe ancestor two of them share (single, multiple,
 * hostbridge, node, system); "none" for one GPU; "unknown" without NVML or when NVML cannot
 * say (older drivers, out-of-range positions). Writes at most len bytes to out. */
void ec_meter_interconnect(const ec_meter *m, const int *gpus, int n, char *out, size_t len);

/* Measures idle power over `seconds` (returns early, with -1, when *stop becomes nonzero). Later
 * windows then report idle_power_w and net energy. Returns 0 or -1 (ec_last_error). */
int ec_meter_idle_baseline(ec_meter *m, double seconds, const volatile int *stop,
                           ec_idle_baseline *out);

#ifdef __cplusplus
}
#endif
#endif
