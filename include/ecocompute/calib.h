/* ecocompute/calib.h — calibration: the physical ceilings of one GPU, measured with the project's
 * own meter. They are the denominators of "% of roofline" everywhere else:
 *   - idle power with a CUDA context alive (what a loaded-but-waiting engine draws),
 *   - HBM read bandwidth (a read-only sweep with 16-byte loads over a buffer far larger than L2),
 *   - device-to-device copy bandwidth (read + write),
 *   - FP16 tensor-core GEMM throughput (cuBLAS, fp32 accumulate),
 * each with its average power and energy, and the energy per byte at the bandwidth limit above
 * idle (pJ/byte net). Needs the CUDA backend and an NVIDIA driver. */
#ifndef ECOCOMPUTE_CALIB_H
#define ECOCOMPUTE_CALIB_H

#include "ecocompute/meter.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int cuda_device;        /* CUDA device index (default 0) */
    double idle_s;          /* idle baseline with a context, s (default 5) */
    double load_s;          /* time each load runs inside its meter window, s (default 8) */
    double buffer_gib;      /* size of each sweep buffer, GiB (default 4) */
    int gemm_n;             /* n of the n x n x n fp16 GEMM (default 8192) */
    double meter_interval_s; /* sampler period, s (default 0.05) */
} ec_calib_options;
void ec_calib_options_default(ec_calib_options *o);

/* One load: what it moved or computed, how fast, and what it drew. Energies are gross unless
 * named net (gross − idle_power_w × time). */
typedef struct {
    double time_s;           /* s */
    double bytes;            /* bytes moved through HBM (read + written), B */
    double flops;            /* FLOP (GEMM only, else 0) */
    double rate;             /* bytes/s, or FLOP/s for the GEMM */
    double energy_j;         /* gross, J */
    double avg_power_w;      /* W */
    double peak_power_w;     /* W */
    double disagreement_pct; /* counter vs integrated power, % */
    double pj_per_unit_net;  /* net energy per byte (per FLOP for the GEMM), pJ */
    const char *energy_method; /* "counter" / "integrated" */
} ec_calib_load_result;

typedef struct {
    char gpu_name[96], gpu_uuid[96], driver[32];
    unsigned nvml_index;
    double power_limit_w;       /* W */
    char timestamp_utc[32];     /* ISO 8601 */
    char ecocompute_version[16], git_commit[24];
    double buffer_bytes;        /* B, each sweep buffer */
    int gemm_n;
    double idle_power_w;        /* W, with a CUDA context */
    ec_calib_load_result read, copy, gemm;
} ec_calibration;

/* Runs the calibration: creates a context on the CUDA device, opens a meter on its GPU (matched
 * by UUID), measures idle power with the context alive, then the three loads, each in its own
 * meter window.
 * Progress lines go to `log` (may be NULL); *stop (may be NULL) aborts between phases. Takes
 * about idle_s + 3 × load_s + setup. Returns 0 or -1 (ec_last_error; also when the CUDA
 * backend is not built or the GPU cannot be metered). */
int ec_calibrate(const ec_calib_options *o, const volatile int *stop, FILE *log,
                 ec_calibration *out);

/* JSON text of a calibration (caller frees), and its parse. */
char *ec_calibration_to_json(const ec_calibration *c);
int ec_calibration_from_json(const char *text, ec_calibration *out);
/* Where `calibrate` keeps the latest calibration of a GPU when no results database is used:
 * $XDG_DATA_HOME/ecocompute/calibration-<uuid>.json (~/.local/share when unset). */
int ec_calibration_path(const char *gpu_uuid, char *buf, size_t len);
int ec_calibration_save(const ec_calibration *c, const char *path);
/* Loads a saved calibration; -1 (ec_last_error) when absent or unreadable. */
int ec_calibration_load(const char *path, ec_calibration *out);

#ifdef __cplusplus
}
#endif
#endif
