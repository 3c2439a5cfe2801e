/* nvml.c — loads libnvidia-ml at run time and resolves the entry points declared in nvml.h,
 * preferring versioned symbols (_v2/_v3) and falling back to the older names. */
#include "nvml.h"

#include "ecocompute/common.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* The first of the NULL-terminated names the library exports, or NULL. */
static void *first_symbol(void *lib, ...)
{
    va_list ap;
    va_start(ap, lib);
    void *p = NULL;
    for (const char *name; !p && (name = va_arg(ap, const char *));)
        p = dlsym(lib, name);
    va_end(ap);
    return p;
}

/* ISO C has no conversion from void * to a function pointer; POSIX guarantees the bytes match. */
#define RESOLVE(field, ...)                                                                        \
    do {                                                                                           \
        void *p_ = first_symbol(nv->lib, __VA_ARGS__, (const char *)NULL);                         \
        memcpy(&nv->field, &p_, sizeof p_);                                                        \
    } while (0)

int ec_nvml_load(ec_nvml *nv)
{
    memset(nv, 0, sizeof *nv);
    const char *override = getenv("ECOCOMPUTE_NVML_LIBRARY");
    if (override && *override) {
        nv->lib = dlopen(override, RTLD_NOW | RTLD_LOCAL);
        if (!nv->lib) return ec_set_error("cannot load %s: %s", override, dlerror());
    } else {
        /* The unversioned name ships only with development packages; driver-only hosts have .1. */
        nv->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!nv->lib) nv->lib = dlopen("libnvidia-ml.so", RTLD_NOW | RTLD_LOCAL);
        if (!nv->lib) return ec_set_error("no NVIDIA driver (libnvidia-ml.so.1 not found)");
    }
    RESOLVE(Init, "nvmlInit_v2", "nvmlInit");
    RESOLVE(Shutdown, "nvmlShutdown");
    RESOLVE(ErrorString, "nvmlErrorString");
    /* The unversioned GetCount skips devices we may not access, which shifts indices. */
    RESOLVE(DeviceGetCount, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
    RESOLVE(DeviceGetHandleByIndex, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
    RESOLVE(DeviceGetUUID, "nvmlDeviceGetUUID");
    RESOLVE(SystemGetDriverVersion, "nvmlSystemGetDriverVersion");
    RESOLVE(DeviceGetHandleByUUID, "nvmlDeviceGetHandleByUUID");
    RESOLVE(DeviceGetHandleByPciBusId, "nvmlDeviceGetHandleByPciBusId_v2",
            "nvmlDeviceGetHandleByPciBusId");
    RESOLVE(DeviceGetName, "nvmlDeviceGetName");
    RESOLVE(DeviceGetPciInfo, "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2");
    RESOLVE(DeviceGetArchitecture, "nvmlDeviceGetArchitecture");
    RESOLVE(DeviceGetEnforcedPowerLimit, "nvmlDeviceGetEnforcedPowerLimit");
    RESOLVE(DeviceGetPowerManagementDefaultLimit, "nvmlDeviceGetPowerManagementDefaultLimit");
    RESOLVE(DeviceGetPowerManagementLimitConstraints,
            "nvmlDeviceGetPowerManagementLimitConstraints");
    RESOLVE(DeviceGetMaxClockInfo, "nvmlDeviceGetMaxClockInfo");
    RESOLVE(DeviceGetMemoryBusWidth, "nvmlDeviceGetMemoryBusWidth");
    RESOLVE(DeviceGetCudaComputeCapability, "nvmlDeviceGetCudaComputeCapability");
    RESOLVE(DeviceGetClockInfo, "nvmlDeviceGetClockInfo");
    RESOLVE(DeviceGetPersistenceMode, "nvmlDeviceGetPersistenceMode");
    RESOLVE(DeviceGetTotalEnergyConsumption, "nvmlDeviceGetTotalEnergyConsumption");
    RESOLVE(DeviceGetFieldValues, "nvmlDeviceGetFieldValues");
    RESOLVE(DeviceGetTemperatureV, "nvmlDeviceGetTemperatureV");
    RESOLVE(DeviceGetTemperature, "nvmlDeviceGetTemperature");
    /* Renamed in CUDA 12: "throttle" reasons became "clocks event" reasons. */
    RESOLVE(DeviceGetClocksEventReasons, "nvmlDeviceGetCurrentClocksEventReasons",
            "nvmlDeviceGetCurrentClocksThrottleReasons");
    RESOLVE(DeviceGetUtilizationRates, "nvmlDeviceGetUtilizationRates");
    RESOLVE(DeviceGetMemoryInfo, "nvmlDeviceGetMemoryInfo");
    RESOLVE(DeviceGetNvLinkState, "nvmlDeviceGetNvLinkState");
    RESOLVE(DeviceGetTopologyCommonAncestor, "nvmlDeviceGetTopologyCommonAncestor");

    if (!nv->Init || !nv->Shutdown || !nv->ErrorString || !nv->DeviceGetCount ||
        !nv->DeviceGetHandleByIndex || !nv->DeviceGetUUID) {
        dlclose(nv->lib);
        nv->lib = NULL;
        return ec_set_error("the NVML library lacks required functions (driver too old?)");
    }
    nvmlReturn_t r = nv->Init();
    if (r != NVML_SUCCESS) {
        int rc = ec_set_error("no usable NVIDIA driver: nvmlInit failed: %s", nv->ErrorString(r));
        dlclose(nv->lib);
        nv->lib = NULL;
        return rc;
    }
    return 0;
}

void ec_nvml_unload(ec_nvml *nv)
{
    if (!nv->lib) return;
    /* A failing shutdown leaves nothing for us to undo; the library is released either way. */
    (void)nv->Shutdown();
    dlclose(nv->lib);
    nv->lib = NULL;
}

const char *ec_nvml_error(const ec_nvml *nv, nvmlReturn_t r)
{
    return nv->ErrorString ? nv->ErrorString(r) : "NVML not loaded";
}

double ec_nvml_value(const nvmlFieldValue_t *v)
{
    switch (v->valueType) {
    case NVML_VALUE_TYPE_DOUBLE:
        return v->value.dVal;
    case NVML_VALUE_TYPE_UNSIGNED_INT:
        return (double)v->value.uiVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG:
        return (double)v->value.ulVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
        return (double)v->value.ullVal;
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
        return (double)v->value.sllVal;
    case NVML_VALUE_TYPE_SIGNED_INT:
        return (double)v->value.siVal;
    case NVML_VALUE_TYPE_UNSIGNED_SHORT:
        return (double)v->value.usVal;
    default:
        return (double)v->value.uiVal;
    }
}
