/* gpu.c — GPU enumeration and selection (index, UUID, PCI bus id), what each GPU is and can do,
 * and one reading of all its telemetry with every value checked on its own. */
#include "meter_internal.h"

#include "ecocompute/common.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *ec_gpu_arch_name(unsigned arch)
{
    static const char *names[] = {
        [2] = "Kepler", [3] = "Maxwell", [4] = "Pascal", [5] = "Volta",     [6] = "Turing",
        [7] = "Ampere", [8] = "Ada",     [9] = "Hopper", [10] = "Blackwell"};
    if (arch < sizeof names / sizeof *names && names[arch]) return names[arch];
    return "unknown";
}

static double mw_to_w(nvmlReturn_t r, unsigned mw)
{
    return r == NVML_SUCCESS ? mw / 1000.0 : NAN;
}

/* Fills what the GPU is; missing facts stay NaN/unknown rather than failing the open. */
static void describe(const ec_nvml *nv, ec_gpu *g, unsigned index)
{
    ec_gpu_info *in = &g->info;
    in->index = index;
    if (EC_NVML(nv, DeviceGetName, g->handle, in->name, sizeof in->name) != NVML_SUCCESS)
        snprintf(in->name, sizeof in->name, "unknown");
    nvmlPciInfo_t pci;
    if (EC_NVML(nv, DeviceGetPciInfo, g->handle, &pci) == NVML_SUCCESS)
        snprintf(in->pci_bus_id, sizeof in->pci_bus_id, "%.31s", pci.busId);
    in->arch = 0;
    if (EC_NVML(nv, DeviceGetArchitecture, g->handle, &in->arch) != NVML_SUCCESS) in->arch = 0;
    unsigned a = 0, b = 0;
    nvmlReturn_t r = EC_NVML(nv, DeviceGetEnforcedPowerLimit, g->handle, &a);
    in->power_limit_w = mw_to_w(r, a);
    r = EC_NVML(nv, DeviceGetPowerManagementDefaultLimit, g->handle, &a);
    in->power_default_w = mw_to_w(r, a);
    r = EC_NVML(nv, DeviceGetPowerManagementLimitConstraints, g->handle, &a, &b);
    in->power_min_w = mw_to_w(r, a);
    in->power_max_w = mw_to_w(r, b);
    r = EC_NVML(nv, DeviceGetMaxClockInfo, g->handle, NVML_CLOCK_SM, &a);
    in->max_sm_mhz = r == NVML_SUCCESS ? a : NAN;
    r = EC_NVML(nv, DeviceGetMaxClockInfo, g->handle, NVML_CLOCK_MEM, &a);
    in->max_mem_mhz = r == NVML_SUCCESS ? a : NAN;
    int major = -1, minor = -1;
    if (EC_NVML(nv, DeviceGetCudaComputeCapability, g->handle, &major, &minor) != NVML_SUCCESS)
        major = minor = -1;
    in->cc_major = major;
    in->cc_minor = minor;
    r = EC_NVML(nv, DeviceGetMemoryBusWidth, g->handle, &a);
    in->mem_bus_bits = r == NVML_SUCCESS && a > 0 ? a : NAN;
    in->mem_bandwidth_gbs = 2.0 * in->max_mem_mhz * 1e6 * in->mem_bus_bits / 8.0 / 1e9;
    int mode = 0;
    r = EC_NVML(nv, DeviceGetPersistenceMode, g->handle, &mode);
    in->persistence_mode = r == NVML_SUCCESS ? mode == NVML_FEATURE_ENABLED : -1;
    unsigned long long mj;
    in->has_energy_counter =
        EC_NVML(nv, DeviceGetTotalEnergyConsumption, g->handle, &mj) == NVML_SUCCESS;
    nvmlFieldValue_t f[2] = {{.fieldId = NVML_FI_DEV_POWER_INSTANT},
                             {.fieldId = NVML_FI_DEV_POWER_AVERAGE}};
    if (EC_NVML(nv, DeviceGetFieldValues, g->handle, 2, f) == NVML_SUCCESS) {
        in->has_power_instant = f[0].nvmlReturn == NVML_SUCCESS;
        in->has_power_average = f[1].nvmlReturn == NVML_SUCCESS;
    }
}

static int all_digits(const char *s)
{
    if (!*s) return 0;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s)) return 0;
    return 1;
}

/* Resolves one selection token to an NVML index among `uuids` (count of them). */
static int resolve(const ec_nvml *nv, const char *tok, char (*uuids)[96], unsigned count)
{
    if (all_digits(tok)) {
        unsigned long i = strtoul(tok, NULL, 10);
        if (i >= count)
            return ec_set_error("unknown GPU '%s' (this machine has %u GPUs: 0..%u)", tok, count,
                                count ? count - 1 : 0);
        return (int)i;
    }
    if (!strncasecmp(tok, "MIG-", 4))
        return ec_set_error("GPU '%s' is a MIG slice; NVML has no per-slice energy", tok);
    char uuid[96];
    if (!strncasecmp(tok, "GPU-", 4)) {
        snprintf(uuid, sizeof uuid, "%s", tok);
    } else if (strchr(tok, ':')) {
        /* NVML accepts every spelling of a bus id ("0000:3b:00.0", "3B:00.0", ...). */
        nvmlDevice_t h;
        if (EC_NVML(nv, DeviceGetHandleByPciBusId, tok, &h) != NVML_SUCCESS ||
            nv->DeviceGetUUID(h, uuid, sizeof uuid) != NVML_SUCCESS)
            return ec_set_error("unknown GPU '%s' (no GPU has that PCI bus id)", tok);
    } else {
        return ec_set_error("unknown GPU '%s' (expected an index, a GPU-... UUID or a PCI bus id)",
                            tok);
    }
    for (unsigned i = 0; i < count; i++)
        if (!strcasecmp(uuids[i], uuid)) return (int)i;
    return ec_set_error("unknown GPU '%s' (no GPU has that UUID)", tok);
}

int ec_gpu_select(ec_meter *m, const char *selection)
{
    const ec_nvml *nv = &m->nv;
    unsigned count = 0;
    nvmlReturn_t r = nv->DeviceGetCount(&count);
    if (r != NVML_SUCCESS) return ec_set_error("cannot count GPUs: %s", ec_nvml_error(nv, r));
    if (count > EC_METER_MAX_GPUS) count = EC_METER_MAX_GPUS;
    nvmlDevice_t handles[EC_METER_MAX_GPUS];
    char uuids[EC_METER_MAX_GPUS][96];
    for (unsigned i = 0; i < count; i++) {
        r = nv->DeviceGetHandleByIndex(i, &handles[i]);
        if (r == NVML_SUCCESS) r = nv->DeviceGetUUID(handles[i], uuids[i], sizeof uuids[i]);
        if (r != NVML_SUCCESS)
            return ec_set_error("cannot open GPU %u: %s", i, ec_nvml_error(nv, r));
    }
    int chosen[EC_METER_MAX_GPUS], nchosen = 0;
    if (!selection || !*selection) {
        for (unsigned i = 0; i < count; i++)
            chosen[nchosen++] = (int)i;
    } else {
        char *copy = strdup(selection);
        if (!copy) abort();
        int rc = 0;
        /* strtok_r would skip empty items; "0,,1" is a typo worth reporting. */
        for (char *tok = copy, *next; tok && rc == 0; tok = next) {
            next = strchr(tok, ',');
            if (next) *next++ = '\0';
            while (isspace((unsigned char)*tok))
                tok++;
            tok[strcspn(tok, " \t")] = '\0';
            int idx = *tok ? resolve(nv, tok, uuids, count)
                           : ec_set_error("empty item in GPU list '%s'", selection);
            for (int k = 0; idx >= 0 && k < nchosen; k++)
                if (chosen[k] == idx) idx = ec_set_error("GPU '%s' is listed twice", tok);
            if (idx < 0)
                rc = -1;
            else
                chosen[nchosen++] = idx;
        }
        free(copy);
        if (rc) return -2;
    }
    for (int k = 0; k < nchosen; k++) {
        ec_gpu *g = &m->gpus[k];
        g->handle = handles[chosen[k]];
        snprintf(g->info.uuid, sizeof g->info.uuid, "%s", uuids[chosen[k]]);
        describe(nv, g, (unsigned)chosen[k]);
    }
    m->ngpus = nchosen;
    if (nchosen == 0) snprintf(m->gpu_unavailable, sizeof m->gpu_unavailable, "no GPU found");
    return 0;
}

/* True when r is a success; notes a lost GPU. */
static int ok(nvmlReturn_t r, unsigned *valid)
{
    if (r == NVML_ERROR_GPU_IS_LOST) *valid |= EC_SAMPLE_LOST;
    return r == NVML_SUCCESS;
}

void ec_gpu_read(const ec_nvml *nv, const ec_gpu *g, int pos, unsigned what, ec_gpu_sample *s)
{
    memset(s, 0, sizeof *s);
    s->gpu = pos;
    unsigned v = 0;
    /* f[0] (the energy counter) is left out unless asked for: reading it costs milliseconds of
     * CPU per call on Hopper, the power fields microseconds (docs/measurement.md). */
    nvmlFieldValue_t f[3] = {{.fieldId = NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION},
                             {.fieldId = NVML_FI_DEV_POWER_INSTANT},
                             {.fieldId = NVML_FI_DEV_POWER_AVERAGE}};
    int counter = (what & EC_READ_COUNTER) != 0;
    for (int i = 0; i < 3; i++) f[i].nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
    double t0 = ec_now_s();
    nvmlReturn_t r = EC_NVML(nv, DeviceGetFieldValues, g->handle, 3 - !counter, f + !counter);
    s->t_s = 0.5 * (t0 + ec_now_s());
    /* The call succeeds when any value was filled, so each value carries its own verdict. */
    if (ok(r, &v)) {
        if (ok(f[0].nvmlReturn, &v)) {
            s->energy_mj = f[0].valueType == NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
                               ? f[0].value.ullVal
                               : (unsigned long long)ec_nvml_value(&f[0]);
            v |= EC_SAMPLE_ENERGY;
        }
        if (ok(f[1].nvmlReturn, &v)) {
            s->power_instant_w = ec_nvml_value(&f[1]) / 1000.0;
            v |= EC_SAMPLE_POWER_INSTANT;
        }
        if (ok(f[2].nvmlReturn, &v)) {
            s->power_avg_w = ec_nvml_value(&f[2]) / 1000.0;
            v |= EC_SAMPLE_POWER_AVERAGE;
        }
    }
    if (counter && !(v & (EC_SAMPLE_ENERGY | EC_SAMPLE_LOST)) && g->info.has_energy_counter &&
        ok(EC_NVML(nv, DeviceGetTotalEnergyConsumption, g->handle, &s->energy_mj), &v))
        v |= EC_SAMPLE_ENERGY;
    if ((what & EC_READ_TELEMETRY) && !(v & EC_SAMPLE_LOST)) {
        if (ok(EC_NVML(nv, DeviceGetClockInfo, g->handle, NVML_CLOCK_SM, &s->sm_mhz), &v))
            v |= EC_SAMPLE_SM_CLOCK;
        if (ok(EC_NVML(nv, DeviceGetClockInfo, g->handle, NVML_CLOCK_MEM, &s->mem_mhz), &v))
            v |= EC_SAMPLE_MEM_CLOCK;
        nvmlTemperature_t tv = {.version = NVML_TEMPERATURE_V1, .sensorType = NVML_TEMPERATURE_GPU};
        unsigned tu;
        if (ok(EC_NVML(nv, DeviceGetTemperatureV, g->handle, &tv), &v)) {
            s->temp_c = tv.temperature;
            v |= EC_SAMPLE_TEMP;
        } else if (ok(EC_NVML(nv, DeviceGetTemperature, g->handle, NVML_TEMPERATURE_GPU, &tu),
                      &v)) {
            s->temp_c = (int)tu;
            v |= EC_SAMPLE_TEMP;
        }
        if (ok(EC_NVML(nv, DeviceGetClocksEventReasons, g->handle, &s->clock_event_reasons), &v))
            v |= EC_SAMPLE_CLOCK_REASONS;
        nvmlUtilization_t u;
        if (ok(EC_NVML(nv, DeviceGetUtilizationRates, g->handle, &u), &v)) {
            s->util_gpu_pct = u.gpu;
            s->util_mem_pct = u.memory;
            v |= EC_SAMPLE_UTIL;
        }
        nvmlMemory_t mem;
        if (ok(EC_NVML(nv, DeviceGetMemoryInfo, g->handle, &mem), &v)) {
            s->mem_used_bytes = mem.used;
            s->mem_total_bytes = mem.total;
            v |= EC_SAMPLE_MEMORY;
        }
    }
    /* Values from a GPU that fell off the bus are not data. */
    s->valid = v & EC_SAMPLE_LOST ? EC_SAMPLE_LOST : v;
}

void ec_gpu_read_all(ec_meter *m, unsigned what, ec_gpu_sample *out)
{
    for (int i = 0; i < m->ngpus; i++)
        ec_gpu_read(&m->nv, &m->gpus[i], i, what, &out[i]);
}
