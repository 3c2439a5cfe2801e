/* cuda_backend.h — the CUDA backend (weights in the formats marked EC_QFORMAT_CUDA resident on one
 * GPU, cuBLAS prefill, GEMV decode replayed from a CUDA graph, or the libraries' reference
 * dataflow).
 * docs/cuda-backend.md describes its design. */
#ifndef EC_ENGINE_CUDA_BACKEND_H
#define EC_ENGINE_CUDA_BACKEND_H

#include "ecocompute/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Creates an unloaded CUDA backend for device index `device`; touches no GPU until ops->load
 * (so a GPU-less machine can still create and destroy one). */
int ec_cuda_backend_create(ec_backend **out, int device);
/* "GPU-<uuid>" of CUDA device `device`, the form NVML (and so the meter) selects GPUs by. */
int ec_cuda_device_uuid(int device, char *buf, size_t len);
/* enabled = 0 runs each decode step as plain launches instead of replaying the captured graph
 * (tests compare the two; a bench can measure what the graph saves). Default 1. The reference
 * kernel family never uses a graph. */
void ec_cuda_backend_set_graphs(ec_backend *b, int enabled);

#ifdef __cplusplus
}
#endif
#endif
