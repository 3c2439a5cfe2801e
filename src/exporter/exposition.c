/* exposition.c — a snapshot as Prometheus' text exposition format 0.0.4: one family per metric,
 * HELP and TYPE before its first sample, base units (joules, watts, hertz, bytes, ratios),
 * counters named _total, GPU series labelled gpu (NVML index), uuid and name. Each family's help
 * names the DCGM exporter field it mirrors, so existing dashboards translate one to one. */
#include "ecocompute/exporter.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { GAUGE, COUNTER } kind;

/* A family over GPUs: which sample bit it needs (0: any up GPU) and how to get its value. */
typedef struct {
    const char *name;
    kind type;
    const char *help;
    unsigned needs;
    double (*value)(const ec_exporter_gpu *g, const ec_gpu_info *info);
    const char *fmt;
} gpu_family;

static double v_up(const ec_exporter_gpu *g, const ec_gpu_info *i)
{
    (void)i;
    return g->up;
}
static double v_energy(const ec_exporter_gpu *g, const ec_gpu_info *i)
{
    (void)i;
    return (double)g->s.energy_mj / 1000.0;
}
static double v_power(const ec_exporter_gpu *g, const ec_gpu_info *i)
{
    (void)i;
    return g->s.power_instant_w;
}
static double v_power_avg(const ec_exporter_gpu *g, const ec_gpu_info *i)
{
    (void)i;
    return g->s.power_avg_w;
}
static double v_limit(const ec_exporter_gpu *g, const ec_gpu_info *i)
{
    (void)g;
    return i->power_limit_w;
}
static double v_temp(const ec_exporter_gpu *g, const ec_gpu_info *i)
{
    (void)i;
    return g->s.temp_c;
}
static double v_sm_hz(const ec_exporter_gpu *g, const ec_gpu_info *i)
{
    (void)i;
    return g->s.sm_mhz * 1e6;
}
static double v_mem_hz(const ec_exporter_gpu *g, const ec_gpu_info *i)
{
    (void)i;
    return g->s.mem_mhz * 1e6;
}
static double v_util(const ec_exporter_gpu *g, const ec_gpu_info *i)
{
    (void)i;
    return g->s.util_gpu_pct / 100.0;
}
static double v_mem_util(const ec_exporter_gpu *g, const ec_gpu_info *i)
{
    (void)i;
    return g->s.util_mem_pct / 100.0;
}
static double v_reasons(const ec_exporter_gpu *g, const ec_gpu_info *i)
{
    (void)i;
    return (double)g->s.clock_event_reasons;
}
static double v_throttled(const ec_exporter_gpu *g, const ec_gpu_info *i)
{
    (void)i;
    return (g->s.clock_event_reasons & ~1ull) != 0; /* any reason but GpuIdle (0x1) */
}
static double v_mem_used(const ec_exporter_gpu *g, const ec_gpu_info *i)
{
    (void)i;
    return (double)g->s.mem_used_bytes;
}
static double v_mem_total(const ec_exporter_gpu *g, const ec_gpu_info *i)
{
    (void)i;
    return (double)g->s.mem_total_bytes;
}

static const gpu_family gpu_families[] = {
    {"ecocompute_gpu_up", GAUGE,
     "1 when the GPU answered the last reading, 0 when it is lost or failing.", 0, v_up, "%.0f"},
    {"ecocompute_gpu_energy_joules_total", COUNTER,
     "Energy the board drew since the driver loaded, gross, J (NVML energy counter; "
     "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION / 1000).",
     EC_SAMPLE_ENERGY, v_energy, "%.3f"},
    {"ecocompute_gpu_power_watts", GAUGE,
     "Board power now, W (NVML field 186; DCGM_FI_DEV_POWER_USAGE_INSTANT).",
     EC_SAMPLE_POWER_INSTANT, v_power, "%.3f"},
    {"ecocompute_gpu_average_power_watts", GAUGE,
     "Board power averaged over the last 1 s, W (NVML field 185; DCGM_FI_DEV_POWER_USAGE).",
     EC_SAMPLE_POWER_AVERAGE, v_power_avg, "%.3f"},
    {"ecocompute_gpu_power_limit_watts", GAUGE,
     "Enforced power limit, W (DCGM_FI_DEV_ENFORCED_POWER_LIMIT).", EC_SAMPLE_POWER_INSTANT,
     v_limit, "%.3f"},
    {"ecocompute_gpu_temperature_celsius", GAUGE,
     "GPU temperature, degrees C (DCGM_FI_DEV_GPU_TEMP).", EC_SAMPLE_TEMP, v_temp, "%.0f"},
    {"ecocompute_gpu_sm_clock_hertz", GAUGE, "SM clock, Hz (DCGM_FI_DEV_SM_CLOCK x 1e6).",
     EC_SAMPLE_SM_CLOCK, v_sm_hz, "%.0f"},
    {"ecocompute_gpu_memory_clock_hertz", GAUGE, "Memory clock, Hz (DCGM_FI_DEV_MEM_CLOCK x 1e6).",
     EC_SAMPLE_MEM_CLOCK, v_mem_hz, "%.0f"},
    {"ecocompute_gpu_utilization_ratio", GAUGE,
     "Fraction of the last sample period a kernel ran, 0-1 (DCGM_FI_DEV_GPU_UTIL / 100).",
     EC_SAMPLE_UTIL, v_util, "%.2f"},
    {"ecocompute_gpu_memory_utilization_ratio", GAUGE,
     "Fraction of the last sample period memory was read or written, 0-1 "
     "(DCGM_FI_DEV_MEM_COPY_UTIL / 100).",
     EC_SAMPLE_UTIL, v_mem_util, "%.2f"},
    {"ecocompute_gpu_clock_event_reasons", GAUGE,
     "Clock event (throttle) reasons, NVML bitmask; 0x1 = GpuIdle "
     "(DCGM_FI_DEV_CLOCK_THROTTLE_REASONS).",
     EC_SAMPLE_CLOCK_REASONS, v_reasons, "%.0f"},
    {"ecocompute_gpu_throttled", GAUGE,
     "1 when any clock event reason other than GpuIdle is active (power, thermal, ...).",
     EC_SAMPLE_CLOCK_REASONS, v_throttled, "%.0f"},
    {"ecocompute_gpu_memory_used_bytes", GAUGE,
     "Framebuffer memory in use, bytes (DCGM_FI_DEV_FB_USED x 2^20).", EC_SAMPLE_MEMORY, v_mem_used,
     "%.0f"},
    {"ecocompute_gpu_memory_total_bytes", GAUGE,
     "Framebuffer memory in all, bytes (DCGM_FI_DEV_FB_TOTAL x 2^20).", EC_SAMPLE_MEMORY,
     v_mem_total, "%.0f"},
};

static const char *type_name(kind k)
{
    return k == COUNTER ? "counter" : "gauge";
}

static void header(FILE *f, const char *name, kind type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type_name(type));
}

/* A label value with backslash, double quote and newline escaped, as the format requires. */
static void label_value(FILE *f, const char *v)
{
    fputc('"', f);
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            fprintf(f, "\\%c", *v);
        else if (*v == '\n')
            fputs("\\n", f);
        else
            fputc(*v, f);
    }
    fputc('"', f);
}

static void gpu_labels(FILE *f, const ec_gpu_info *i)
{
    fprintf(f, "{gpu=\"%u\",uuid=", i->index);
    label_value(f, i->uuid);
    fputs(",name=", f);
    label_value(f, i->name);
    fputc('}', f);
}

static void render_gpu_family(FILE *f, const ec_exporter_snapshot *s, const gpu_family *fam)
{
    int printed = 0;
    for (int g = 0; g < s->ngpus; g++) {
        const ec_exporter_gpu *x = &s->gpus[g];
        if (fam->needs && (!x->up || !(x->s.valid & fam->needs))) continue;
        double v = fam->value(x, s->info[g]);
        if (!isfinite(v)) continue;
        if (!printed++) header(f, fam->name, fam->type, fam->help);
        fputs(fam->name, f);
        gpu_labels(f, s->info[g]);
        fputc(' ', f);
        fprintf(f, fam->fmt, v);
        fputc('\n', f);
    }
}

static void single(FILE *f, const char *name, kind type, const char *help, const char *fmt,
                   double v)
{
    if (!isfinite(v)) return;
    header(f, name, type, help);
    fputs(name, f);
    fputc(' ', f);
    fprintf(f, fmt, v);
    fputc('\n', f);
}

char *ec_exposition_render(const ec_exporter_snapshot *s, size_t *len)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f) return NULL;
    header(f, "ecocompute_exporter_info", GAUGE,
           "Always 1; the labels say which ecocompute and NVIDIA driver produced these metrics.");
    fputs("ecocompute_exporter_info{version=", f);
    label_value(f, s->version ? s->version : "");
    fputs(",driver=", f);
    label_value(f, s->driver_version ? s->driver_version : "");
    fputs("} 1\n", f);
    single(f, "ecocompute_gpus", GAUGE, "GPUs this exporter reads.", "%.0f", s->ngpus);
    for (size_t i = 0; i < sizeof gpu_families / sizeof gpu_families[0]; i++)
        render_gpu_family(f, s, &gpu_families[i]);
    single(f, "ecocompute_cpu_energy_up", GAUGE,
           "1 when CPU package energy (RAPL, powercap) is readable, 0 when not.", "%.0f",
           s->cpu_available);
    if (s->cpu_available) {
        single(f, "ecocompute_cpu_package_energy_joules_total", COUNTER,
               "CPU package energy since the exporter started, gross, J (RAPL package zones).",
               "%.3f", s->cpu_package_j);
        single(f, "ecocompute_cpu_dram_energy_joules_total", COUNTER,
               "DRAM energy since the exporter started, gross, J (RAPL dram zones).", "%.3f",
               s->cpu_dram_j);
    }
    single(f, "ecocompute_reads_total", COUNTER,
           "Complete readings of every GPU and RAPL since the exporter started.", "%.0f",
           (double)s->reads);
    single(f, "ecocompute_read_duration_seconds", GAUGE,
           "How long the last complete reading of every GPU and RAPL took, s.", "%.6f",
           s->read_duration_s);
    single(f, "ecocompute_snapshot_age_seconds", GAUGE,
           "Age of the readings served, s; grows when NVML answers slower than --max-read-ms.",
           "%.6f", s->age_s);
    single(f, "ecocompute_scrape_duration_seconds", GAUGE,
           "How long this scrape waited for readings before rendering, s.", "%.6f",
           s->scrape_duration_s);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    if (len) *len = n;
    return buf;
}
