/* backend.c — the backend factory (device name → backend) and the load options' defaults. */
#include "ecocompute/engine.h"

#include "engine/cpu/cpu_backend.h"
#include "engine/tp.h"
#include "engine/tp_backend.h"
#ifdef ECOCOMPUTE_HAVE_CUDA
#include "engine/cuda/cuda_backend.h"
#endif

#include <stdlib.h>
#include <string.h>

const char *ec_kernels_name(ec_kernels k)
{
    return k == EC_KERNELS_REFERENCE ? "reference" : "fused";
}

int ec_kernels_parse(const char *name, ec_kernels *out)
{
    if (!strcmp(name, "fused"))
        *out = EC_KERNELS_FUSED;
    else if (!strcmp(name, "reference"))
        *out = EC_KERNELS_REFERENCE;
    else
        return ec_set_error("unknown kernel family '%s' (fused, reference)", name);
    return 0;
}

const char *ec_linear_input_name(ec_linear_input i)
{
    static const char *const names[EC_LINEAR_INPUTS] = {"qkv", "o", "gate/up", "down"};
    return i >= 0 && i < EC_LINEAR_INPUTS ? names[i] : "?";
}

void ec_load_options_default(ec_load_options *o)
{
    memset(o, 0, sizeof *o);
    o->precision = EC_PREC_FP16;
    o->kernels = EC_KERNELS_FUSED;
    o->int8_threshold = EC_INT8_THRESHOLD;
    o->max_batch = 1;
}

int ec_device_parse(const char *device, int *cuda_index)
{
    if (!strcmp(device, "cpu")) {
        *cuda_index = -1;
        return 0;
    }
    if (!strcmp(device, "cuda")) {
        *cuda_index = 0;
        return 0;
    }
    if (!strncmp(device, "cuda:", 5)) {
        char *end;
        long idx = strtol(device + 5, &end, 10);
        if (device[5] >= '0' && device[5] <= '9' && !*end && idx <= 255) {
            *cuda_index = (int)idx;
            return 0;
        }
    }
    return ec_set_error("unknown device '%s' (cpu, cuda, cuda:N)", device);
}

int ec_device_list(const char *device, int tp, int *idx, int cap)
{
    if (tp < 0) return ec_set_error("tensor-parallel ranks must be >= 1, not %d", tp);
    const char *comma = strchr(device, ',');
    if (!comma) {
        int first;
        if (ec_device_parse(device, &first) != 0) return -1;
        int n = tp > 0 ? tp : 1;
        if (n > cap)
            return ec_set_error("device '%s': %d tensor-parallel ranks, at most %d are supported",
                                device, n, cap);
        for (int r = 0; r < n; r++)
            idx[r] = first < 0 ? -1 : first + r;
        return n;
    }
    if (strncmp(device, "cuda:", 5))
        return ec_set_error("device list '%s': lists are of GPUs, as cuda:0,1", device);
    int n = 0;
    for (const char *p = device + 5;; p++) {
        char *end;
        long v = strtol(p, &end, 10);
        if (*p < '0' || *p > '9' || v > 255 || (*end && *end != ','))
            return ec_set_error("device list '%s': '%.*s' is not a GPU index", device,
                                (int)strcspn(p, ","), p);
        for (int r = 0; r < n; r++)
            if (idx[r] == v)
                return ec_set_error("device list '%s': GPU %ld is listed twice", device, v);
        if (n == cap)
            return ec_set_error("device list '%s': more than %d GPUs", device, cap);
        idx[n++] = (int)v;
        p = end;
        if (!*end) break;
    }
    if (tp > 0 && tp != n)
        return ec_set_error("device list '%s' has %d GPUs but %d tensor-parallel ranks were asked "
                            "for", device, n, tp);
    return n;
}

int ec_device_gpu_uuid(const char *device, char *buf, size_t len)
{
    int cuda_index = -1;
    if (ec_device_parse(device, &cuda_index) != 0) return -1;
    if (cuda_index < 0) return ec_set_error("device '%s' is not a GPU", device);
#ifdef ECOCOMPUTE_HAVE_CUDA
    return ec_cuda_device_uuid(cuda_index, buf, len);
#else
    (void)buf, (void)len;
    return ec_set_error("device '%s': this build has no CUDA backend", device);
#endif
}

int ec_backend_create(ec_backend **out, const char *device)
{
    int cuda_index = -1;
    if (ec_device_parse(device, &cuda_index) != 0) return -1;
    if (cuda_index >= 0) {
#ifdef ECOCOMPUTE_HAVE_CUDA
        return ec_cuda_backend_create(out, cuda_index);
#else
        return ec_set_error("device '%s': this build has no CUDA backend (nvcc was not found "
                            "when it was configured)",
                            device);
#endif
    }
    ec_backend *b = calloc(1, sizeof *b);
    if (!b) return ec_set_error("out of memory");
    b->ops = &ec_cpu_backend_ops;
    *out = b;
    return 0;
}

int ec_backend_open(ec_backend **out, const char *device, const ec_model *m, ec_load_options *o)
{
    *out = NULL;
    int idx[EC_TP_MAX_WORLD];
    int world = ec_device_list(device, o->tp, idx, EC_TP_MAX_WORLD);
    if (world < 0) return -1;
    o->device = idx[0];
    if (world > 1 || strchr(device, ',')) return ec_tp_backend_open(out, idx, world, m, o);
    if (ec_device_parse(device, &o->device) != 0) return -1;
    if (ec_backend_create(out, device) != 0) return -1;
    if ((*out)->ops->load(*out, m, o) != 0) {
        ec_backend_destroy(*out);
        *out = NULL;
        return -2;
    }
    return 0;
}

void ec_backend_destroy(ec_backend *b)
{
    if (!b) return;
    b->ops->destroy(b);
    free(b);
}
