/* gpus.c — the GPUs one configuration runs on: their UUIDs (ec_bench_device_gpus), their
 * positions in the meter's selection, and a measured window's figures over just them. A sweep
 * over tensor-parallel world sizes meters the GPUs of its largest one; a configuration on
 * fewer ranks is charged only the energy of its own GPUs. */
#include "bench_gpus.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ec_bench_device_gpus(const char *device, int tp, char (*uuids)[96], int cap)
{
    int idx[EC_BENCH_MAX_TP];
    int n = ec_device_list(device, tp, idx, EC_BENCH_MAX_TP);
    if (n < 0) return -1;
    if (idx[0] < 0) return ec_set_error("device '%s' is not a GPU", device);
    if (n > cap) return ec_set_error("device '%s': more than %d GPUs", device, cap);
    for (int r = 0; r < n; r++) {
        char one[16];
        snprintf(one, sizeof one, "cuda:%d", idx[r]);
        if (ec_device_gpu_uuid(one, uuids[r], sizeof uuids[r]) != 0) return -1;
    }
    return n;
}

int ec_bench_config_gpus(ec_meter *m, const char *device, int tp, int *pos)
{
    int all = ec_meter_gpu_count(m);
    for (int i = 0; i < all; i++)
        pos[i] = i;
    char uuids[EC_BENCH_MAX_TP][96];
    int n = ec_bench_device_gpus(device, tp, uuids, EC_BENCH_MAX_TP);
    if (n <= 0) return all;
    int mine[EC_BENCH_MAX_TP];
    for (int r = 0; r < n; r++) {
        mine[r] = -1;
        for (int i = 0; i < all; i++)
            if (!strcmp(ec_meter_gpu(m, i)->uuid, uuids[r])) mine[r] = i;
        if (mine[r] < 0) return all;
    }
    memcpy(pos, mine, (size_t)n * sizeof *pos);
    return n;
}

static double sum_or_nan(double acc, double v)
{
    return isnan(acc) ? v : acc + v;
}

void ec_bench_window_over(const ec_window_result *w, const int *pos, int n, ec_window_result *out)
{
    *out = *w;
    if (n == w->ngpus) return; /* all of them: the meter's own sums (per-tick peak) */
    out->ngpus = n;
    out->gpu_energy_j = out->gpu_energy_counter_j = out->gpu_energy_integrated_j = 0;
    out->gpu_net_energy_j = out->gpu_idle_power_w = out->gpu_peak_power_w = 0;
    double var = 0;
    const char *method = NULL;
    out->clock_event_reasons = 0;
    for (int k = 0; k < n; k++) {
        const ec_gpu_window *g = &w->gpus[pos[k]];
        out->gpus[k] = *g;
        out->gpu_energy_j += g->energy_j;
        out->gpu_energy_counter_j = sum_or_nan(out->gpu_energy_counter_j, g->energy_counter_j);
        out->gpu_energy_integrated_j += g->energy_integrated_j;
        out->gpu_net_energy_j += g->net_energy_j;
        out->gpu_idle_power_w += g->idle_power_w;
        out->gpu_peak_power_w += g->peak_power_w;
        var += g->energy_uncert_j * g->energy_uncert_j;
        out->clock_event_reasons |= g->clock_event_reasons;
        method = !method || !strcmp(method, g->energy_method) ? g->energy_method : "mixed";
    }
    out->gpu_energy_uncert_j = sqrt(var);
    out->gpu_energy_method = method ? method : "none";
    out->gpu_avg_power_w = w->duration_s > 0 ? out->gpu_energy_j / w->duration_s : NAN;
    double counter = out->gpu_energy_counter_j, integrated = out->gpu_energy_integrated_j;
    out->gpu_disagreement_pct = counter > 0 ? 100.0 * (integrated - counter) / counter : NAN;
}

void ec_bench_energy_list(const ec_window_result *w, const int *pos, int n, int reps, char *out,
                          size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (int k = 0; k < n && used < len; k++) {
        double e = w->gpus[pos[k]].energy_j / reps;
        char num[32];
        for (int prec = 15; prec <= 17; prec++) { /* shortest text that reads back as e */
            snprintf(num, sizeof num, "%.*g", prec, e);
            if (strtod(num, NULL) == e) break;
        }
        used += (size_t)snprintf(out + used, len - used, "%s%s", k ? ";" : "", num);
    }
}
