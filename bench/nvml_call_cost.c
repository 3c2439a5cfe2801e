/* nvml_call_cost.c — how much CPU time each NVML query the sampler makes costs on this machine
 * (thread CPU time and wall time per call, median of many calls). The sampler's schedule — energy
 * and power every tick, slower telemetry every 100 ms — rests on these numbers. */
#include "meter/nvml.h"

#include "ecocompute/common.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CALLS 400

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef enum { FIELDS, ENERGY_FN, SM_CLOCK, TEMPERATURE, EVENT_REASONS, UTILISATION, NQUERY } query;
static const char *const names[NQUERY] = {
    "GetFieldValues {83,186,185}", "GetTotalEnergyConsumption", "GetClockInfo(SM)",
    "GetTemperatureV",             "GetClocksEventReasons",     "GetUtilizationRates"};

static nvmlReturn_t call(const ec_nvml *nv, nvmlDevice_t d, query q)
{
    nvmlFieldValue_t f[3] = {{.fieldId = NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION},
                             {.fieldId = NVML_FI_DEV_POWER_INSTANT},
                             {.fieldId = NVML_FI_DEV_POWER_AVERAGE}};
    unsigned long long ull;
    unsigned u;
    nvmlTemperature_t t = {.version = NVML_TEMPERATURE_V1, .sensorType = NVML_TEMPERATURE_GPU};
    nvmlUtilization_t util;
    switch (q) {
    case FIELDS: return EC_NVML(nv, DeviceGetFieldValues, d, 3, f);
    case ENERGY_FN: return EC_NVML(nv, DeviceGetTotalEnergyConsumption, d, &ull);
    case SM_CLOCK: return EC_NVML(nv, DeviceGetClockInfo, d, NVML_CLOCK_SM, &u);
    case TEMPERATURE: return EC_NVML(nv, DeviceGetTemperatureV, d, &t);
    case EVENT_REASONS: return EC_NVML(nv, DeviceGetClocksEventReasons, d, &ull);
    default: return EC_NVML(nv, DeviceGetUtilizationRates, d, &util);
    }
}

int main(void)
{
    ec_nvml nv = {0};
    nvmlDevice_t d;
    if (ec_nvml_load(&nv) != 0 || nv.DeviceGetHandleByIndex(0, &d) != NVML_SUCCESS) {
        fprintf(stderr, "nvml_call_cost: %s\n", ec_last_error());
        return 1;
    }
    printf("%-30s %14s %14s %s\n", "NVML query", "CPU us/call", "wall us/call", "status");
    for (int q = 0; q < NQUERY; q++) {
        double cpu[CALLS], wall[CALLS];
        nvmlReturn_t r = 0;
        for (int i = 0; i < CALLS; i++) {
            double c0 = thread_cpu_s(), w0 = ec_now_s();
            r = call(&nv, d, (query)q);
            cpu[i] = (thread_cpu_s() - c0) * 1e6;
            wall[i] = (ec_now_s() - w0) * 1e6;
        }
        qsort(cpu, CALLS, sizeof *cpu, cmp);
        qsort(wall, CALLS, sizeof *wall, cmp);
        printf("%-30s %14.1f %14.1f %s\n", names[q], cpu[CALLS / 2], wall[CALLS / 2],
               ec_nvml_error(&nv, r));
    }
    ec_nvml_unload(&nv);
    return 0;
}
