/* gpu_test.h — what the CUDA tests share: skipping without a GPU (exit 77, CTest's "skipped"),
 * and checked CUDA calls that fail the current cmocka test with the operation named. */
#ifndef EC_TESTS_GPU_TEST_H
#define EC_TESTS_GPU_TEST_H

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

/* Exits 77 when no CUDA device can be used, printing why. */
static inline void gpu_test_require_device(void)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        printf("skipped: no CUDA device (%s)\n",
               e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        exit(77);
    }
}

#define CUDA_OK(call)                                                                       \
    do {                                                                                    \
        cudaError_t e_ = (call);                                                            \
        if (e_ != cudaSuccess) fail_msg("%s: %s", #call, cudaGetErrorString(e_));           \
    } while (0)

#endif
