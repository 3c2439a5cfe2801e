/* window.c — measurement windows: begin/end with direct readings at both edges (or at counter
 * updates), the per-GPU and total figures (counter delta, trapezoid of instant power, their
 * disagreement, peaks, flags, uncertainty), CPU energy from RAPL, the counter's update period,
 * and the idle baseline that turns gross energy into net. */
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
    double u2 = 0;
    for (int i = 0; i < r->ngpus; i++)
        u2 += r->gpus[i].energy_uncert_j * r->gpus[i].energy_uncert_j;
    r->gpu_energy_uncert_j = any ? sqrt(u2) : NAN;
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

/* ---- the counter's update period, and waiting for an update ---- */

/* The first selected GPU with an energy counter, or -1. */
static int counter_gpu(const ec_meter *m)
{
    for (int g = 0; g < m->ngpus; g++)
        if (m->gpus[g].info.has_energy_counter) return g;
    return -1;
}

/* Reads GPU g's counter until it differs from its first reading or limit_s passes. Returns the
 * time of the reading that saw the change (*seen holds it), or NaN. */
static double wait_for_update(ec_meter *m, int g, double limit_s, int *reads, ec_gpu_sample *seen)
{
    ec_gpu_sample s;
    ec_gpu_read(&m->nv, &m->gpus[g], g, EC_READ_COUNTER, &s);
    if (!(s.valid & EC_SAMPLE_ENERGY)) return NAN;
    unsigned long long first = s.energy_mj;
    double deadline = s.t_s + limit_s;
    for (int n = 1;; n++) {
        ec_gpu_read(&m->nv, &m->gpus[g], g, EC_READ_COUNTER, &s);
        if (reads) *reads = n;
        if (!(s.valid & EC_SAMPLE_ENERGY)) return NAN;
        if (s.energy_mj != first) {
            if (seen) *seen = s;
            return s.t_s;
        }
        if (s.t_s > deadline) return NAN;
    }
}

/* The reading that saw the counter change is the aligned GPU's edge: its energy and time. */
static void use_update_as_edge(ec_gpu_sample *edge, const ec_gpu_sample *update)
{
    edge->energy_mj = update->energy_mj;
    edge->t_s = update->t_s;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double ec_meter_counter_period_s(ec_meter *m)
{
    if (m->counter_period_s != 0) return m->counter_period_s;
    int g = counter_gpu(m);
    double period = NAN, read_s = NAN;
    if (g >= 0) {
        enum { CHANGES = 6 };
        double at[CHANGES], t0 = ec_now_s();
        int n = 0, reads = 0, total_reads = 0;
        /* The first change only marks a starting point: the counters' periods are regular. */
        while (n < CHANGES && ec_now_s() - t0 < 1.5) {
            double t = wait_for_update(m, g, 1.5, &reads, NULL);
            total_reads += reads;
            if (!isfinite(t)) break;
            at[n++] = t;
        }
        if (total_reads > 0) read_s = (ec_now_s() - t0) / total_reads;
        if (n >= 3) {
            double gaps[CHANGES - 1];
            for (int i = 1; i < n; i++)
                gaps[i - 1] = at[i] - at[i - 1];
            qsort(gaps, (size_t)(n - 1), sizeof *gaps, cmp_double);
            period = gaps[(n - 1) / 2];
        }
    }
    pthread_mutex_lock(&m->mu);
    m->counter_period_s = period;
    m->counter_read_s = read_s;
    pthread_mutex_unlock(&m->mu);
    return period;
}

/* Up to a few periods (or a second, before the period is known): the counter of a GPU at
 * work changes every period; one that does not is not waited for longer. */
static double update_wait_limit(const ec_meter *m)
{
    return isfinite(m->counter_period_s) && m->counter_period_s > 0 ? 3 * m->counter_period_s
                                                                     : 1.0;
}

/* ---- windows ---- */

static int begin_window(ec_meter *m, const char *name, int aligned)
{
    int g = aligned ? counter_gpu(m) : -1;
    ec_gpu_sample update;
    if (g >= 0 && !isfinite(wait_for_update(m, g, update_wait_limit(m), NULL, &update))) g = -1;
    ec_gpu_sample edge[EC_METER_MAX_GPUS];
    double t0 = ec_now_s();
    ec_gpu_read_all(m, EC_READ_ALL, edge);
    if (g >= 0) {
        use_update_as_edge(&edge[g], &update);
        t0 = update.t_s;
    }
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
    w->aligned = g >= 0;
    snprintf(w->name, sizeof w->name, "%s", name ? name : "");
    w->t_begin_s = t0;
    memcpy(w->edge, edge, (size_t)m->ngpus * sizeof *edge);
    ec_rapl_poll_locked(m, t0, 1);
    if (m->rapl) ec_rapl_totals(m->rapl, &w->cpu_package_j, &w->cpu_dram_j);
    pthread_mutex_unlock(&m->mu);
    return id;
}

int ec_meter_window_begin(ec_meter *m, const char *name) { return begin_window(m, name, 0); }
int ec_meter_window_begin_aligned(ec_meter *m, const char *name)
{
    return begin_window(m, name, 1);
}

/* GPU g's figures over [t_begin, t1] become those of the work, which ended `tail_s` before t1:
 * the idle baseline's power over the tail is taken off. Without a baseline the window keeps the
 * tail, in its energy and its time alike. */
static void remove_tail(ec_gpu_window *g, double tail_s)
{
    if (!(tail_s > 0) || g->incomplete || !isfinite(g->idle_power_w)) return;
    double off = g->idle_power_w * tail_s;
    g->energy_j -= off;
    g->energy_counter_j -= off;
    g->energy_integrated_j -= off;
    g->measured_s -= tail_s;
    g->avg_power_w = g->measured_s > 0 ? g->energy_j / g->measured_s : NAN;
    g->net_energy_j = g->energy_j - g->idle_power_w * g->measured_s;
}

/* energy_uncert_j of GPU g (see ec_gpu_window). */
static void set_uncertainty(const ec_meter *m, ec_gpu_window *g, int aligned, double tail_s)
{
    double p = g->avg_power_w;
    if (!isfinite(g->energy_j) || !isfinite(p)) {
        g->energy_uncert_j = NAN;
        return;
    }
    int counter = !strcmp(g->energy_method, "counter");
    double period = counter ? m->counter_period_s : m->interval_s;
    if (!(period > 0)) period = m->interval_s; /* not measured yet: the sampler's resolution */
    if (!aligned || !counter) {
        g->energy_uncert_j = p * period / sqrt(6.0);
        return;
    }
    /* Each aligned edge is stale by at most one counter read; the tail's power lies between the
     * idle baseline's and the work's (all of it stays in without a baseline). */
    double read_s = isfinite(m->counter_read_s) ? m->counter_read_s : 0;
    double edge = p * read_s / sqrt(6.0);
    double tail_w = isfinite(g->idle_power_w) ? fabs(p - g->idle_power_w) : p;
    double tail = tail_w * fmax(tail_s, 0) / sqrt(12.0);
    g->energy_uncert_j = sqrt(edge * edge + tail * tail);
}

/* Ends window id; an aligned one first waits for the counter's next update (see meter.h). */
static int end_window(ec_meter *m, int id, ec_window_result *out)
{
    double t_work = ec_now_s();
    pthread_mutex_lock(&m->mu);
    int known = id >= 0 && id < m->nwindows && m->windows[id].open;
    int aligned = known && m->windows[id].aligned;
    pthread_mutex_unlock(&m->mu);
    if (!known) return ec_set_error("no open measurement window with id %d", id);
    int cg = aligned ? counter_gpu(m) : -1;
    ec_gpu_sample update;
    if (cg >= 0 && !isfinite(wait_for_update(m, cg, update_wait_limit(m), NULL, &update)))
        aligned = 0;
    ec_gpu_sample edge[EC_METER_MAX_GPUS];
    double t1 = ec_now_s();
    ec_gpu_read_all(m, EC_READ_ALL, edge);
    if (aligned) {
        use_update_as_edge(&edge[cg], &update);
        t1 = update.t_s;
    }
    pthread_mutex_lock(&m->mu);
    ec_window_slot *w = &m->windows[id];
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", w->name);
    out->t_begin_s = w->t_begin_s;
    out->duration_s = (aligned && m->has_idle ? t_work : t1) - w->t_begin_s;
    out->ngpus = m->ngpus;
    out->aligned = aligned;
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
        double tail = aligned ? t1 - t_work : 0;
        remove_tail(&out->gpus[g], tail);
        set_uncertainty(m, &out->gpus[g], aligned && g == cg, tail);
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

int ec_meter_window_end(ec_meter *m, int id, ec_window_result *out)
{
    return end_window(m, id, out);
}

int ec_meter_idle_baseline(ec_meter *m, double seconds, const volatile int *stop,
                           ec_idle_baseline *out)
{
    memset(out, 0, sizeof *out);
    /* Aligned: a baseline of a few seconds read at random moments would be off by up to a
     * counter period's energy, and aligned windows take the baseline off their tails. */
    int id = ec_meter_window_begin_aligned(m, "idle");
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
