/* gpu_test.h — what the CUDA tests share: skipping without a GPU (exit 77, CTest's "skipped"),
 * checked CUDA calls that fail the current cmocka test with the operation named, device buffers
 * (uploaded, poisoned, downloaded), 16-bit conversions and a seeded uniform generator. Include
 * it after cmocka.h. */
#ifndef EC_TESTS_GPU_TEST_H
#define EC_TESTS_GPU_TEST_H

#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ecocompute/engine.h"
#include "ecocompute/quant.h"
#include "engine/cuda/code_arch.h"
#include "engine/cuda/kernels.h"

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

/* How many of the 16-bit types {fp16, bf16} the code that runs on device 0 can run: bf16 needs
 * sm_80+ code (a T4, or a compute_75 build on any GPU, runs fp16 alone), so the tests' loops over
 * their dtype lists {EC_CUDA_F16, EC_CUDA_BF16} stop here. */
static inline int gpu_test_dtypes(void)
{
    return ec_cuda_code_features(0) & EC_GPU_BF16 ? 2 : 1;
}

#define CUDA_OK(call)                                                                       \
    do {                                                                                    \
        cudaError_t e_ = (call);                                                            \
        if (e_ != cudaSuccess) fail_msg("%s: %s", #call, cudaGetErrorString(e_));           \
    } while (0)


/* Uniform in [-1, 1) (xorshift64); a test file may set gpu_test_rng for its own sequence. */
static uint64_t gpu_test_rng = 0x9E3779B97F4A7C15ull;
static inline float frand(void)
{
    gpu_test_rng ^= gpu_test_rng << 13;
    gpu_test_rng ^= gpu_test_rng >> 7;
    gpu_test_rng ^= gpu_test_rng << 17;
    return (float)((gpu_test_rng >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
}

static inline uint16_t to16(ec_cuda_dtype t, float x)
{
    return t == EC_CUDA_BF16 ? ec_f32_to_bf16(x) : ec_f32_to_f16(x);
}
static inline float from16(ec_cuda_dtype t, uint16_t h)
{
    return t == EC_CUDA_BF16 ? ec_bf16_to_f32(h) : ec_f16_to_f32(h);
}

/* A device buffer of bytes set to fill (0xFF: NaN-poisoned, to see what a kernel leaves). */
static inline void *dev_alloc(size_t bytes, int fill)
{
    void *d;
    CUDA_OK(cudaMalloc(&d, bytes));
    CUDA_OK(cudaMemset(d, fill, bytes));
    return d;
}
static inline void *dev_poisoned(size_t bytes) { return dev_alloc(bytes, 0xFF); }
static inline void *dev_upload(const void *host, size_t bytes)
{
    void *d;
    CUDA_OK(cudaMalloc(&d, bytes));
    CUDA_OK(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice));
    return d;
}
/* Waits for the device, then copies back. */
static inline void download(void *host, const void *dev, size_t bytes)
{
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost));
}

/* A kernel wrapper's return: 0, or a failure with its message. */
static inline void kernel_ok(int rc)
{
    if (rc != 0) fail_msg("%s", ec_last_error());
}

#endif
