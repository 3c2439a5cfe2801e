/* cuda_check.h — error checks for every CUDA runtime and cuBLAS call (the CUDA backend's and the
 * calibration's GPU loads).
 *
 * A failed call records "<operation>: <CUDA's message> (<file>:<line>)" with ec_set_error and
 * makes the enclosing function return -1, so a user reads e.g. "cudaMalloc of KV cache
 * (2147483648 bytes): out of memory (cuda_backend.c:312)". The operation text is a printf
 * format so it can carry sizes and names. Usable from C and CUDA sources; built only with the
 * CUDA backend. */
#ifndef ECOCOMPUTE_COMMON_CUDA_CHECK_H
#define ECOCOMPUTE_COMMON_CUDA_CHECK_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "ecocompute/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Record the failure of `op_fmt` (printf format) at file:line; always returns -1. */
int ec_cuda_fail(const char *file, int line, cudaError_t err, const char *op_fmt, ...)
    EC_PRINTF(4, 5);
int ec_cublas_fail(const char *file, int line, cublasStatus_t st, const char *op_fmt, ...)
    EC_PRINTF(4, 5);

#ifdef __cplusplus
}
#endif

/* Evaluate a CUDA runtime call; on failure record the operation and return -1. */
#define EC_CUDA_TRY(call, ...)                                                         \
    do {                                                                               \
        cudaError_t ec_err_ = (call);                                                  \
        if (ec_err_ != cudaSuccess)                                                    \
            return ec_cuda_fail(__FILE__, __LINE__, ec_err_, __VA_ARGS__);             \
    } while (0)

/* Check the launch of the kernel just enqueued (bad configuration, missing image, …). */
#define EC_CUDA_LAUNCHED(...) EC_CUDA_TRY(cudaGetLastError(), __VA_ARGS__)

#define EC_CUBLAS_TRY(call, ...)                                                       \
    do {                                                                               \
        cublasStatus_t ec_st_ = (call);                                                \
        if (ec_st_ != CUBLAS_STATUS_SUCCESS)                                           \
            return ec_cublas_fail(__FILE__, __LINE__, ec_st_, __VA_ARGS__);            \
    } while (0)

#endif
