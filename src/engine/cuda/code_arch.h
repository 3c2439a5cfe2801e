/* code_arch.h — which of this build's device code runs on a CUDA device, the features it has
 * (ec_gpu_features, engine.h), and whether the CUDA backend can run a precision there: every
 * kernel-path choice of the backend asks here, never the device's compute capability, because
 * a compute_80 build on an H200 runs compute_80 code (engine.h, "which of this build's CUDA code
 * runs on a GPU"). Answers are cached per device. */
#ifndef EC_ENGINE_CUDA_CODE_ARCH_H
#define EC_ENGINE_CUDA_CODE_ARCH_H

#include "ecocompute/quant.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 10 x major + minor of the code that runs on CUDA device `device` (its __CUDA_ARCH__ / 10: 80
 * for compute_80 PTX compiled by the driver for an H200), or 0 when the build holds none that
 * runs there, or the device cannot be asked (ec_last_error names the GPU and what is missing). */
int ec_cuda_code_arch(int device);
/* ec_gpu_features of that code; 0 when none runs. */
unsigned ec_cuda_code_features(int device);
/* Whether CUDA device `device` can be used: 0, or -1 with one line in ec_last_error — no NVIDIA
 * driver (said as such), a driver older than the build's CUDA runtime, no GPU, no such index.
 * The devices are counted once per process. */
int ec_cuda_device_exists(int device);
/* ec_cuda_device_exists, and whether the CUDA backend runs precision p there: 0, or -1 with one
 * line naming the GPU, its compute capability and what is missing (no code of this build for
 * the GPU; what the precision needs that the code lacks). */
int ec_cuda_device_ready(int device, ec_precision p);

#ifdef __cplusplus
}
#endif
#endif
