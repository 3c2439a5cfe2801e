/* measure_window.c — an example program built against the installed ecocompute library: it opens
 * the meter, measures one named window around some work of its own (a CPU loop) and prints the
 * window's duration and energy: the GPUs' (gross, and net of idle when --idle was given) and the
 * CPU's (RAPL), or why each cannot be read. Build (after `cmake --install`):
 *   cc -o measure_window measure_window.c $(pkg-config --cflags --libs ecocompute) -lm
 * Run: ./measure_window [SECONDS_OF_WORK [IDLE_SECONDS]]  (defaults 1 and 0). */
#include <ecocompute/common.h>
#include <ecocompute/meter.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* The work being measured: floating-point arithmetic on one core for about `seconds`. */
static double work(double seconds)
{
    double t0 = ec_now_s(), acc = 0.0;
    while (ec_now_s() - t0 < seconds)
        for (int i = 1; i < 100000; i++)
            acc += sqrt((double)i);
    return acc;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    double idle_s = argc > 2 ? atof(argv[2]) : 0.0;
    ec_meter_options o;
    ec_meter_options_default(&o);
    ec_meter *m = ec_meter_open(&o);
    if (!m || ec_meter_start(m) != 0) {
        fprintf(stderr, "measure_window: %s\n", ec_last_error());
        return 1;
    }
    if (ec_meter_gpu_count(m) == 0)
        printf("no GPU: %s\n", ec_meter_gpu_unavailable(m));
    ec_idle_baseline idle;
    if (idle_s > 0 && ec_meter_gpu_count(m) > 0 &&
        ec_meter_idle_baseline(m, idle_s, NULL, &idle) != 0) {
        fprintf(stderr, "measure_window: idle baseline: %s\n", ec_last_error());
        ec_meter_close(m);
        return 1;
    }

    int id = ec_meter_window_begin(m, "work");
    double result = work(seconds);
    ec_window_result w;
    int rc = id < 0 ? -1 : ec_meter_window_end(m, id, &w);
    if (rc != 0) {
        fprintf(stderr, "measure_window: %s\n", ec_last_error());
        ec_meter_close(m);
        return 1;
    }

    printf("window '%s': %.3f s (result %.6g)\n", w.name, w.duration_s, result);
    if (w.ngpus > 0) {
        printf("GPU energy: %.3f J gross (%s), %.1f W average", w.gpu_energy_j,
               w.gpu_energy_method, w.gpu_avg_power_w);
        if (!isnan(w.gpu_net_energy_j)) printf(", %.3f J net of idle", w.gpu_net_energy_j);
        printf("\n");
    }
    if (w.cpu_available)
        printf("CPU energy: %.3f J (package %.3f J + DRAM %.3f J)\n", w.cpu_energy_j,
               w.cpu_package_energy_j, w.cpu_dram_energy_j);
    else
        printf("CPU energy: unavailable (%s)\n", w.cpu_unavailable);
    ec_meter_close(m);
    return 0;
}
