/* fake_nvml.c — a test double of libnvidia-ml.so, loaded by the meter through
 * ECOCOMPUTE_NVML_LIBRARY. It plays a scripted scenario read from the environment at nvmlInit:
 *
 *   FAKE_NVML="gpus=2 power=100,1.0:400 gpu1.counter=off gpu0.lost=1.5 ..."
 *   FAKE_NVML_T0=<CLOCK_MONOTONIC seconds>   time origin of the scenario (default: nvmlInit)
 *
 * Items (an item may be prefixed "gpuN." to apply to one GPU only; later items win):
 *   gpus=N             number of GPUs (default 1, at most 8)
 *   init=fail          nvmlInit fails with DRIVER_NOT_LOADED
 *   power=W[,T:W...]   piecewise-constant board power in W, switching at T seconds
 *   counter=off        the energy counter (function and field 83) is NOT_SUPPORTED
 *   instant=fail       field 186 fails; avg=fail: field 185 fails
 *   lost=T             from T seconds on, every call answers GPU_IS_LOST
 *   reset=T            the energy counter restarts from 0 at T seconds (driver reload)
 *   counter_period=S   the energy counter moves only every S seconds (real ones: ~0.1 s)
 *   reasons=MASK       clocks-event reasons bitmask (default 0x1, GpuIdle)
 *   temp=C             temperature in °C (default 40)
 *   cc=MAJOR.MINOR     CUDA compute capability (default 9.0); bus=BITS memory bus width
 *                      (default 5120; 0: the call is NOT_SUPPORTED)
 *   slow=MS            from slow_from=T seconds on (default 0), every energy-counter read
 *                      (function or field 83) takes MS milliseconds (a hung driver call)
 *   nvlinks=K          active NVLink links (of 18; default 0)
 *   topology=LEVEL     PCIe common ancestor NVML reports between any two GPUs (0, 10, ... 50;
 *                      default: the call is NOT_SUPPORTED)
 * Energy is the exact integral of the power script (mJ), starting from 5,000,000 mJ. */
#include "meter/nvml.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>

#define MAXG 8
#define MAXSEG 16
#define COUNTER_BASE_MJ 5000000.0

struct nvmlDevice_st {
    int index;
};

typedef struct {
    int nseg;
    double seg_t[MAXSEG], seg_w[MAXSEG]; /* power seg_w[i] from seg_t[i] (s) on */
    int counter_off, instant_fail, avg_fail;
    double lost_t, reset_t, counter_period, slow_ms, slow_from;
    unsigned long long reasons;
    int temp;
    int cc_major, cc_minor;
    unsigned bus_bits;
    int nvlinks, topology;
} fake_gpu;

static struct {
    int init_fail, n;
    double t0;
    fake_gpu g[MAXG];
} S;
static struct nvmlDevice_st devices[MAXG];

/* Exported entry points (the ABI of nvml.h, as declared in src/meter/nvml.h). */
nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlShutdown(void);
const char *nvmlErrorString(nvmlReturn_t r);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *n);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t *d);
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *d);
nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus, nvmlDevice_t *d);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *buf, unsigned len);
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *buf, unsigned len);
nvmlReturn_t nvmlSystemGetDriverVersion(char *buf, unsigned len);
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *p);
nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t d, unsigned *arch);
nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned *mw);
nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t d, unsigned *mw);
nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t d, unsigned *lo,
                                                          unsigned *hi);
nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, int type, unsigned *mhz);
nvmlReturn_t nvmlDeviceGetMemoryBusWidth(nvmlDevice_t d, unsigned *bits);
nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t d, int *major, int *minor);
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned *mhz);
nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t d, int *mode);
nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long *mj);
nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t d, int n, nvmlFieldValue_t *v);
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned *c);
nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long *r);
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m);
nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned link, int *active);
nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t a, nvmlDevice_t b, int *level);

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double scenario_t(void)
{
    return mono_now() - S.t0;
}

/* A counter read of a GPU scripted as slow: sleeps like a driver call that hangs. */
static void maybe_slow(const fake_gpu *g)
{
    if (g->slow_ms <= 0 || scenario_t() < g->slow_from) return;
    struct timespec ts = {(time_t)(g->slow_ms / 1000), (long)(fmod(g->slow_ms, 1000) * 1e6)};
    nanosleep(&ts, NULL);
}

static void parse_power(fake_gpu *g, const char *v)
{
    g->nseg = 0;
    for (const char *p = v; p && *p && g->nseg < MAXSEG;) {
        char *end;
        double a = strtod(p, &end);
        if (*end == ':') {
            g->seg_t[g->nseg] = a;
            g->seg_w[g->nseg] = strtod(end + 1, &end);
        } else {
            g->seg_t[g->nseg] = 0;
            g->seg_w[g->nseg] = a;
        }
        g->nseg++;
        p = *end == ',' ? end + 1 : NULL;
    }
}

static void apply(fake_gpu *g, const char *key, const char *v)
{
    if (!strcmp(key, "power"))
        parse_power(g, v);
    else if (!strcmp(key, "counter"))
        g->counter_off = !strcmp(v, "off");
    else if (!strcmp(key, "instant"))
        g->instant_fail = !strcmp(v, "fail");
    else if (!strcmp(key, "avg"))
        g->avg_fail = !strcmp(v, "fail");
    else if (!strcmp(key, "lost"))
        g->lost_t = atof(v);
    else if (!strcmp(key, "reset"))
        g->reset_t = atof(v);
    else if (!strcmp(key, "counter_period"))
        g->counter_period = atof(v);
    else if (!strcmp(key, "reasons"))
        g->reasons = strtoull(v, NULL, 0);
    else if (!strcmp(key, "slow"))
        g->slow_ms = atof(v);
    else if (!strcmp(key, "slow_from"))
        g->slow_from = atof(v);
    else if (!strcmp(key, "cc"))
        sscanf(v, "%d.%d", &g->cc_major, &g->cc_minor);
    else if (!strcmp(key, "bus"))
        g->bus_bits = (unsigned)strtoul(v, NULL, 10);
    else if (!strcmp(key, "temp"))
        g->temp = atoi(v);
    else if (!strcmp(key, "nvlinks"))
        g->nvlinks = atoi(v);
    else if (!strcmp(key, "topology"))
        g->topology = atoi(v);
    else
        fprintf(stderr, "fake_nvml: unknown item '%s'\n", key);
}

static void parse_scenario(const char *text)
{
    memset(&S, 0, sizeof S);
    S.n = 1;
    for (int i = 0; i < MAXG; i++) {
        devices[i].index = i;
        S.g[i] = (fake_gpu){.nseg = 1,
                            .seg_w = {100},
                            .lost_t = INFINITY,
                            .reset_t = INFINITY,
                            .reasons = 0x1,
                            .temp = 40,
                            .cc_major = 9,
                            .bus_bits = 5120,
                            .topology = -1};
    }
    char *copy = strdup(text ? text : ""), *save = NULL;
    for (char *item = strtok_r(copy, " \t\n", &save); item; item = strtok_r(NULL, " \t\n", &save)) {
        char *eq = strchr(item, '=');
        const char *v = eq ? (*eq = '\0', eq + 1) : "";
        int only = -1;
        if (!strncmp(item, "gpu", 3) && strchr(item, '.')) {
            only = atoi(item + 3);
            item = strchr(item, '.') + 1;
        }
        if (!strcmp(item, "gpus"))
            S.n = atoi(v) < MAXG ? atoi(v) : MAXG;
        else if (!strcmp(item, "init"))
            S.init_fail = !strcmp(v, "fail");
        else
            for (int i = 0; i < MAXG; i++)
                if (only < 0 || only == i) apply(&S.g[i], item, v);
    }
    free(copy);
}

/* ∫ power dt over [a, b] seconds, in J. */
static double integral(const fake_gpu *g, double a, double b)
{
    double e = 0;
    for (int i = 0; i < g->nseg; i++) {
        double lo = i == 0 ? -INFINITY : g->seg_t[i];
        double hi = i + 1 < g->nseg ? g->seg_t[i + 1] : INFINITY;
        double x = fmax(lo, a), y = fmin(hi, b);
        if (y > x) e += g->seg_w[i] * (y - x);
    }
    return e;
}

static double power_at(const fake_gpu *g, double t)
{
    int i = 0;
    while (i + 1 < g->nseg && t >= g->seg_t[i + 1])
        i++;
    return g->seg_w[i];
}

static unsigned long long counter_mj(const fake_gpu *g, double t)
{
    if (g->counter_period > 0) t = floor(t / g->counter_period) * g->counter_period;
    if (t >= g->reset_t) return (unsigned long long)(integral(g, g->reset_t, t) * 1000.0);
    return (unsigned long long)(COUNTER_BASE_MJ + integral(g, 0, fmax(t, 0)) * 1000.0);
}

/* The device's scenario, or NULL with *r set when the call must fail. */
static const fake_gpu *dev(nvmlDevice_t d, nvmlReturn_t *r)
{
    if (!d || d < devices || d >= devices + S.n) {
        *r = 2; /* INVALID_ARGUMENT */
        return NULL;
    }
    const fake_gpu *g = &S.g[d->index];
    if (scenario_t() >= g->lost_t) {
        *r = NVML_ERROR_GPU_IS_LOST;
        return NULL;
    }
    *r = NVML_SUCCESS;
    return g;
}

#define DEV_OR_RETURN(d)                                                                           \
    nvmlReturn_t r_;                                                                               \
    const fake_gpu *g = dev(d, &r_);                                                               \
    if (!g) return r_

nvmlReturn_t nvmlInit_v2(void)
{
    parse_scenario(getenv("FAKE_NVML"));
    const char *t0 = getenv("FAKE_NVML_T0");
    S.t0 = t0 && *t0 ? atof(t0) : mono_now();
    return S.init_fail ? 9 /* DRIVER_NOT_LOADED */ : NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void)
{
    return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t r)
{
    switch (r) {
    case NVML_SUCCESS:
        return "Success";
    case NVML_ERROR_NOT_SUPPORTED:
        return "Not Supported";
    case 9:
        return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST:
        return "GPU is lost";
    default:
        return "Unknown Error";
    }
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *n)
{
    *n = (unsigned)S.n;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t *d)
{
    if (i >= (unsigned)S.n) return 2;
    *d = &devices[i];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *buf, unsigned len)
{
    DEV_OR_RETURN(d);
    snprintf(buf, len, "GPU-fa4e0000-0000-0000-0000-00000000000%d", (int)(g - S.g));
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *d)
{
    for (int i = 0; i < S.n; i++) {
        char u[96];
        if (nvmlDeviceGetUUID(&devices[i], u, sizeof u) == NVML_SUCCESS && !strcasecmp(u, uuid)) {
            *d = &devices[i];
            return NVML_SUCCESS;
        }
    }
    return 6; /* NOT_FOUND */
}

/* GPU i sits on bus 0x1A + i; NVML accepts domain:bus:device.function or bus:device.function. */
nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus, nvmlDevice_t *d)
{
    unsigned dom, b, dv, fn;
    char extra;
    if (sscanf(bus, "%x:%x:%x.%x%c", &dom, &b, &dv, &fn, &extra) != 4 &&
        sscanf(bus, "%x:%x.%x%c", &b, &dv, &fn, &extra) != 3)
        return 2;
    if (b < 0x1A || b >= 0x1Au + (unsigned)S.n || dv != 0 || fn != 0) return 6;
    *d = &devices[b - 0x1A];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *buf, unsigned len)
{
    DEV_OR_RETURN(d);
    snprintf(buf, len, "Fake H100 %d", (int)(g - S.g));
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *buf, unsigned len)
{
    snprintf(buf, len, "580.00-fake");
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *p)
{
    DEV_OR_RETURN(d);
    memset(p, 0, sizeof *p);
    p->bus = 0x1Au + (unsigned)(g - S.g);
    snprintf(p->busId, sizeof p->busId, "00000000:%02X:00.0", p->bus);
    snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "0000:%02X:00.0", p->bus);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t d, unsigned *arch)
{
    DEV_OR_RETURN(d);
    *arch = 9; /* Hopper */
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned *mw)
{
    DEV_OR_RETURN(d);
    *mw = 700000;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t d, unsigned *mw)
{
    DEV_OR_RETURN(d);
    *mw = 700000;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t d, unsigned *lo,
                                                          unsigned *hi)
{
    DEV_OR_RETURN(d);
    *lo = 200000;
    *hi = 700000;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, int type, unsigned *mhz)
{
    DEV_OR_RETURN(d);
    *mhz = type == NVML_CLOCK_MEM ? 2619 : 1980;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryBusWidth(nvmlDevice_t d, unsigned *bits)
{
    DEV_OR_RETURN(d);
    if (!S.g[d->index].bus_bits) return NVML_ERROR_NOT_SUPPORTED;
    *bits = S.g[d->index].bus_bits;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t d, int *major, int *minor)
{
    DEV_OR_RETURN(d);
    *major = S.g[d->index].cc_major;
    *minor = S.g[d->index].cc_minor;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned *mhz)
{
    DEV_OR_RETURN(d);
    *mhz = type == NVML_CLOCK_MEM ? 2619 : 1755;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t d, int *mode)
{
    DEV_OR_RETURN(d);
    *mode = NVML_FEATURE_ENABLED;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long *mj)
{
    DEV_OR_RETURN(d);
    if (g->counter_off) return NVML_ERROR_NOT_SUPPORTED;
    maybe_slow(g);
    *mj = counter_mj(g, scenario_t());
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t d, int n, nvmlFieldValue_t *v)
{
    DEV_OR_RETURN(d);
    for (int i = 0; i < n; i++)
        if (v[i].fieldId == NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION && !g->counter_off) {
            maybe_slow(g);
            break;
        }
    double t = scenario_t();
    struct timeval tv;
    gettimeofday(&tv, NULL);
    for (int i = 0; i < n; i++) {
        v[i].timestamp = (long long)tv.tv_sec * 1000000 + tv.tv_usec;
        v[i].latencyUsec = 0;
        v[i].nvmlReturn = NVML_SUCCESS;
        switch (v[i].fieldId) {
        case NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION:
            v[i].valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
            v[i].value.ullVal = counter_mj(g, t);
            if (g->counter_off) v[i].nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
            break;
        case NVML_FI_DEV_POWER_INSTANT:
            v[i].valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
            v[i].value.uiVal = (unsigned)(power_at(g, t) * 1000.0 + 0.5);
            if (g->instant_fail) v[i].nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
            break;
        case NVML_FI_DEV_POWER_AVERAGE:
            v[i].valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
            v[i].value.uiVal = (unsigned)(integral(g, t - 1.0, t) * 1000.0 + 0.5);
            if (g->avg_fail) v[i].nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
            break;
        default:
            v[i].nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
        }
    }
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned *c)
{
    DEV_OR_RETURN(d);
    if (sensor != 0) return 2;
    *c = (unsigned)g->temp;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long *r)
{
    DEV_OR_RETURN(d);
    *r = g->reasons;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u)
{
    DEV_OR_RETURN(d);
    u->gpu = 50;
    u->memory = 30;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
    DEV_OR_RETURN(d);
    m->total = 80ull << 30;
    m->used = 1ull << 30;
    m->free = m->total - m->used;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned link, int *active)
{
    DEV_OR_RETURN(d);
    if (link >= NVML_NVLINK_MAX_LINKS) return 2; /* INVALID_ARGUMENT */
    *active = (int)link < g->nvlinks ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t a, nvmlDevice_t b, int *level)
{
    DEV_OR_RETURN(a);
    nvmlReturn_t r;
    if (!dev(b, &r)) return r;
    if (g->topology < 0) return NVML_ERROR_NOT_SUPPORTED;
    *level = g->topology;
    return NVML_SUCCESS;
}
