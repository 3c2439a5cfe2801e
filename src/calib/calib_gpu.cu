/* calib_gpu.cu — GPU loads for calibration (see calib_gpu.h): the bandwidth and tensor-core
 * ceilings that "% of roofline" is measured against everywhere else. */
#include "calib_gpu.h"

#include "ecocompute/common.h"

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CALIB_CUDA(call, what)                                                                     \
    do {                                                                                           \
        cudaError_t err_ = (call);                                                                 \
        if (err_ != cudaSuccess)                                                                   \
            return ec_set_error("%s failed (%s:%d): %s", what, __FILE__, __LINE__,                 \
                                cudaGetErrorString(err_));                                         \
    } while (0)

#define CALIB_CUBLAS(call, what)                                                                   \
    do {                                                                                           \
        cublasStatus_t st_ = (call);                                                               \
        if (st_ != CUBLAS_STATUS_SUCCESS)                                                          \
            return ec_set_error("%s failed (%s:%d): cuBLAS status %d", what, __FILE__, __LINE__,   \
                                (int)st_);                                                         \
    } while (0)

struct ec_calib_gpu {
    int device;
    size_t bytes;      /* size of each buffer, B */
    uint4 *a, *b;      /* [bytes / 16] each */
    unsigned *sink;    /* [1]: keeps the read sweep from being optimised away */
    cublasHandle_t blas;
    int blocks;        /* read-sweep grid: enough resident blocks to fill every SM */
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

static void format_uuid(const cudaUUID_t *u, char *out, size_t len)
{
    const unsigned char *b = (const unsigned char *)u->bytes;
    snprintf(out, len,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

extern "C" int ec_calib_gpu_open(ec_calib_gpu **out, int device, size_t buffer_bytes,
                                 ec_calib_device *info)
{
    *out = NULL;
    int count = 0;
    CALIB_CUDA(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
    if (device < 0 || device >= count)
        return ec_set_error("CUDA device %d does not exist (%d device(s) visible)", device, count);
    CALIB_CUDA(cudaSetDevice(device), "cudaSetDevice");
    cudaDeviceProp prop;
    CALIB_CUDA(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    memset(info, 0, sizeof *info);
    snprintf(info->name, sizeof info->name, "%s", prop.name);
    format_uuid(&prop.uuid, info->uuid, sizeof info->uuid);
    info->total_mem_bytes = prop.totalGlobalMem;
    info->sm_count = prop.multiProcessorCount;

    buffer_bytes &= ~(size_t)15;
    size_t free_b = 0, total_b = 0;
    CALIB_CUDA(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
    if (2 * buffer_bytes + (64u << 20) > free_b)
        return ec_set_error("calibration needs 2 x %zu bytes of GPU memory, %zu are free",
                            buffer_bytes, free_b);

    ec_calib_gpu *g = (ec_calib_gpu *)calloc(1, sizeof *g);
    if (!g) return ec_set_error("out of host memory");
    g->device = device;
    g->bytes = buffer_bytes;
    int per_sm = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, read_sweep, 256, 0);
    g->blocks = prop.multiProcessorCount * (per_sm > 0 ? per_sm : 4);
    *out = g;
    CALIB_CUDA(cudaMalloc(&g->a, buffer_bytes), "cudaMalloc of the sweep buffer");
    CALIB_CUDA(cudaMalloc(&g->b, buffer_bytes), "cudaMalloc of the copy buffer");
    CALIB_CUDA(cudaMalloc(&g->sink, sizeof *g->sink), "cudaMalloc");
    CALIB_CUBLAS(cublasCreate(&g->blas), "cublasCreate");
    /* Real data: a sweep over never-written memory could be served differently. */
    fill_pattern<<<g->blocks, 256>>>(g->a, buffer_bytes / 16);
    CALIB_CUDA(cudaGetLastError(), "fill_pattern launch");
    CALIB_CUDA(cudaDeviceSynchronize(), "fill_pattern");
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
 * `flops`. One untimed pass first, so clocks and caches are in their steady state. */
template <typename F>
static int run_timed(F launch, double seconds, double bytes, double flops, const char *what,
                     ec_calib_load *out)
{
    CALIB_CUDA(launch(), what);
    CALIB_CUDA(cudaDeviceSynchronize(), what);
    long n = 0;
    double t0 = ec_now_s(), t = t0;
    int batch = 1;
    while (t - t0 < seconds) {
        for (int i = 0; i < batch; i++) CALIB_CUDA(launch(), what);
        CALIB_CUDA(cudaDeviceSynchronize(), what);
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

extern "C" int ec_calib_gpu_gemm(ec_calib_gpu *g, int n, double seconds, ec_calib_load *out)
{
    size_t elems = (size_t)n * (size_t)n;
    if (3 * elems * sizeof(__half) > 2 * g->bytes)
        return ec_set_error("GEMM of %d^3 does not fit the calibration buffers", n);
    /* A and B live in the (patterned) sweep buffer, C in the copy buffer: values do not matter
     * for speed, only that they are finite, which the fp16 view of the pattern is not always —
     * so fill A and B with a constant first. */
    __half *a = (__half *)g->a, *b = a + elems, *c = (__half *)g->b;
    CALIB_CUDA(cudaMemset(a, 0x3c, 2 * elems * sizeof(__half)), "cudaMemset of GEMM inputs");
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
