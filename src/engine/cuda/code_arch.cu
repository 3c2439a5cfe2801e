/* code_arch.cu — which of this build's device code runs on a CUDA device, read from the code the
 * driver loads for a probe kernel, cached per device; and the one-line messages for a machine
 * the CUDA backend cannot run on (no driver, no device, no code for the GPU, a precision its
 * code lacks). See code_arch.h. */
#include "code_arch.h"

#include "common/cuda_check.h"
#include "ecocompute/engine.h"

#include <atomic>
#include <dlfcn.h>
#include <mutex>
#include <stdio.h>
#include <stdlib.h>

/* Compiled for the same architectures as every kernel of the library (one
 * CMAKE_CUDA_ARCHITECTURES for the target), so the driver picks the same code for it as for them. */
__global__ void ec_code_arch_probe_kernel() {}

enum { MAX_DEVICES = 64 };
/* Per device: (ptxVersion << 16 | binaryVersion) + 1 once known, 0 before. */
static std::atomic<int> cached_versions[MAX_DEVICES];

/* "NAME (compute capability X.Y)" of device d, for messages. */
static void describe(int d, char *buf, size_t len)
{
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, d) == cudaSuccess)
        snprintf(buf, len, "%s (compute capability %d.%d)", p.name, p.major, p.minor);
    else
        snprintf(buf, len, "CUDA device %d", d);
}

/* The probe's ptxVersion (the code's architecture, __CUDA_ARCH__ / 10) and binaryVersion (the
 * machine code's: the GPU's own when the driver compiled PTX); 0 with ec_last_error if none runs. */
static int code_versions(int device, int *binary)
{
    int v = device >= 0 && device < MAX_DEVICES ? cached_versions[device].load() : 0;
    if (v) {
        *binary = (v - 1) & 0xffff;
        return (v - 1) >> 16;
    }
    int current = 0;
    if (cudaGetDevice(&current) != cudaSuccess) current = -1;
    if (current != device && cudaSetDevice(device) != cudaSuccess) {
        ec_cuda_fail(__FILE__, __LINE__, cudaGetLastError(), "cudaSetDevice(%d)", device);
        return 0;
    }
    cudaFuncAttributes a;
    cudaError_t e = cudaFuncGetAttributes(&a, ec_code_arch_probe_kernel);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        char gpu[320];
        describe(device, gpu, sizeof gpu);
        if (e == cudaErrorNoKernelImageForDevice || e == cudaErrorInvalidDeviceFunction)
            ec_set_error("%s: this build has no GPU code for it (CUDA architectures: %s); rebuild "
                         "with -DCMAKE_CUDA_ARCHITECTURES=native",
                         gpu, ec_cuda_build_architectures());
        else
            ec_cuda_fail(__FILE__, __LINE__, e, "reading the code loaded for %s", gpu);
    }
    if (current >= 0 && current != device) (void)cudaSetDevice(current);
    if (e != cudaSuccess) return 0;
    if (device >= 0 && device < MAX_DEVICES)
        cached_versions[device].store((a.ptxVersion << 16 | a.binaryVersion) + 1);
    *binary = a.binaryVersion;
    return a.ptxVersion;
}

int ec_cuda_code_arch(int device)
{
    int binary;
    return code_versions(device, &binary);
}

unsigned ec_cuda_code_features(int device)
{
    int arch = ec_cuda_code_arch(device);
#ifdef ECOCOMPUTE_CUDA_WGMMA
    int arch_specific = arch == 90; /* the build's only code for 9.0 is sm_90a (CMakeLists.txt) */
#else
    int arch_specific = 0;
#endif
    return arch ? ec_gpu_features(arch, arch_specific) : 0;
}

/* Whether CUDA sees any GPU, asked once per process: the device count, or -1 with the reason. */
static int visible_devices;
static char no_devices[256];
static std::once_flag devices_once;

static void count_devices()
{
    cudaError_t e = cudaGetDeviceCount(&visible_devices);
    if (e == cudaSuccess && visible_devices > 0) return;
    visible_devices = -1;
    /* Without a driver the runtime says "CUDA driver version is insufficient": name the cause. */
    void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    int version = 0;
    if (!driver) {
        snprintf(no_devices, sizeof no_devices,
                 "no NVIDIA driver found (libcuda.so.1 not loadable): the CUDA backend needs one");
    } else if (e == cudaErrorInsufficientDriver && cudaDriverGetVersion(&version) == cudaSuccess) {
        snprintf(no_devices, sizeof no_devices,
                 "the NVIDIA driver supports CUDA %d.%d, this build needs CUDA %d.%d: update the "
                 "driver",
                 version / 1000, version % 1000 / 10, CUDART_VERSION / 1000,
                 CUDART_VERSION % 1000 / 10);
    } else if (e == cudaSuccess || e == cudaErrorNoDevice) {
        const char *visible = getenv("CUDA_VISIBLE_DEVICES");
        snprintf(no_devices, sizeof no_devices, "no CUDA GPU found (the NVIDIA driver is loaded%s%s%s)",
                 visible ? "; CUDA_VISIBLE_DEVICES=" : "", visible ? visible : "",
                 visible ? "" : " but sees none");
    } else {
        snprintf(no_devices, sizeof no_devices, "CUDA cannot list the GPUs: %s",
                 cudaGetErrorString(e));
    }
    if (driver) dlclose(driver);
    (void)cudaGetLastError();
}

int ec_cuda_device_exists(int device)
{
    std::call_once(devices_once, count_devices);
    if (visible_devices < 0) return ec_set_error("%s", no_devices);
    if (device < 0 || device >= visible_devices)
        return ec_set_error("CUDA device %d does not exist (%d device(s) visible)", device,
                            visible_devices);
    return 0;
}

int ec_cuda_device_ready(int device, ec_precision p)
{
    if (ec_cuda_device_exists(device) != 0) return -1;
    int binary = 0, arch = code_versions(device, &binary);
    if (!arch) return -1;
    const char *missing = ec_gpu_precision_missing(p, ec_cuda_code_features(device));
    if (!missing) return 0;
    char gpu[320];
    describe(device, gpu, sizeof gpu);
    return ec_set_error("%s: precision %s needs %s; this build runs %s_%d code there%s", gpu,
                        ec_precision_name(p), missing, binary == arch ? "sm" : "compute", arch,
                        p == EC_PREC_BF16 ? " (fp16 runs)" : "");
}
