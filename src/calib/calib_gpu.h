/* calib_gpu.h — the GPU loads that `ecocompute calibrate` measures: a read-only HBM sweep with
 * 16-byte loads, a device-to-device copy, and an FP16 tensor-core GEMM through cuBLAS. Each load
 * runs for a requested time so a meter window around it is long enough for the energy counter
 * (which updates about every 100 ms). Built only with the CUDA backend. */
#ifndef ECOCOMPUTE_CALIB_GPU_H
#define ECOCOMPUTE_CALIB_GPU_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ec_calib_gpu ec_calib_gpu;

typedef struct {
    char name[256];
    char uuid[64];          /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as NVML prints it */
    size_t total_mem_bytes;
    int sm_count;
} ec_calib_device;

/* Creates a CUDA context on `device` and allocates two buffers of buffer_bytes each (the sweep
 * must be far larger than L2: 4 GiB by default); the GEMM is gemm_n^3 (its three matrices must
 * fit in the two buffers). Returns 0 or -1 (ec_last_error). */
int ec_calib_gpu_open(ec_calib_gpu **out, int device, size_t buffer_bytes, int gemm_n,
                      ec_calib_device *info);
void ec_calib_gpu_close(ec_calib_gpu *g);

/* What one timed load did: bytes moved through HBM (reads + writes) or FLOPs, and its time. */
typedef struct {
    double bytes;     /* bytes read + written, B */
    double flops;     /* floating-point operations, FLOP */
    double elapsed_s; /* time from the first launch to the last completion, s */
} ec_calib_load;

/* Each runs its load repeatedly, at least once and for at least `seconds`; every pass counts. */
int ec_calib_gpu_read(ec_calib_gpu *g, double seconds, ec_calib_load *out);
int ec_calib_gpu_copy(ec_calib_gpu *g, double seconds, ec_calib_load *out);
int ec_calib_gpu_gemm(ec_calib_gpu *g, double seconds, ec_calib_load *out);

#ifdef __cplusplus
}
#endif
#endif
