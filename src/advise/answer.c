/* answer.c — one configuration's tok/s and J/1k tokens: measured when a point has it (the user's
 * own runs first), interpolated between two measured batches, else modelled; with the source rows
 * and the ±, or the reason it cannot be answered. */
#include "ecocompute/advise.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ecocompute/analysis.h"
#include "ecocompute/common.h"
#include "ecocompute/model.h"

const char *ec_answer_method_name(ec_answer_method m)
{
    switch (m) {
    case EC_ANSWER_MEASURED:
        return "measured";
    case EC_ANSWER_INTERPOLATED:
        return "interpolated";
    case EC_ANSWER_MODELLED:
        return "modelled";
    default:
        return "none";
    }
}

int ec_advisor_init(ec_advisor *a, ec_advise_data *data)
{
    memset(a, 0, sizeof *a);
    a->data = data;
    if (ec_ref_points(data, &a->pts, &a->npts, &a->error_rows)) return -1;
    if (ec_model_loo(a->pts, a->npts, data, &a->loo, &a->nloo)) {
        ec_advisor_free(a);
        return -1;
    }
    return 0;
}

void ec_advisor_free(ec_advisor *a)
{
    free(a->pts);
    free(a->loo);
    memset(a, 0, sizeof *a);
}

static int same_model(const char *a, const char *b)
{
    char ka[96], kb[96];
    ec_model_family_key(a, ka, sizeof ka);
    ec_model_family_key(b, kb, sizeof kb);
    return !strcmp(ka, kb);
}

/* Whether point p measured the query's configuration, batch aside. */
static int matches(const ec_ref_point *p, const ec_query *q)
{
    return p->verdict != (int)EC_SEV_ERROR && !strcmp(p->gpu, q->gpu->name) &&
           !strcmp(p->precision, q->precision) && !strcmp(p->stack, q->stack) &&
           same_model(p->model, q->model) && p->tok_s > 0 && p->j_per_1k > 0 &&
           (p->def == EC_ENERGY_GROSS || p->def == EC_ENERGY_NET);
}

/* Better of two candidate points: the user's own, then gross energy, then more runs. */
static int better(const ec_ref_point *p, const ec_ref_point *best)
{
    if (!best) return 1;
    if (p->user != best->user) return p->user;
    if ((p->def == EC_ENERGY_GROSS) != (best->def == EC_ENERGY_GROSS))
        return p->def == EC_ENERGY_GROSS;
    return p->n > best->n;
}

static void cite(char *out, size_t cap, const ec_ref_point *p)
{
    size_t l = strlen(out);
    snprintf(out + l, cap - l, "%s%s (%s, %s, %s, batch %d, n=%zu%s%s)", l ? "; " : "", p->source,
             p->gpu_name, p->model, p->precision, p->batch, p->n, p->licence[0] ? ", " : "",
             p->licence);
}

static void vram(const ec_query *q, const ec_step_work *w, ec_answer *out)
{
    int prompt = q->prompt_len > 0 ? q->prompt_len : 0, gen = q->gen_len > 0 ? q->gen_len : 256;
    double mean_ctx = prompt + gen / 2.0, full = prompt + gen;
    out->vram_gb = (w->weight_bytes + (mean_ctx > 0 ? w->kv_bytes * full / mean_ctx : 0)) / 1e9;
    out->fits = out->vram_gb <= q->gpu->memory_gb;
}

static int modelled(const ec_advisor *a, const ec_query *q, const ec_step_work *w, ec_answer *out)
{
    ec_model_params mp;
    if (ec_model_fit(a->pts, a->npts, a->data, q->stack, q->precision, (size_t)-1, &mp)) {
        out->method = EC_ANSWER_NONE;
        snprintf(out->reason, sizeof out->reason,
                 "no measurement and no model: %s (the model is fitted per stack and precision "
                 "from measured rows)",
                 ec_last_error());
        return 0;
    }
    int assumed;
    double idle = ec_gpu_idle_w(q->gpu, &assumed);
    if (ec_model_predict(&mp, q->gpu, w, q->batch, idle, &out->tok_s, &out->j_per_1k)) return -1;
    out->method = EC_ANSWER_MODELLED;
    out->def = EC_ENERGY_GROSS;
    size_t nt, ne;
    char family[32];
    snprintf(family, sizeof family, "%s", q->gpu->arch);
    char *sp = strchr(family, ' ');
    if (sp) *sp = 0;
    double et = ec_loo_median(a->loo, a->nloo, a->pts, a->data, q->stack, family, 0, &nt);
    double ee = ec_loo_median(a->loo, a->nloo, a->pts, a->data, q->stack, family, 1, &ne);
    const char *scope = family;
    if (nt < 3 || ne < 3) {
        et = ec_loo_median(a->loo, a->nloo, a->pts, a->data, q->stack, NULL, 0, &nt);
        ee = ec_loo_median(a->loo, a->nloo, a->pts, a->data, q->stack, NULL, 1, &ne);
        scope = "all GPUs";
    }
    out->pm_tok_pct = et;
    out->pm_energy_pct = ee;
    snprintf(out->basis, sizeof out->basis,
             "median abs leave-one-out error of stack %s on %s (%zu/%zu points)", q->stack, scope,
             nt, ne);
    snprintf(out->sources, sizeof out->sources,
             "physical model fitted to %zu points (time) and %zu (energy) of stack %s at %s; "
             "GPU %s from data/gpus.csv (%s)",
             mp.n_time, mp.n_energy, q->stack, q->precision, q->gpu->name, q->gpu->source);
    if (assumed)
        snprintf(out->reason, sizeof out->reason,
                 "idle power of %s has no source: assumed %.0f%% of its %.0f W TDP", q->gpu->name,
                 100 * ec_idle_fraction_of_tdp, q->gpu->tdp_w);
    if (scope != family) {
        /* The ± comes from other GPU families: the stack was never measured on this one. */
        size_t l = strlen(out->reason);
        snprintf(out->reason + l, sizeof out->reason - l,
                 "%sstack %s has no measured point on a %s GPU: extrapolated from other families",
                 l ? "; " : "", q->stack, family);
    }
    return 0;
}

static int answer(const ec_advisor *a, const ec_query *q, ec_answer *out);

/* A net figure plus the idle power the point's session measured (or the GPU table's) times the
 * time per token gives the gross figure rankings compare. */
int ec_advise_answer(const ec_advisor *a, const ec_query *q, ec_answer *out)
{
    if (answer(a, q, out)) return -1;
    out->j_per_1k_gross = out->j_per_1k;
    if (out->method != EC_ANSWER_NONE && out->def == EC_ENERGY_NET && out->tok_s > 0) {
        int assumed;
        double idle = ec_gpu_idle_w(q->gpu, &assumed);
        out->j_per_1k_gross = out->j_per_1k + 1000.0 * idle / out->tok_s;
        size_t l = strlen(out->reason);
        snprintf(out->reason + l, sizeof out->reason - l,
                 "%snet figure; gross = net + %.0f W idle (%s) x 1000 / tok/s", l ? "; " : "", idle,
                 assumed ? "assumed" : "GPU table");
    }
    return 0;
}

static int answer(const ec_advisor *a, const ec_query *q, ec_answer *out)
{
    memset(out, 0, sizeof *out);
    out->pm_tok_pct = out->pm_energy_pct = NAN;
    ec_step_work w;
    if (ec_step_work_of(q->model, q->params_b, q->precision, q->batch, q->prompt_len, q->gen_len,
                        &w)) {
        out->method = EC_ANSWER_NONE;
        snprintf(out->reason, sizeof out->reason, "%s", ec_last_error());
        return 0;
    }
    vram(q, &w, out);

    const ec_ref_point *exact = NULL, *lo = NULL, *hi = NULL;
    for (size_t i = 0; i < a->npts; i++) {
        const ec_ref_point *p = &a->pts[i];
        if (!matches(p, q)) continue;
        if (p->batch == q->batch && better(p, exact)) exact = p;
        if (p->batch < q->batch &&
            (!lo || p->batch > lo->batch || (p->batch == lo->batch && better(p, lo))))
            lo = p;
        if (p->batch > q->batch &&
            (!hi || p->batch < hi->batch || (p->batch == hi->batch && better(p, hi))))
            hi = p;
    }
    if (exact) {
        out->method = EC_ANSWER_MEASURED;
        out->tok_s = exact->tok_s;
        out->j_per_1k = exact->j_per_1k;
        out->def = exact->def;
        out->pm_tok_pct = exact->tok_s_cv_pct;
        out->pm_energy_pct = exact->j_cv_pct;
        snprintf(out->basis, sizeof out->basis, "CV of %zu runs%s", exact->n,
                 exact->n < 2 ? " (one run: spread unknown)" : "");
        cite(out->sources, sizeof out->sources, exact);
        if (exact->verdict == (int)EC_SEV_WARNING)
            snprintf(out->reason, sizeof out->reason, "validate warns about its rows: %s",
                     exact->checks);
        return 0;
    }
    if (lo && hi && lo->def == hi->def) {
        double f = log((double)q->batch / lo->batch) / log((double)hi->batch / lo->batch);
        out->method = EC_ANSWER_INTERPOLATED;
        out->tok_s = exp(log(lo->tok_s) + f * (log(hi->tok_s) - log(lo->tok_s)));
        out->j_per_1k = exp(log(lo->j_per_1k) + f * (log(hi->j_per_1k) - log(lo->j_per_1k)));
        out->def = lo->def;
        /* The curve between two batches is unknown: the distance to the nearer end bounds it. */
        double t_near = f < 0.5 ? lo->tok_s : hi->tok_s,
               e_near = f < 0.5 ? lo->j_per_1k : hi->j_per_1k;
        out->pm_tok_pct = 100 * fabs(out->tok_s / t_near - 1);
        out->pm_energy_pct = 100 * fabs(out->j_per_1k / e_near - 1);
        snprintf(out->basis, sizeof out->basis,
                 "log-log between batch %d and %d; ± is the distance to the nearer measurement",
                 lo->batch, hi->batch);
        cite(out->sources, sizeof out->sources, lo);
        cite(out->sources, sizeof out->sources, hi);
        return 0;
    }
    return modelled(a, q, &w, out);
}
