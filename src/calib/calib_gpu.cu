/* calib_gpu.cu — GPU loads for calibration (see calib_gpu.h): the bandwidth and tensor-core
 * ceilings that "% of roofline" is measured against everywhere else. */
#include "calib_gpu.h"

#include "ecocompute/common.h"
#include "ecocompute/engine.h"
#include "common/cuda_check.h"

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ec_calib_gpu {
    int device;
    size_t bytes;      /* size of each buffer, B */
    uint4 *a, *b;      /* [bytes / 16] each */
    unsigned *sink;    /* [1]: keeps the read sweep from being optimised away */
    cublasHandle_t blas;
    int blocks;        /* read-sweep grid: enough resident blocks to fill every SM */
    int gemm_n;        /* the GEMM is gemm_n^3 */
};

/* Reads every 16-byte word once; each thread keeps four loads in flight before using them. */
__global__ void read_sweep(const uint4 *__restrict__ src, size_t n, unsigned *sink)
{
    unsigned acc = 0;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
        uint4 v0 = src[i], v1 = src[i + stride], v2 = src[i + 2 * stride], v3 = src[i + 3 * stride];
        acc ^= v0.x ^ v0.y ^ v0.z ^ v0.w ^ v1.x ^ v1.y ^ v1.z ^ v1.w;
        acc ^= v2.x ^ v2.y ^ v2.z ^ v2.w ^ v3.x ^ v3.y ^ v3.z ^ v3.w;
    }
    for (; i < n; i += stride) {
        uint4 v = src[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    /* A store that practically never happens, but the compiler cannot prove it. */
    if (acc == 0x9e3779b9u) *sink = acc;
}

__global__ void fill_pattern(uint4 *dst, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        unsigned v = (unsigned)(i * 2654435761u);
        dst[i] = make_uint4(v, v ^ 1u, v ^ 2u, v ^ 3u);
    }
}

/* Finite fp16 values spread over [-0.5, 0.5): a GEMM's power depends on how many bits toggle,
 * so constant inputs would understate what real weights and activations draw. */
__global__ void fill_half(__half *dst, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)(i * 2654435761u) ^ (unsigned)(i >> 16);
        dst[i] = __float2half((float)(h & 0xffffu) / 65536.0f - 0.5f);
    }
}

static int allocate(ec_calib_gpu *g)
{
    EC_CUDA_TRY(cudaMalloc(&g->a, g->bytes), "cudaMalloc of the sweep buffer (%zu bytes)", g->bytes);
    EC_CUDA_TRY(cudaMalloc(&g->b, g->bytes), "cudaMalloc of the copy buffer (%zu bytes)", g->bytes);
    EC_CUDA_TRY(cudaMalloc(&g->sink, sizeof *g->sink), "cudaMalloc of the sweep sink");
    EC_CUBLAS_TRY(cublasCreate(&g->blas), "cublasCreate");
    /* Real data: a sweep over never-written memory could be served differently. */
    fill_pattern<<<g->blocks, 256>>>(g->a, g->bytes / 16);
    EC_CUDA_LAUNCHED("fill_pattern");
    EC_CUDA_TRY(cudaDeviceSynchronize(), "fill_pattern");
    return 0;
}

extern "C" int ec_calib_gpu_open(ec_calib_gpu **out, int device, size_t buffer_bytes,
                                 int gemm_n, ec_calib_device *info)
{
    *out = NULL;
    char device_name[32];
    snprintf(device_name, sizeof device_name, "cuda:%d", device);
    /* fp16: the calibration's GEMM; this also says "no driver" or "no code for this GPU". */
    if (ec_device_ready(device_name, EC_PREC_FP16) != 0) return -1;
    EC_CUDA_TRY(cudaSetDevice(device), "cudaSetDevice");
    cudaDeviceProp prop;
    EC_CUDA_TRY(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    memset(info, 0, sizeof *info);
    snprintf(info->name, sizeof info->name, "%s", prop.name);
    if (ec_device_gpu_uuid(device_name, info->uuid, sizeof info->uuid) != 0) return -1;
    info->total_mem_bytes = prop.totalGlobalMem;
    info->sm_count = prop.multiProcessorCount;

    buffer_bytes &= ~(size_t)15;
    size_t free_b = 0, total_b = 0;
    EC_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
    if (2 * buffer_bytes + (64u << 20) > free_b)
        return ec_set_error("calibration needs 2 x %zu bytes of GPU memory, %zu are free",
                            buffer_bytes, free_b);

    int per_sm = 0;
    EC_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, read_sweep, 256, 0),
                "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    ec_calib_gpu *g = (ec_calib_gpu *)calloc(1, sizeof *g);
    if (!g) return ec_set_error("out of host memory");
    g->device = device;
    g->bytes = buffer_bytes;
    g->gemm_n = gemm_n;
    g->blocks = prop.multiProcessorCount * (per_sm > 0 ? per_sm : 4);
    if (allocate(g) != 0) {
        ec_calib_gpu_close(g);
        return -1;
    }
    *out = g;
    return 0;
}

extern "C" void ec_calib_gpu_close(ec_calib_gpu *g)
{
    if (!g) return;
    if (g->blas) cublasDestroy(g->blas);
    cudaFree(g->a);
    cudaFree(g->b);
    cudaFree(g->sink);
    free(g);
}

/* Runs `launch` in batches until `seconds` have passed; each launch moves `bytes` and does
 * `flops`. Every launch is counted and timed, so a meter window around the call sees the same
 * work as the returned figures (callers warm up with a separate short call). */
template <typename F>
static int run_timed(F launch, double seconds, double bytes, double flops, const char *what,
                     ec_calib_load *out)
{
    double t0 = ec_now_s(), t;
    EC_CUDA_TRY(launch(), "%s", what);
    EC_CUDA_TRY(cudaDeviceSynchronize(), "%s", what);
    long n = 1;
    int batch = 1;
    for (t = ec_now_s(); t - t0 < seconds;) {
        for (int i = 0; i < batch; i++) EC_CUDA_TRY(launch(), "%s", what);
        EC_CUDA_TRY(cudaDeviceSynchronize(), "%s", what);
        n += batch;
        t = ec_now_s();
        /* Grow batches so host round trips stay a negligible share of the time. */
        if (batch < 64 && t - t0 < seconds / 4) batch *= 2;
    }
    out->elapsed_s = t - t0;
    out->bytes = bytes * (double)n;
    out->flops = flops * (double)n;
    return 0;
}

extern "C" int ec_calib_gpu_read(ec_calib_gpu *g, double seconds, ec_calib_load *out)
{
    size_t words = g->bytes / 16;
    auto launch = [&]() {
        read_sweep<<<g->blocks, 256>>>(g->a, words, g->sink);
        return cudaGetLastError();
    };
    return run_timed(launch, seconds, (double)g->bytes, 0, "read sweep", out);
}

extern "C" int ec_calib_gpu_copy(ec_calib_gpu *g, double seconds, ec_calib_load *out)
{
    auto launch = [&]() { return cudaMemcpyAsync(g->b, g->a, g->bytes, cudaMemcpyDeviceToDevice); };
    return run_timed(launch, seconds, 2.0 * (double)g->bytes, 0, "device-to-device copy", out);
}

extern "C" int ec_calib_gpu_gemm(ec_calib_gpu *g, double seconds, ec_calib_load *out)
{
    int n = g->gemm_n;
    size_t elems = (size_t)n * (size_t)n;
    if (3 * elems * sizeof(__half) > 2 * g->bytes)
        return ec_set_error("GEMM of %d^3 does not fit the calibration buffers", n);
    /* A and B live in the sweep buffer (overwriting its pattern: the GEMM runs last), C in the
     * copy buffer. */
    __half *a = (__half *)g->a, *b = a + elems, *c = (__half *)g->b;
    fill_half<<<g->blocks, 256>>>(a, 2 * elems);
    EC_CUDA_LAUNCHED("fill_half (GEMM inputs)");
    float alpha = 1.0f, beta = 0.0f;
    auto launch = [&]() {
        cublasStatus_t st = cublasGemmEx(g->blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a,
                                         CUDA_R_16F, n, b, CUDA_R_16F, n, &beta, c, CUDA_R_16F, n,
                                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        return st == CUBLAS_STATUS_SUCCESS ? cudaGetLastError() : cudaErrorUnknown;
    };
    double flops = 2.0 * (double)n * (double)n * (double)n;
    return run_timed(launch, seconds, 3.0 * (double)elems * sizeof(__half), flops, "cublasGemmEx",
                     out);
}
