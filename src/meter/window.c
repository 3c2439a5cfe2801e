/* window.c — measurement windows: begin/end with direct readings at both edges, the per-GPU and
 * total figures (counter delta, trapezoid of instant power, their disagreement, peaks, flags),
 * CPU energy from RAPL, and the idle baseline that turns gross energy into net. */
#include "meter_internal.h"

#include "ecocompute/common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Running figures of one GPU over the readings of a window, in time order. */
typedef struct {
    int n, lost;
    double last_t; /* last reading before the GPU was lost */
    int have_p;
    double p_first_t, p_first_w, p_last_t, p_last_w, integ_j, peak_w;
    int have_e, reset;
    unsigned long long e_first, e_last;
    int have_temp, tmin, tmax;
    unsigned long long reasons;
} acc;

static void feed(acc *a, const ec_gpu_sample *s)
{
    if (a->lost) return;
    if (s->valid & EC_SAMPLE_LOST) {
        a->lost = 1;
        return;
    }
    a->n++;
    a->last_t = s->t_s;
    if (s->valid & EC_SAMPLE_POWER_INSTANT) {
        double p = s->power_instant_w;
        if (!a->have_p) {
            a->p_first_t = s->t_s;
            a->p_first_w = a->peak_w = p;
        } else {
            a->integ_j += 0.5 * (p + a->p_last_w) * (s->t_s - a->p_last_t);
        }
        if (p > a->peak_w) a->peak_w = p;
        a->p_last_t = s->t_s;
        a->p_last_w = p;
        a->have_p = 1;
    }
    if (s->valid & EC_SAMPLE_ENERGY) {
        if (!a->have_e)
            a->e_first = s->energy_mj;
        else if (s->energy_mj < a->e_last)
            a->reset = 1;
        a->e_last = s->energy_mj;
        a->have_e = 1;
    }
    if (s->valid & EC_SAMPLE_TEMP) {
        if (!a->have_temp || s->temp_c < a->tmin) a->tmin = s->temp_c;
        if (!a->have_temp || s->temp_c > a->tmax) a->tmax = s->temp_c;
        a->have_temp = 1;
    }
    if (s->valid & EC_SAMPLE_CLOCK_REASONS) a->reasons |= s->clock_event_reasons;
}

static void finish(const acc *a, double t0, double t1, double idle_w, ec_gpu_window *g)
{
    double end = a->lost ? (a->n ? a->last_t : t0) : t1;
    g->measured_s = end > t0 ? end - t0 : 0;
    g->incomplete = a->lost;
    g->counter_reset = a->reset;
    g->samples = a->n;
    /* A lost GPU's last counter reading can be up to a second older than its last power reading
     * (the sampler reads the counter sparingly), so its energy comes from the integral, which
     * spans exactly the time it was measured. */
    g->energy_counter_j = a->have_e && !a->reset && !a->lost
                              ? (double)(a->e_last - a->e_first) / 1000.0
                              : NAN;
    /* The first and last power readings are held flat out to the window's edges, so the integral
     * spans exactly the same time as the counter delta. */
    g->energy_integrated_j = a->have_p ? a->integ_j + a->p_first_w * fmax(0, a->p_first_t - t0) +
                                             a->p_last_w * fmax(0, end - a->p_last_t)
                                       : NAN;
    g->peak_power_w = a->have_p ? a->peak_w : NAN;
    /* A window inside one update step of the counter (~100 ms) reads a delta of 0 although the
     * board drew power: then the integral is the estimate (Zeus falls back to instant power x
     * time the same way), not 0 J. */
    int counter_still = g->energy_counter_j == 0 && g->energy_integrated_j > 0;
    if (isfinite(g->energy_counter_j) && !counter_still) {
        g->energy_method = "counter";
        g->energy_j = g->energy_counter_j;
    } else if (isfinite(g->energy_integrated_j)) {
        g->energy_method = "integrated";
        g->energy_j = g->energy_integrated_j;
    } else {
        g->energy_method = "none";
        g->energy_j = NAN;
    }
    g->disagreement_pct =
        isfinite(g->energy_counter_j) && isfinite(g->energy_integrated_j) && g->energy_counter_j > 0
            ? 100.0 * (g->energy_integrated_j - g->energy_counter_j) / g->energy_counter_j
            : NAN;
    g->avg_power_w = g->measured_s > 0 ? g->energy_j / g->measured_s : NAN;
    g->temp_min_c = a->have_temp ? a->tmin : NAN;
    g->temp_max_c = a->have_temp ? a->tmax : NAN;
    g->clock_event_reasons = a->reasons;
    g->throttled = (a->reasons & ~NVML_CLOCKS_EVENT_REASON_GPU_IDLE) != 0;
    g->idle_power_w = idle_w;
    g->net_energy_j = g->energy_j - idle_w * g->measured_s;
}

/* Sums the per-GPU figures. Gross and net energy add up what each GPU measured (a lost GPU
 * contributes its part and flags the window incomplete); the counter and integrated sums are
 * cross-checks, so they exist only when every GPU has one. */
static void totals(ec_window_result *r)
{
    int counter = 0, integrated = 0;
    double e = 0, ec = 0, ei = 0, idle = 0, net = 0;
    for (int i = 0; i < r->ngpus; i++) {
        const ec_gpu_window *g = &r->gpus[i];
        counter += !strcmp(g->energy_method, "counter");
        integrated += !strcmp(g->energy_method, "integrated");
        if (isfinite(g->energy_j)) {
            e += g->energy_j;
            net += g->net_energy_j;
        }
        ec += g->energy_counter_j;
        ei += g->energy_integrated_j;
        idle += g->idle_power_w;
        r->clock_event_reasons |= g->clock_event_reasons;
        r->throttled |= g->throttled;
        r->incomplete |= g->incomplete || !isfinite(g->energy_j);
        r->counter_reset |= g->counter_reset;
    }
    r->gpu_energy_method = r->ngpus == 0               ? "none"
                           : counter == r->ngpus       ? "counter"
                           : integrated == r->ngpus    ? "integrated"
                           : counter + integrated == 0 ? "none"
                                                       : "mixed";
    int any = counter + integrated > 0;
    r->gpu_energy_j = any ? e : NAN;
    r->gpu_energy_counter_j = r->ngpus ? ec : NAN;
    r->gpu_energy_integrated_j = r->ngpus ? ei : NAN;
    r->gpu_disagreement_pct = isfinite(ec) && isfinite(ei) && ec > 0 ? 100.0 * (ei - ec) / ec : NAN;
    r->gpu_avg_power_w = any && r->duration_s > 0 ? e / r->duration_s : NAN;
    r->gpu_idle_power_w = r->ngpus ? idle : NAN;
    r->gpu_net_energy_j = any ? net : NAN;
}

/* Highest sum of instant power over one set of simultaneous readings. */
static double power_sum(const ec_gpu_sample *s, int n)
{
    double w = 0;
    int any = 0;
    for (int i = 0; i < n; i++)
        if (s[i].valid & EC_SAMPLE_POWER_INSTANT) {
            w += s[i].power_instant_w;
            any = 1;
        }
    return any ? w : NAN;
}

int ec_meter_window_begin(ec_meter *m, const char *name)
{
    ec_gpu_sample edge[EC_METER_MAX_GPUS];
    double t0 = ec_now_s();
    ec_gpu_read_all(m, EC_READ_ALL, edge);
    pthread_mutex_lock(&m->mu);
    int id = 0;
    while (id < m->nwindows && m->windows[id].open)
        id++;
    if (id == m->nwindows) {
        m->windows = realloc(m->windows, (size_t)(m->nwindows + 1) * sizeof *m->windows);
        if (!m->windows) abort();
        m->nwindows++;
    }
    ec_window_slot *w = &m->windows[id];
    memset(w, 0, sizeof *w);
    w->open = 1;
    snprintf(w->name, sizeof w->name, "%s", name ? name : "");
    w->t_begin_s = t0;
    memcpy(w->edge, edge, (size_t)m->ngpus * sizeof *edge);
    ec_rapl_poll_locked(m, t0, 1);
    if (m->rapl) ec_rapl_totals(m->rapl, &w->cpu_package_j, &w->cpu_dram_j);
    pthread_mutex_unlock(&m->mu);
    return id;
}

int ec_meter_window_end(ec_meter *m, int id, ec_window_result *out)
{
    ec_gpu_sample edge[EC_METER_MAX_GPUS];
    double t1 = ec_now_s();
    ec_gpu_read_all(m, EC_READ_ALL, edge);
    pthread_mutex_lock(&m->mu);
    if (id < 0 || id >= m->nwindows || !m->windows[id].open) {
        pthread_mutex_unlock(&m->mu);
        return ec_set_error("no open measurement window with id %d", id);
    }
    ec_window_slot *w = &m->windows[id];
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", w->name);
    out->t_begin_s = w->t_begin_s;
    out->duration_s = t1 - w->t_begin_s;
    out->ngpus = m->ngpus;

    acc a[EC_METER_MAX_GPUS];
    memset(a, 0, sizeof a);
    double peak = power_sum(w->edge, m->ngpus);
    for (int g = 0; g < m->ngpus; g++)
        feed(&a[g], &w->edge[g]);
    for (size_t i = 0; i < m->nsamples;) {
        /* A tick's readings are contiguous; each GPU keeps those strictly between its edges. */
        size_t j = i;
        double tick_w = 0;
        int tick_any = 0;
        for (; j < m->nsamples && m->samples[j].tick == m->samples[i].tick; j++) {
            const ec_gpu_sample *s = &m->samples[j];
            if (s->t_s <= w->edge[s->gpu].t_s || s->t_s >= edge[s->gpu].t_s) continue;
            feed(&a[s->gpu], s);
            if ((s->valid & EC_SAMPLE_POWER_INSTANT) && !a[s->gpu].lost) {
                tick_w += s->power_instant_w;
                tick_any = 1;
            }
        }
        if (tick_any) peak = fmax(peak, tick_w); /* fmax ignores a NaN side */
        i = j;
    }
    peak = fmax(peak, power_sum(edge, m->ngpus));
    for (int g = 0; g < m->ngpus; g++) {
        feed(&a[g], &edge[g]);
        out->gpus[g].index = m->gpus[g].info.index;
        finish(&a[g], w->t_begin_s, t1, m->has_idle ? m->idle_power_w[g] : NAN, &out->gpus[g]);
    }
    out->gpu_peak_power_w = m->ngpus ? peak : NAN;
    totals(out);

    ec_rapl_poll_locked(m, t1, 1);
    if (m->rapl) {
        double pkg, dram;
        ec_rapl_totals(m->rapl, &pkg, &dram);
        out->cpu_available = 1;
        out->cpu_package_energy_j = pkg - w->cpu_package_j;
        out->cpu_dram_energy_j = dram - w->cpu_dram_j;
        out->cpu_energy_j = out->cpu_package_energy_j + out->cpu_dram_energy_j;
    } else {
        out->cpu_package_energy_j = out->cpu_dram_energy_j = out->cpu_energy_j = NAN;
        snprintf(out->cpu_unavailable, sizeof out->cpu_unavailable, "%s", m->cpu_unavailable);
    }
    w->open = 0;
    pthread_mutex_unlock(&m->mu);
    return 0;
}

int ec_meter_idle_baseline(ec_meter *m, double seconds, const volatile int *stop,
                           ec_idle_baseline *out)
{
    memset(out, 0, sizeof *out);
    int id = ec_meter_window_begin(m, "idle");
    ec_sleep_s(seconds, stop);
    ec_window_result r;
    if (ec_meter_window_end(m, id, &r) != 0) return -1;
    if (stop && *stop) return ec_set_error("idle baseline interrupted");
    out->duration_s = r.duration_s;
    out->ngpus = r.ngpus;
    out->method = r.gpu_energy_method;
    pthread_mutex_lock(&m->mu);
    for (int g = 0; g < r.ngpus; g++)
        m->idle_power_w[g] = out->gpu_power_w[g] = r.gpus[g].avg_power_w;
    m->has_idle = 1;
    pthread_mutex_unlock(&m->mu);
    out->gpu_total_power_w = r.ngpus ? r.gpu_energy_j / r.duration_s : NAN;
    return 0;
}
