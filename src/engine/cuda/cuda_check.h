/* cuda_check.h — the CUDA error checks (EC_CUDA_TRY, EC_CUBLAS_TRY, EC_CUDA_LAUNCHED) under the
 * name cuda_backend.c includes; they are defined in src/common/cuda_check.h, one layer down, so
 * the calibration's GPU loads use them without reaching into the engine. */
#include "common/cuda_check.h"
