/* device_ready.c — whether a device, by name, can run a precision with this build (ec_device_ready):
 * the check layers above the engine make before they start GPU work of their own (the
 * calibration's loads), so they never reach into the CUDA backend's internals. */
#include "ecocompute/engine.h"

#ifdef ECOCOMPUTE_HAVE_CUDA
#include "engine/cuda/code_arch.h"
#endif

int ec_device_ready(const char *device, ec_precision p)
{
    int cuda_index = -1;
    if (ec_device_parse(device, &cuda_index) != 0) return -1;
    const ec_qformat *f = ec_qformat_of(p);
    if (!f) return ec_set_error("device '%s': precision %d is not a precision", device, (int)p);
    if (cuda_index < 0) {
        if (f->backends & EC_QFORMAT_CPU) return 0;
        return ec_set_error("device '%s': the CPU backend does not run %s", device, f->name);
    }
#ifdef ECOCOMPUTE_HAVE_CUDA
    return ec_cuda_device_ready(cuda_index, p);
#else
    return ec_set_error("device '%s': this build has no CUDA backend", device);
#endif
}
