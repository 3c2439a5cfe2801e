/* nvml.h (internal) — the few NVML types and functions the meter uses, declared locally and
 * resolved with dlopen/dlsym at run time, so the binary starts on hosts without the NVIDIA driver.
 * Layouts are those of NVIDIA's nvml.h, API version 13 (CUDA toolkit; NVML API reference). */
#ifndef EC_METER_NVML_H
#define EC_METER_NVML_H

#include <stdint.h>

typedef struct nvmlDevice_st *nvmlDevice_t;
typedef int nvmlReturn_t;

enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_GPU_IS_LOST = 15,
};
enum {
    NVML_VALUE_TYPE_DOUBLE = 0,
    NVML_VALUE_TYPE_UNSIGNED_INT = 1,
    NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
    NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
    NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
    NVML_VALUE_TYPE_SIGNED_INT = 5,
    NVML_VALUE_TYPE_UNSIGNED_SHORT = 6
};
enum { NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };
enum { NVML_TEMPERATURE_GPU = 0 };
enum { NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1 };
/* nvmlGpuTopologyLevel_t: the closest PCIe ancestor two GPUs share, nearest first. */
enum {
    NVML_TOPOLOGY_INTERNAL = 0,
    NVML_TOPOLOGY_SINGLE = 10,
    NVML_TOPOLOGY_MULTIPLE = 20,
    NVML_TOPOLOGY_HOSTBRIDGE = 30,
    NVML_TOPOLOGY_NODE = 40,
    NVML_TOPOLOGY_SYSTEM = 50
};
#define NVML_NVLINK_MAX_LINKS 18 /* links per GPU NVML enumerates (Hopper has 18) */

#define NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION 83 /* mJ since driver load */
#define NVML_FI_DEV_POWER_AVERAGE 185           /* mW, 1 s average */
#define NVML_FI_DEV_POWER_INSTANT 186           /* mW, current */
#define NVML_CLOCKS_EVENT_REASON_GPU_IDLE 0x1ull

typedef union {
    double dVal;
    int siVal;
    unsigned int uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    signed long long sllVal;
    unsigned short usVal;
} nvmlValue_t;

typedef struct {
    unsigned int fieldId;
    unsigned int scopeId;
    long long timestamp;
    long long latencyUsec;
    int valueType;
    nvmlReturn_t nvmlReturn;
    nvmlValue_t value;
} nvmlFieldValue_t;

typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

typedef struct {
    unsigned int gpu, memory;
} nvmlUtilization_t;

typedef struct {
    unsigned long long total, free, used; /* bytes (nvmlMemory_t, version 1) */
} nvmlMemory_t;

typedef struct {
    unsigned int version; /* sizeof | 1 << 24 */
    int sensorType;
    int temperature;
} nvmlTemperature_t;
#define NVML_TEMPERATURE_V1 ((unsigned)(sizeof(nvmlTemperature_t) | (1u << 24)))

/* Resolved entry points; every one but the first block may be NULL (older drivers). */
typedef struct {
    void *lib;
    nvmlReturn_t (*Init)(void);
    nvmlReturn_t (*Shutdown)(void);
    const char *(*ErrorString)(nvmlReturn_t);
    nvmlReturn_t (*DeviceGetCount)(unsigned int *);
    nvmlReturn_t (*DeviceGetHandleByIndex)(unsigned int, nvmlDevice_t *);
    nvmlReturn_t (*DeviceGetUUID)(nvmlDevice_t, char *, unsigned int);
    /* optional */
    nvmlReturn_t (*SystemGetDriverVersion)(char *, unsigned int);
    nvmlReturn_t (*DeviceGetHandleByUUID)(const char *, nvmlDevice_t *);
    nvmlReturn_t (*DeviceGetHandleByPciBusId)(const char *, nvmlDevice_t *);
    nvmlReturn_t (*DeviceGetName)(nvmlDevice_t, char *, unsigned int);
    nvmlReturn_t (*DeviceGetPciInfo)(nvmlDevice_t, nvmlPciInfo_t *);
    nvmlReturn_t (*DeviceGetArchitecture)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*DeviceGetEnforcedPowerLimit)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*DeviceGetPowerManagementDefaultLimit)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*DeviceGetPowerManagementLimitConstraints)(nvmlDevice_t, unsigned int *,
                                                             unsigned int *);
    nvmlReturn_t (*DeviceGetMaxClockInfo)(nvmlDevice_t, int, unsigned int *);
    nvmlReturn_t (*DeviceGetMemoryBusWidth)(nvmlDevice_t, unsigned int *); /* bits */
    nvmlReturn_t (*DeviceGetCudaComputeCapability)(nvmlDevice_t, int *, int *);
    nvmlReturn_t (*DeviceGetClockInfo)(nvmlDevice_t, int, unsigned int *);
    nvmlReturn_t (*DeviceGetPersistenceMode)(nvmlDevice_t, int *);
    nvmlReturn_t (*DeviceGetTotalEnergyConsumption)(nvmlDevice_t, unsigned long long *);
    nvmlReturn_t (*DeviceGetFieldValues)(nvmlDevice_t, int, nvmlFieldValue_t *);
    nvmlReturn_t (*DeviceGetTemperatureV)(nvmlDevice_t, nvmlTemperature_t *);
    nvmlReturn_t (*DeviceGetTemperature)(nvmlDevice_t, int, unsigned int *);
    nvmlReturn_t (*DeviceGetClocksEventReasons)(nvmlDevice_t, unsigned long long *);
    nvmlReturn_t (*DeviceGetUtilizationRates)(nvmlDevice_t, nvmlUtilization_t *);
    nvmlReturn_t (*DeviceGetMemoryInfo)(nvmlDevice_t, nvmlMemory_t *);
    nvmlReturn_t (*DeviceGetNvLinkState)(nvmlDevice_t, unsigned int, int *); /* link, isActive */
    nvmlReturn_t (*DeviceGetTopologyCommonAncestor)(nvmlDevice_t, nvmlDevice_t, int *);
} ec_nvml;

/* Calls an optional entry point; a missing one reads as FUNCTION_NOT_FOUND so callers check one
 * return code either way. */
#define EC_NVML(nv, fn, ...) ((nv)->fn ? (nv)->fn(__VA_ARGS__) : NVML_ERROR_FUNCTION_NOT_FOUND)

/* Loads the library and calls nvmlInit. Returns 0, or -1 with the reason in ec_last_error. */
int ec_nvml_load(ec_nvml *nv);
/* nvmlShutdown and dlclose; safe on a zeroed or failed ec_nvml. */
void ec_nvml_unload(ec_nvml *nv);
const char *ec_nvml_error(const ec_nvml *nv, nvmlReturn_t r);
/* A field value as a double, whatever type NVML chose to report it in. */
double ec_nvml_value(const nvmlFieldValue_t *v);

#endif
