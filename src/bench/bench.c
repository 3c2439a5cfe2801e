/* bench.c — the measurement protocol over a sweep (bench.h): configurations are created in the
 * store up front, finished ones are skipped, and each unfinished one is measured from its first
 * uncommitted run: stabilization, warm-ups, measured runs (each committed at once), quality
 * gates, bounded re-runs. docs/measurement.md ("bench") is the prose version. */
#include "ecocompute/bench.h"

#include "bench_gpus.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Auto stabilization: read every STAB_PERIOD_S; settled when the last STAB_WINDOW readings
 * span at most STAB_TEMP_C on every GPU and STAB_POWER_FRAC (or STAB_POWER_W, whichever is
 * larger) of total power. */
#define STAB_PERIOD_S 0.5
#define STAB_WINDOW 6
#define STAB_TEMP_C 1.0
#define STAB_POWER_FRAC 0.02
#define STAB_POWER_W 2.0

#ifndef ECOCOMPUTE_CUDA_VERSION
#define ECOCOMPUTE_CUDA_VERSION "" /* the CUDA backend is not built */
#endif

static int stopped(const ec_bench_env *e)
{
    return e->stop && *e->stop;
}

/* ---- provenance ---- */

static void host_cpu(char *out, size_t len)
{
    snprintf(out, len, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        /* x86 says "model name", many ARM kernels only "Hardware" or "CPU part". */
        if (strncmp(line, "model name", 10) != 0 && strncmp(line, "Hardware", 8) != 0) continue;
        char *v = strchr(line, ':');
        if (!v) continue;
        v += 1 + (v[1] == ' ');
        v[strcspn(v, "\n")] = '\0';
        snprintf(out, len, "%s", v);
        break;
    }
    fclose(f);
}

static void fill_session(ec_session *e, const ec_bench_env *env, const ec_idle_baseline *idle,
                         char *spec_json)
{
    memset(e, 0, sizeof *e);
    ec_meter *m = env->meter;
    e->gpu_count = ec_meter_gpu_count(m);
    e->power_limit_w = NAN;
    if (e->gpu_count > 0) {
        const ec_gpu_info *g = ec_meter_gpu(m, 0);
        snprintf(e->gpu_name, sizeof e->gpu_name, "%s", g->name);
        snprintf(e->gpu_uuid, sizeof e->gpu_uuid, "%s", g->uuid);
        snprintf(e->gpu_arch, sizeof e->gpu_arch, "%s", ec_gpu_arch_name(g->arch));
        e->power_limit_w = g->power_limit_w;
    }
    snprintf(e->driver, sizeof e->driver, "%s", ec_meter_driver_version(m));
    snprintf(e->cuda, sizeof e->cuda, "%s", ECOCOMPUTE_CUDA_VERSION);
    host_cpu(e->host_cpu, sizeof e->host_cpu);
    if (gethostname(e->hostname, sizeof e->hostname - 1) != 0) e->hostname[0] = '\0';
    snprintf(e->ecocompute_version, sizeof e->ecocompute_version, "%s", ec_version());
    snprintf(e->git_commit, sizeof e->git_commit, "%s", ec_git_commit());
    e->command_line = env->command_line;
    e->spec_json = spec_json;
    e->idle_s = idle ? idle->duration_s : 0;
    e->idle_power_w = idle ? idle->gpu_total_power_w : NAN;
    snprintf(e->idle_method, sizeof e->idle_method, "%s", idle ? idle->method : "none");
    e->interval_s = ec_meter_interval_s(m);
    e->trace_path = env->trace_path;
}

/* The GPUs a configuration is measured on (positions pos in the meter's selection), by UUID. */
static void gpu_key(ec_meter *m, const int *pos, int n, char *out, size_t len)
{
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        size_t l = strlen(out);
        snprintf(out + l, len - l, "%s%s", i ? "," : "", ec_meter_gpu(m, pos[i])->uuid);
    }
}

/* ---- the sweep ---- */

typedef struct {
    ec_bench_config c;
    ec_config_key key;
    ec_config_state st;
    int prefill_reps, decode_reps; /* each phase's repetitions inside its measured window */
    int gpus[EC_METER_MAX_GPUS];   /* the meter positions of the GPUs it runs on ... */
    int ngpus;                     /* ... (ec_bench_config_gpus) */
} sweep_item;

static int sweep_size(const ec_bench_spec *s)
{
    return s->nmodels * s->nprecisions * s->nkernels * s->ntps * s->nbatches * s->nprompt_lens *
           s->ngens;
}

/* Enumerates the configurations (model outermost, generation length innermost), so that one
 * loaded backend serves a run of consecutive configurations (the world size is outside the
 * batch and lengths: each one is a backend of its own); keeps those of the spec's shard (by
 * canonical position; one world size keeps the positions of sweeps before it) and returns how
 * many. */
static int enumerate(const ec_bench_spec *s, sweep_item *items)
{
    int k = 0, kept = 0;
    for (int a = 0; a < s->nmodels; a++)
        for (int b = 0; b < s->nprecisions; b++)
            for (int c = 0; c < s->nkernels; c++)
                for (int t = 0; t < s->ntps; t++)
                    for (int d = 0; d < s->nbatches; d++)
                        for (int e = 0; e < s->nprompt_lens; e++)
                            for (int f = 0; f < s->ngens; f++, k++) {
                                if (!ec_bench_in_shard(s, k)) continue;
                                memset(&items[kept], 0, sizeof items[kept]);
                                ec_bench_config *x = &items[kept++].c;
                                x->model = s->models[a];
                                x->precision = s->precisions[b];
                                x->kernels = s->kernels[c];
                                x->tp = s->tps[t];
                                x->batch = s->batches[d];
                                x->prompt_len = s->prompt_lens[e];
                                x->gen = s->gens[f];
                            }
    return kept;
}

/* The configuration's GPUs among the metered ones, and its key. */
static void make_key(const ec_bench_spec *s, ec_meter *m, sweep_item *it)
{
    const ec_bench_config *c = &it->c;
    ec_config_key *k = &it->key;
    it->ngpus = ec_bench_config_gpus(m, s->device, c->tp, it->gpus);
    memset(k, 0, sizeof *k);
    snprintf(k->tag, sizeof k->tag, "%s", s->tag);
    snprintf(k->model, sizeof k->model, "%s", c->model);
    snprintf(k->precision, sizeof k->precision, "%s", ec_precision_name(c->precision));
    snprintf(k->kernels, sizeof k->kernels, "%s", ec_kernels_name(c->kernels));
    snprintf(k->device, sizeof k->device, "%s", s->device);
    gpu_key(m, it->gpus, it->ngpus, k->gpu_uuid, sizeof k->gpu_uuid);
    k->tp = c->tp;
    /* One rank has no link to record; CPU ranks share the host's memory, which NVML knows
     * nothing of; GPU ranks are linked as NVML reports. */
    if (c->tp == 1)
        snprintf(k->interconnect, sizeof k->interconnect, "none");
    else if (!strncmp(s->device, "cpu", 3))
        snprintf(k->interconnect, sizeof k->interconnect, "unknown");
    else
        ec_meter_interconnect(m, it->gpus, it->ngpus, k->interconnect, sizeof k->interconnect);
    k->batch = c->batch;
    k->prompt_len = c->prompt_len;
    k->gen_len = c->gen;
    ec_bench_protocol_key(s, k->protocol, sizeof k->protocol);
    k->runs = s->runs;
    k->params_b = NAN;
}

/* ---- the default factory ---- */

static int default_open_model(void *ctx, const ec_bench_spec *s, const char *name, ec_model **out)
{
    (void)ctx;
    ec_model_options o;
    ec_model_options_default(&o);
    o.seed = s->seed;
    o.threads = s->threads;
    o.outliers = s->outliers;
    o.outlier_mag = s->outlier_mag;
    return ec_model_open(out, name, &o);
}

static int default_open_backend(void *ctx, const ec_bench_spec *s, const ec_model *m,
                                const ec_bench_config *c, int max_batch, int max_seq,
                                ec_backend **out)
{
    (void)ctx;
    ec_load_options o;
    ec_load_options_default(&o);
    o.precision = c->precision;
    o.kernels = c->kernels;
    o.int8_threshold = s->int8_threshold;
    o.max_batch = max_batch;
    o.max_seq = max_seq;
    o.threads = s->threads;
    o.tp = c->tp;
    return ec_backend_open(out, s->device, m, &o) != 0 ? -1 : 0;
}

static const ec_bench_factory default_factory = {default_open_model, default_open_backend, NULL};

/* ---- one measured run ---- */

typedef struct {
    ec_meter *m;
    int aligned; /* windows with edges at counter updates */
    int win[2];
    ec_window_result res[2];
    double sm_sum;
    int sm_n;
} phase_meter;

/* SM clocks of every GPU now (the run's clocks are sampled at the decode phase's edges: the
 * meter's windows do not carry clocks, and a direct read costs microseconds). */
static void read_clocks(phase_meter *pm)
{
    for (int i = 0; i < ec_meter_gpu_count(pm->m); i++) {
        ec_gpu_sample s;
        if (ec_meter_read(pm->m, i, &s) == 0 && (s.valid & EC_SAMPLE_SM_CLOCK)) {
            pm->sm_sum += s.sm_mhz;
            pm->sm_n++;
        }
    }
}

static void on_phase(void *ctx, ec_phase ph, int begin)
{
    phase_meter *pm = ctx;
    if (begin) {
        if (ph == EC_PHASE_DECODE) read_clocks(pm);
        const char *name = ph == EC_PHASE_DECODE ? "decode" : "prefill";
        pm->win[ph] = pm->aligned ? ec_meter_window_begin_aligned(pm->m, name)
                                  : ec_meter_window_begin(pm->m, name);
    } else {
        ec_meter_window_end(pm->m, pm->win[ph], &pm->res[ph]);
        if (ph == EC_PHASE_DECODE) read_clocks(pm);
    }
}

/* One phase's figures from the window that held `reps` of them. */
static void phase_record(const ec_window_result *w, int reps, double time_s, long tokens,
                         ec_phase_record *p)
{
    p->repeats = reps;
    p->time_s = time_s;
    p->tokens = tokens;
    p->gpu_energy_j = w->gpu_energy_j / reps;
    p->gpu_energy_net_j = w->gpu_net_energy_j / reps;
    p->gpu_energy_counter_j = w->gpu_energy_counter_j / reps;
    p->gpu_energy_integrated_j = w->gpu_energy_integrated_j / reps;
    p->gpu_energy_uncert_j = w->gpu_energy_uncert_j / reps;
    p->cpu_energy_j = w->cpu_available ? w->cpu_energy_j / reps : NAN;
    p->avg_power_w = w->gpu_avg_power_w;
    p->peak_power_w = w->gpu_peak_power_w;
}

/* "counter" when both phases measured by the counter, and so on. */
static const char *combined_method(const char *a, const char *b)
{
    return !strcmp(a, b) ? a : !strcmp(a, "none") ? b : !strcmp(b, "none") ? a : "mixed";
}

typedef struct {
    const ec_bench_spec *spec;
    const ec_bench_env *env;
    const ec_session *session;
    ec_backend *backend;
    const ec_model *model;
    int *prompts, *out; /* [batch][prompt_len], [batch][gen] */
    int aligned;             /* phase windows at counter updates (a GPU counter is metered) */
    double min_window_s;     /* each phase's window at least this long, s */
    double counter_period_s; /* NaN without a GPU counter */
} run_ctx;

/* Generates once, each phase repeated inside its own window as often as the configuration
 * needs (it->*_reps); fills r with one run's figures: one prefill and one decode phase. */
static int measure_run(run_ctx *x, const sweep_item *it, int run_index, ec_run_record *r)
{
    ec_meter *m = x->env->meter;
    const ec_bench_config *c = &it->c;
    phase_meter pm = {.m = m, .aligned = x->aligned};
    ec_phase_hooks hooks = {on_phase, &pm};
    ec_generate_stats st;
    double wall = ec_wall_s();
    int rc = ec_generate_repeated(x->backend, x->prompts, c->batch, c->prompt_len, c->gen, x->out,
                                  it->prefill_reps, it->decode_reps, x->min_window_s, &hooks,
                                  &st);
    if (rc != 0) return -1;
    /* The configuration's own GPUs: a sweep over world sizes meters those of the largest. */
    ec_window_result over[2];
    for (int k = 0; k < 2; k++)
        ec_bench_window_over(&pm.res[k], it->gpus, it->ngpus, &over[k]);
    const ec_window_result *wp = &over[EC_PHASE_PREFILL], *wd = &over[EC_PHASE_DECODE];

    ec_run_record_init(r);
    const ec_session *e = x->session;
    snprintf(r->source, sizeof r->source, "ecocompute");
    r->energy_definition = EC_ENERGY_GROSS;
    snprintf(r->session_id, sizeof r->session_id, "%s", e->id);
    memcpy(r->gpu_name, e->gpu_name, sizeof r->gpu_name);
    memcpy(r->gpu_uuid, e->gpu_uuid, sizeof r->gpu_uuid);
    memcpy(r->gpu_arch, e->gpu_arch, sizeof r->gpu_arch);
    memcpy(r->driver, e->driver, sizeof r->driver);
    memcpy(r->cuda, e->cuda, sizeof r->cuda);
    r->power_limit_w = e->power_limit_w;
    memcpy(r->host_cpu, e->host_cpu, sizeof r->host_cpu);
    memcpy(r->ecocompute_version, e->ecocompute_version, sizeof r->ecocompute_version);
    memcpy(r->git_commit, e->git_commit, sizeof r->git_commit);
    ec_iso8601(wall, r->timestamp_utc, sizeof r->timestamp_utc);
    snprintf(r->model, sizeof r->model, "%s", c->model);
    r->params_b = (double)ec_model_param_count(ec_model_config_of(x->model)) / 1e9;
    snprintf(r->precision, sizeof r->precision, "%s", ec_precision_name(c->precision));
    snprintf(r->kernels, sizeof r->kernels, "%s", ec_kernels_name(c->kernels));
    snprintf(r->device, sizeof r->device, "%s", x->spec->device);
    r->batch = c->batch;
    r->prompt_len = c->prompt_len;
    r->gen_len = c->gen;
    r->run_index = run_index;
    r->gate = EC_GATE_PENDING;
    r->idle_power_w = wd->gpu_idle_power_w;
    phase_record(wp, st.prefill_reps, st.prefill_s, st.prefill_tokens, &r->prefill);
    phase_record(wd, st.decode_reps, st.decode_s, st.decode_tokens, &r->decode);
    ec_bench_energy_list(&pm.res[EC_PHASE_PREFILL], it->gpus, it->ngpus, st.prefill_reps,
                         r->prefill.gpu_energy_per_gpu_j, sizeof r->prefill.gpu_energy_per_gpu_j);
    ec_bench_energy_list(&pm.res[EC_PHASE_DECODE], it->gpus, it->ngpus, st.decode_reps,
                         r->decode.gpu_energy_per_gpu_j, sizeof r->decode.gpu_energy_per_gpu_j);
    r->tp = c->tp;
    snprintf(r->interconnect, sizeof r->interconnect, "%s", it->key.interconnect);
    /* The run: one prefill and one decode phase, i.e. one request of each sequence. */
    const ec_phase_record *p = &r->prefill, *d = &r->decode;
    r->total_time_s = p->time_s + d->time_s;
    r->gpu_energy_j = p->gpu_energy_j + d->gpu_energy_j;
    r->gpu_energy_net_j = p->gpu_energy_net_j + d->gpu_energy_net_j;
    r->gpu_energy_uncert_j = hypot(p->gpu_energy_uncert_j, d->gpu_energy_uncert_j);
    double counter = p->gpu_energy_counter_j + d->gpu_energy_counter_j;
    double integrated = p->gpu_energy_integrated_j + d->gpu_energy_integrated_j;
    r->disagreement_pct = counter > 0 ? 100.0 * (integrated - counter) / counter : NAN;
    r->tok_s = st.decode_tokens > 0 && st.decode_s > 0 ? st.decode_tokens / st.decode_s : NAN;
    double per_1k = 1000.0 / ((double)c->batch * c->gen); /* generated tokens: batch x gen */
    r->j_per_1k_gross = r->gpu_energy_j * per_1k;
    r->j_per_1k_net = r->gpu_energy_net_j * per_1k;
    r->energy_j_per_1k = r->j_per_1k_gross;
    r->j_per_request_gross = r->gpu_energy_j / c->batch;
    r->j_per_request_net = r->gpu_energy_net_j / c->batch;
    r->avg_power_w = r->total_time_s > 0 ? r->gpu_energy_j / r->total_time_s : NAN;
    r->peak_power_w = fmax(wp->gpu_peak_power_w, wd->gpu_peak_power_w);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < over[k].ngpus; i++)
            if (!(r->temp_max_c >= over[k].gpus[i].temp_max_c))
                r->temp_max_c = over[k].gpus[i].temp_max_c;
    r->sm_mhz_avg = pm.sm_n ? pm.sm_sum / pm.sm_n : NAN;
    r->clock_event_reasons = wp->clock_event_reasons | wd->clock_event_reasons;
    snprintf(r->gpu_energy_method, sizeof r->gpu_energy_method, "%s",
             combined_method(wp->gpu_energy_method, wd->gpu_energy_method));
    r->counter_period_s = x->counter_period_s;
    return 0;
}

/* ---- stabilization ---- */

/* Waits a fixed time, or (auto) until temperature and power stop drifting, at most
 * stabilize_max_s. Returns the time waited; *settled is 1 when auto saw them settle. */
static double stabilize(const ec_bench_spec *s, const ec_bench_env *env, int *settled)
{
    double t0 = ec_now_s();
    *settled = 0;
    ec_meter *m = env->meter;
    int ngpu = ec_meter_gpu_count(m);
    if (!s->stabilize_auto) {
        ec_sleep_s(s->stabilize_s, env->stop);
        return ec_now_s() - t0;
    }
    if (ngpu == 0) return 0; /* nothing to watch */
    double temp[STAB_WINDOW][EC_METER_MAX_GPUS], power[STAB_WINDOW];
    for (int k = 0; !stopped(env); k++) {
        int slot = k % STAB_WINDOW;
        power[slot] = 0;
        for (int i = 0; i < ngpu; i++) {
            ec_gpu_sample g;
            ec_meter_read(m, i, &g);
            temp[slot][i] = g.valid & EC_SAMPLE_TEMP ? g.temp_c : NAN;
            power[slot] += g.valid & EC_SAMPLE_POWER_INSTANT ? g.power_instant_w : NAN;
        }
        if (k + 1 >= STAB_WINDOW) {
            int ok = 1;
            double pmin = power[0], pmax = power[0];
            for (int j = 1; j < STAB_WINDOW; j++) {
                pmin = fmin(pmin, power[j]);
                pmax = fmax(pmax, power[j]);
            }
            /* A value that cannot be read does not hold the sweep up: NaN spans count as 0. */
            if (pmax - pmin > fmax(STAB_POWER_W, STAB_POWER_FRAC * pmax)) ok = 0;
            for (int i = 0; i < ngpu && ok; i++) {
                double tmin = temp[0][i], tmax = temp[0][i];
                for (int j = 1; j < STAB_WINDOW; j++) {
                    tmin = fmin(tmin, temp[j][i]);
                    tmax = fmax(tmax, temp[j][i]);
                }
                if (tmax - tmin > STAB_TEMP_C) ok = 0;
            }
            if (ok) {
                *settled = 1;
                break;
            }
        }
        double left = s->stabilize_max_s - (ec_now_s() - t0);
        if (left <= 0) break;
        ec_sleep_s(fmin(STAB_PERIOD_S, left), env->stop);
    }
    return ec_now_s() - t0;
}

/* ---- progress ---- */

typedef struct {
    const ec_bench_env *env;
    int configs;
    double run_s_sum; /* time of the runs (warm-up and measured) done in this call, s */
    int runs_done;
    long runs_left; /* warm-up and measured runs still to do in the sweep */
    int stabilizations_left;
    double stabilize_s; /* expected length of one stabilization, s */
    int attempt_runs;   /* warm-up and measured runs of one attempt */
    int max_reruns;
    int unstarted;      /* configurations still to measure that have not begun */
    int judged, failed; /* attempts the gates judged in this call, and those that failed */
} progress_state;

/* Seconds left: the runs and waits still scheduled, plus the re-runs the sweep is expected to
 * need — each configuration as many attempts as the gates' failure rate so far implies
 * (geometric, at most 1 + max_reruns), the current one counting those it already had. So the
 * estimate keeps falling while configurations are re-run instead of standing still. */
static double eta_s(const progress_state *ps, int attempt, int current_open)
{
    if (ps->runs_done <= 0) return NAN;
    double e = 0; /* expected re-runs per configuration */
    if (ps->judged > 0) {
        double p = (double)ps->failed / ps->judged;
        e = p >= 1 ? ps->max_reruns : fmin(ps->max_reruns, p / (1 - p));
    }
    double extra = ps->unstarted * e + (current_open ? fmax(0, 1 + e - (attempt + 1)) : 0);
    return ps->run_s_sum / ps->runs_done * ((double)ps->runs_left + extra * ps->attempt_runs) +
           (ps->stabilizations_left + extra) * ps->stabilize_s;
}

static void report(progress_state *ps, ec_bench_stage stage, int config, const ec_bench_config *c,
                   int run, int runs, int attempt, const ec_run_record *rec, const char *note)
{
    if (!ps->env->on_progress) return;
    ec_bench_progress p;
    memset(&p, 0, sizeof p);
    p.stage = stage;
    p.config = config;
    p.configs = ps->configs;
    p.c = c;
    p.run = run;
    p.runs = runs;
    p.attempt = attempt;
    p.record = rec;
    p.eta_s = eta_s(ps, attempt, stage != EC_BENCH_STAGE_DONE && stage != EC_BENCH_STAGE_HELD);
    if (note) snprintf(p.note, sizeof p.note, "%s", note);
    ps->env->on_progress(ps->env->ctx, &p);
}

/* ---- quality gates ---- */

/* Evaluates the attempt's runs: pass, fail (no re-runs left), pending (re-run) or unknown
 * (fewer than 2 runs: no CV). */
static int evaluate(const ec_bench_spec *s, ec_store *st, const sweep_item *it, char *note,
                    size_t len, ec_gate_status *gate, double *cv_tok, double *cv_pow)
{
    ec_run_record *r;
    size_t n;
    if (ec_store_load_attempt(st, it->st.id, it->st.attempt, &r, &n) != 0) return -1;
    double *tok = malloc((n + 1) * sizeof *tok), *pow = malloc((n + 1) * sizeof *pow);
    if (!tok || !pow) {
        free(r);
        free(tok);
        free(pow);
        return ec_set_error("out of memory");
    }
    double uncert_pct = NAN; /* the least sure run's energy uncertainty, % */
    for (size_t i = 0; i < n; i++) {
        tok[i] = r[i].tok_s;
        pow[i] = r[i].avg_power_w;
        double u = 100.0 * r[i].gpu_energy_uncert_j / r[i].gpu_energy_j;
        if (isfinite(u) && !(uncert_pct >= u)) uncert_pct = u;
    }
    ec_stat t, p;
    ec_stat_of(tok, (int)n, &t);
    ec_stat_of(pow, (int)n, &p);
    free(tok);
    free(pow);
    free(r);
    *cv_tok = t.cv_pct;
    *cv_pow = p.cv_pct;
    /* Without GPU power (no GPU measured) the power and uncertainty gates do not apply; the
     * uncertainty gate belongs to the protocol of lengthened windows (min_window_s != 0). */
    int tok_ok = t.cv_pct < s->cv_tok_pct, pow_ok = isnan(p.cv_pct) || p.cv_pct < s->cv_power_pct;
    int uncert_ok = s->min_window_s == 0 || isnan(uncert_pct) || uncert_pct < s->max_uncert_pct;
    if (isnan(t.cv_pct)) {
        *gate = EC_GATE_UNKNOWN;
        snprintf(note, len, "gate not applicable: %zu measured run(s), no CV", n);
        return 0;
    }
    char cvs[192], pw[48] = "n/a (no GPU power)", un[48] = "";
    if (!isnan(p.cv_pct)) snprintf(pw, sizeof pw, "%.2f %% (< %g)", p.cv_pct, s->cv_power_pct);
    if (!isnan(uncert_pct))
        snprintf(un, sizeof un, ", energy uncertainty %.2f %% (< %g)", uncert_pct,
                 s->max_uncert_pct);
    snprintf(cvs, sizeof cvs, "CV tok/s %.2f %% (< %g), CV power %s%s", t.cv_pct, s->cv_tok_pct,
             pw, un);
    if (tok_ok && pow_ok && uncert_ok) {
        *gate = EC_GATE_PASS;
        snprintf(note, len, "gate pass: %s", cvs);
    } else if (it->st.attempt < s->max_reruns) {
        *gate = EC_GATE_PENDING;
        snprintf(note, len, "gate fail: %s; re-run %d of %d", cvs, it->st.attempt + 1,
                 s->max_reruns);
    } else {
        *gate = EC_GATE_FAIL;
        snprintf(note, len, "gate fail: %s; no re-runs left, kept as failed", cvs);
    }
    return 0;
}

/* ---- the protocol ---- */

typedef struct {
    const ec_bench_spec *spec;
    const ec_bench_env *env;
    const ec_bench_factory *f;
    ec_bench_outcome *out;
    progress_state ps;
    ec_session session;
    int have_session;
    char *spec_json;
    /* the loaded model and backend, reused by consecutive configurations */
    ec_model *model;
    const char *model_name;
    ec_backend *backend;
    ec_precision precision;
    ec_kernels kernels;
    int tp;
    int *prompts, *gen_out;
    int max_batch, max_prompt, max_gen;
    double counter_period_s; /* the GPU energy counter's update period, s (NaN: none) */
    double min_window_s;     /* each phase's measured window at least this long, s */
} bench_state;

static void release_backend(bench_state *b)
{
    ec_backend_destroy(b->backend);
    b->backend = NULL;
}

/* Loads model and backend for the configuration unless the current ones serve it. */
static int prepare_backend(bench_state *b, const sweep_item *it, int index)
{
    const ec_bench_config *c = &it->c;
    if (b->model && b->model_name == c->model && b->backend && b->precision == c->precision &&
        b->kernels == c->kernels && b->tp == c->tp)
        return 0;
    report(&b->ps, EC_BENCH_STAGE_LOAD, index, c, 0, 0, it->st.attempt, NULL, NULL);
    release_backend(b);
    if (!b->model || b->model_name != c->model) {
        ec_model_close(b->model);
        b->model = NULL;
        if (b->f->open_model(b->f->ctx, b->spec, c->model, &b->model) != 0)
            return ec_error_context("model %s", c->model);
        b->model_name = c->model;
    }
    /* One KV cache for the largest batch and sequence of the sweep serves every batch size and
     * length without reloading the weights. */
    if (b->f->open_backend(b->f->ctx, b->spec, b->model, c, b->max_batch,
                           b->max_prompt + b->max_gen - 1, &b->backend) != 0)
        return ec_error_context("loading %s at %s on %s with %d rank(s)", c->model,
                                ec_precision_name(c->precision), b->spec->device, c->tp);
    b->precision = c->precision;
    b->kernels = c->kernels;
    b->tp = c->tp;
    return 0;
}

/* Starts the session: idle baseline (with the first backend loaded, so the GPU context is
 * alive as in every later run), then the session row. */
static int begin_session(bench_state *b, int index, const sweep_item *it)
{
    ec_idle_baseline idle, *have = NULL;
    if (b->spec->idle_s > 0) {
        report(&b->ps, EC_BENCH_STAGE_IDLE, index, &it->c, 0, 0, 0, NULL, NULL);
        if (ec_meter_idle_baseline(b->env->meter, b->spec->idle_s, b->env->stop, &idle) != 0)
            return stopped(b->env) ? 0 : -1;
        have = &idle;
    }
    fill_session(&b->session, b->env, have, b->spec_json);
    if (ec_store_begin_session(b->env->store, &b->session) != 0) return -1;
    b->have_session = 1;
    snprintf(b->out->session_id, sizeof b->out->session_id, "%s", b->session.id);
    return 0;
}

/* How often each phase repeats inside its window: enough to last min_window_s, from the phases'
 * times in the last warm-up (gs), or in one unmeasured generation when there was none. */
static int set_repeats(bench_state *b, sweep_item *it, ec_generate_stats *gs)
{
    const ec_bench_config *c = &it->c;
    it->prefill_reps = it->decode_reps = 1;
    if (!(b->min_window_s > 0)) return 0;
    if (!(gs->prefill_s > 0) &&
        ec_generate(b->backend, b->prompts, c->batch, c->prompt_len, c->gen, b->gen_out, NULL,
                    gs) != 0)
        return -1;
    /* Bounded, so a phase timed at ~0 s (a clock too coarse) cannot ask for millions. */
    enum { MAX_REPEATS = 100000 };
    double p = ceil(b->min_window_s / fmax(gs->prefill_s, 1e-9));
    double d = ceil(b->min_window_s / fmax(gs->decode_s, 1e-9));
    it->prefill_reps = (int)fmin(fmax(p, 1), MAX_REPEATS);
    it->decode_reps = c->gen > 1 ? (int)fmin(fmax(d, 1), MAX_REPEATS) : 1;
    return 0;
}

/* Measures one configuration to its end (or until stopped). first: no stabilization needed
 * (the idle baseline just ran). */
static int run_config(bench_state *b, sweep_item *it, int index, int *first)
{
    ec_store *st = b->env->store;
    const ec_bench_spec *s = b->spec;
    const ec_bench_config *c = &it->c;
    if (prepare_backend(b, it, index) != 0) return -1;
    if (!b->have_session) {
        if (begin_session(b, index, it) != 0) return -1;
        if (stopped(b->env)) return 0;
    }
    ec_prompt_synthetic(s->seed, ec_model_config_of(b->model)->vocab_size, c->batch,
                        c->prompt_len, b->prompts);
    run_ctx x = {.spec = s,
                 .env = b->env,
                 .session = &b->session,
                 .backend = b->backend,
                 .model = b->model,
                 .prompts = b->prompts,
                 .out = b->gen_out,
                 /* min_window 0 is the protocol as it was: one phase in a plain window. */
                 .aligned = isfinite(b->counter_period_s) && b->min_window_s > 0,
                 .min_window_s = b->min_window_s,
                 .counter_period_s = b->counter_period_s};
    while (it->st.gate == EC_GATE_PENDING && !stopped(b->env)) {
        /* (A configuration stopped after its last run but before its gate needs no wait.) */
        if (!*first && it->st.committed < s->runs) {
            report(&b->ps, EC_BENCH_STAGE_STABILIZE, index, c, 0, 0, it->st.attempt, NULL, NULL);
            int settled;
            double waited = stabilize(s, b->env, &settled);
            if (b->ps.stabilizations_left > 0) b->ps.stabilizations_left--;
            if (stopped(b->env)) return 0;
            char note[96];
            if (s->stabilize_auto)
                snprintf(note, sizeof note, "%s after %.1f s",
                         settled ? "settled" : "not settled (bound reached)", waited);
            else
                snprintf(note, sizeof note, "waited %.1f s", waited);
            report(&b->ps, EC_BENCH_STAGE_STABILIZE, index, c, 1, 1, it->st.attempt, NULL, note);
            if (ec_store_config_stabilized(st, it->st.id, waited, s->stabilize_auto ? settled : -1))
                return -1;
        }
        *first = 0;
        ec_generate_stats gs = {0};
        for (int w = 0; w < s->warmup && it->st.committed < s->runs; w++) {
            if (stopped(b->env)) return 0;
            report(&b->ps, EC_BENCH_STAGE_WARMUP, index, c, w + 1, s->warmup, it->st.attempt,
                   NULL, NULL);
            double t0 = ec_now_s();
            if (ec_generate(b->backend, b->prompts, c->batch, c->prompt_len, c->gen, b->gen_out,
                            NULL, &gs) != 0)
                return -1;
            b->ps.run_s_sum += ec_now_s() - t0;
            b->ps.runs_done++;
            b->ps.runs_left--;
        }
        if (it->st.committed < s->runs && set_repeats(b, it, &gs) != 0) return -1;
        while (it->st.committed < s->runs) {
            if (stopped(b->env)) return 0;
            ec_run_record r;
            double t0 = ec_now_s();
            if (measure_run(&x, it, it->st.committed, &r) != 0) return -1;
            /* A run that ended is a complete measurement: it is committed even when a stop
             * request arrived meanwhile; an interrupted one never reaches this point. */
            if (ec_store_insert_run(st, it->st.id, it->st.attempt, &r, NULL) != 0) return -1;
            it->st.committed++;
            b->out->measured_runs++;
            b->ps.run_s_sum += ec_now_s() - t0;
            b->ps.runs_done++;
            b->ps.runs_left--;
            report(&b->ps, EC_BENCH_STAGE_RUN, index, c, it->st.committed, s->runs,
                   it->st.attempt, &r, NULL);
        }
        ec_gate_status gate = EC_GATE_UNKNOWN;
        double cv_tok = NAN, cv_pow = NAN;
        char note[256];
        if (evaluate(s, st, it, note, sizeof note, &gate, &cv_tok, &cv_pow) != 0 ||
            ec_store_finish_attempt(st, it->st.id, it->st.attempt, gate, cv_tok, cv_pow) != 0)
            return -1;
        if (gate != EC_GATE_UNKNOWN) {
            b->ps.judged++;
            b->ps.failed += gate != EC_GATE_PASS;
        }
        report(&b->ps, EC_BENCH_STAGE_GATE, index, c, s->runs, s->runs, it->st.attempt, NULL,
               note);
        if (gate == EC_GATE_PENDING) {
            b->ps.runs_left += s->warmup + s->runs;
            b->ps.stabilizations_left++;
        }
        if (ec_store_config(st, &it->key, &it->st) != 0) return -1;
    }
    if (it->st.gate != EC_GATE_PENDING) {
        b->out->finished++;
        b->out->gate_failures += it->st.gate == EC_GATE_FAIL;
    }
    return 0;
}

/* Measures one configuration under this process's claim, so that concurrent sweeps on one
 * database split the configurations between them and never store one twice. */
static int claim_and_run(bench_state *b, sweep_item *it, int index, int *first)
{
    ec_store *st = b->env->store;
    char holder[128]; /* "pid P on HOST", shown in a progress note */
    int claimed = ec_store_claim_config(st, it->st.id, holder, sizeof holder);
    if (claimed < 0) return -1;
    if (!claimed) {
        b->out->held_elsewhere++;
        report(&b->ps, EC_BENCH_STAGE_HELD, index, &it->c, 0, 0, it->st.attempt, NULL, holder);
        return 0;
    }
    /* Runs stored by an earlier holder count: read the state again under the claim. */
    int rc = ec_store_config(st, &it->key, &it->st);
    if (rc == 0 && it->st.gate != EC_GATE_PENDING) {
        b->out->finished++;
        b->out->gate_failures += it->st.gate == EC_GATE_FAIL;
        report(&b->ps, EC_BENCH_STAGE_DONE, index, &it->c, 0, 0, it->st.attempt, NULL,
               ec_gate_status_name(it->st.gate));
    } else if (rc == 0) {
        rc = run_config(b, it, index, first);
    }
    if (ec_store_release_config(st, it->st.id) != 0 && rc == 0) rc = -1;
    return rc;
}

int ec_bench_run(const ec_bench_spec *spec, const ec_bench_env *env, ec_bench_outcome *out)
{
    memset(out, 0, sizeof *out);
    int n = sweep_size(spec);
    if (n <= 0) return ec_set_error("the sweep is empty");
    sweep_item *items = calloc((size_t)n, sizeof *items);
    bench_state b;
    memset(&b, 0, sizeof b);
    b.spec = spec;
    b.env = env;
    b.f = env->factory ? env->factory : &default_factory;
    b.out = out;
    b.ps.env = env;
    b.ps.configs = n;
    /* An auto wait is at least one window of readings; its real length is not known ahead. */
    b.ps.stabilize_s = spec->stabilize_auto ? STAB_PERIOD_S * STAB_WINDOW : spec->stabilize_s;
    b.ps.attempt_runs = spec->warmup + spec->runs;
    b.ps.max_reruns = spec->max_reruns;
    b.spec_json = ec_bench_spec_to_json(spec);
    for (int i = 0; i < spec->nbatches; i++)
        if (spec->batches[i] > b.max_batch) b.max_batch = spec->batches[i];
    for (int i = 0; i < spec->nprompt_lens; i++)
        if (spec->prompt_lens[i] > b.max_prompt) b.max_prompt = spec->prompt_lens[i];
    for (int i = 0; i < spec->ngens; i++)
        if (spec->gens[i] > b.max_gen) b.max_gen = spec->gens[i];
    b.prompts = malloc((size_t)b.max_batch * b.max_prompt * sizeof *b.prompts);
    b.gen_out = malloc((size_t)b.max_batch * b.max_gen * sizeof *b.gen_out);
    int rc = 0;
    if (!items || !b.spec_json || !b.prompts || !b.gen_out) {
        rc = ec_set_error("out of memory");
        goto done;
    }
    n = enumerate(spec, items);
    if (n == 0) {
        rc = ec_set_error("shard %d/%d of this sweep is empty (it has fewer configurations)",
                          spec->shard_index, spec->shard_count);
        goto done;
    }
    out->configs = n;
    b.ps.configs = n;
    /* The counter's period sets how long a window must be (NVML's energy counter updates about
     * every 0.1 s, docs/measurement.md). */
    b.counter_period_s = ec_meter_gpu_count(env->meter) > 0 ? ec_meter_counter_period_s(env->meter)
                                                           : NAN;
    b.min_window_s = spec->min_window_s >= 0 ? spec->min_window_s
                     : isfinite(b.counter_period_s)
                         ? EC_MIN_WINDOW_PERIODS * b.counter_period_s
                         : 0;
    /* Every configuration of the sweep is recorded before the first run, so the database
     * always knows the whole plan (and what is still pending). */
    for (int i = 0; i < n; i++) {
        make_key(spec, env->meter, &items[i]);
        if (ec_store_config(env->store, &items[i].key, &items[i].st) != 0) {
            rc = -1;
            goto done;
        }
        if (items[i].st.gate != EC_GATE_PENDING) {
            out->already_done++;
            continue;
        }
        b.ps.runs_left += (spec->runs - items[i].st.committed) + spec->warmup;
        b.ps.stabilizations_left++;
        b.ps.unstarted++;
    }
    /* The first configuration measured follows the idle baseline (or the start) without a wait. */
    if (b.ps.stabilizations_left > 0) b.ps.stabilizations_left--;
    int first = 1;
    for (int i = 0; i < n && rc == 0; i++) {
        if (items[i].st.gate != EC_GATE_PENDING) {
            out->finished++;
            out->gate_failures += items[i].st.gate == EC_GATE_FAIL;
            report(&b.ps, EC_BENCH_STAGE_DONE, i + 1, &items[i].c, 0, 0, items[i].st.attempt,
                   NULL, ec_gate_status_name(items[i].st.gate));
            continue;
        }
        if (stopped(env)) break;
        b.ps.unstarted--;
        rc = claim_and_run(&b, &items[i], i + 1, &first);
    }
    out->interrupted = stopped(env) && out->finished < n;
    if (b.have_session && ec_store_end_session(env->store, b.session.id) != 0 && rc == 0) rc = -1;
done:
    release_backend(&b);
    ec_model_close(b.model);
    free(b.prompts);
    free(b.gen_out);
    free(b.spec_json);
    free(items);
    return rc;
}

int ec_bench_load_sweep(const ec_bench_spec *spec, ec_meter *m, ec_store *st, ec_run_record **out,
                        size_t *n)
{
    *out = NULL;
    *n = 0;
    int count = sweep_size(spec);
    sweep_item *items = calloc(count > 0 ? (size_t)count : 1, sizeof *items);
    if (!items) return ec_set_error("out of memory");
    count = enumerate(spec, items);
    int rc = 0;
    for (int i = 0; i < count && rc == 0; i++) {
        ec_run_record *r;
        size_t k;
        make_key(spec, m, &items[i]);
        if (ec_store_config(st, &items[i].key, &items[i].st) != 0 ||
            ec_store_load_attempt(st, items[i].st.id, items[i].st.attempt, &r, &k) != 0) {
            rc = -1;
            break;
        }
        ec_run_record *grown = k ? realloc(*out, (*n + k) * sizeof **out) : *out;
        if (k && !grown) {
            free(r);
            rc = ec_set_error("out of memory");
            break;
        }
        *out = grown;
        if (k) memcpy(*out + *n, r, k * sizeof *r);
        *n += k;
        free(r);
    }
    if (rc != 0) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    free(items);
    return rc;
}
