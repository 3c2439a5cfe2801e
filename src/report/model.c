/* model.c — the report model: run records grouped into configurations (ec_group_configs) with
 * their statistics (ec_summarize), each configuration's fp16 baseline and Δ (ec_welch_test),
 * the groups each view draws, the greenest configuration per GPU × model, and the distinct
 * environments (provenance). Rendering is in html.c and markdown.c. */
#include "report/report_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ecocompute/common.h"

#define BASELINE "fp16"

int rp_precision_rank(const char *p)
{
    static const char *const order[] = {"fp16", "bf16", "fp8", "int8-mixed", "int8", "nf4",
                                        "nf4-dq"};
    for (int i = 0; i < 7; i++)
        if (!strcmp(p, order[i])) return i;
    return 7;
}

const char *rp_def_name(ec_energy_definition d, int mixed)
{
    return mixed ? "mixed" : ec_energy_definition_name(d);
}

static int same_env(const ec_run_record *a, const ec_run_record *b)
{
    return !strcmp(a->source, b->source) && !strcmp(a->gpu_name, b->gpu_name) &&
           !strcmp(a->driver, b->driver) && !strcmp(a->cuda, b->cuda) &&
           !strcmp(a->git_commit, b->git_commit) &&
           !strcmp(a->ecocompute_version, b->ecocompute_version) &&
           !strcmp(a->host_cpu, b->host_cpu) && !strcmp(a->licence, b->licence);
}

/* A source's summary row (its means) stands for its configuration only when no runs of that
 * configuration are loaded: the runs carry the spread the statistics need (as `analyze`). */
static int superseded_summary(const rp_model *m, const rp_config *c)
{
    const ec_run_record *a = c->key;
    if (!ec_record_is_summary(a)) return 0;
    for (size_t j = 0; j < m->nc; j++) {
        const ec_run_record *b = m->c[j].key;
        if (!ec_record_is_summary(b) && ec_records_match(a, b, EC_KEY_SUMMARY_OF)) return 1;
    }
    return 0;
}

/* J per request (one sequence) of a run: whole-run energy / batch, or the per-1k figure ×
 * generated tokens per sequence for sources that store only that. */
static double per_request(double run_j, double per_1k, const ec_run_record *r)
{
    if (isfinite(run_j) && r->batch > 0) return run_j / r->batch;
    if (isfinite(per_1k) && r->gen_len > 0) return per_1k * r->gen_len / 1000.0;
    return NAN;
}

static int build_envs(rp_model *m, size_t *run_env)
{
    size_t cap = 0;
    for (size_t i = 0; i < m->n; i++) {
        size_t k = m->nenv;
        /* Runs of one environment come in long stretches: look at the last one first. */
        if (i && same_env(&m->r[i], m->env[run_env[i - 1]].key)) k = run_env[i - 1];
        else
            for (size_t j = 0; j < m->nenv; j++)
                if (same_env(&m->r[i], m->env[j].key)) {
                    k = j;
                    break;
                }
        if (k == m->nenv) {
            if (m->nenv == cap) {
                size_t nc = cap ? cap * 2 : 8;
                rp_env *p = realloc(m->env, nc * sizeof *p);
                if (!p) return ec_set_error("out of memory");
                m->env = p;
                cap = nc;
            }
            m->env[k] = (rp_env){.key = &m->r[i]};
            m->nenv++;
        }
        run_env[i] = k;
        m->env[k].runs++;
    }
    size_t *sessions = malloc((m->nenv ? m->nenv : 1) * sizeof *sessions);
    if (!sessions || rp_count_distinct(m, offsetof(ec_run_record, session_id), 1, sessions)) {
        free(sessions);
        return ec_set_error("out of memory");
    }
    for (size_t k = 0; k < m->nenv; k++) m->env[k].sessions = sessions[k];
    free(sessions);
    return 0;
}

/* qsort has no context argument in C11: what by_env_text compares, set just before. */
static const rp_model *distinct_model;
static size_t distinct_offset;
static int distinct_per_env;

/* Records by environment (when per environment) and then by the text at distinct_offset. */
static int by_env_text(const void *x, const void *y)
{
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    if (distinct_per_env && distinct_model->run_env[a] != distinct_model->run_env[b])
        return distinct_model->run_env[a] < distinct_model->run_env[b] ? -1 : 1;
    return strcmp((const char *)&distinct_model->r[a] + distinct_offset,
                  (const char *)&distinct_model->r[b] + distinct_offset);
}

int rp_count_distinct(const rp_model *m, size_t offset, int per_env, size_t *counts)
{
    size_t *idx = malloc((m->n ? m->n : 1) * sizeof *idx);
    if (!idx) return ec_set_error("out of memory");
    for (size_t i = 0; i < m->n; i++) idx[i] = i;
    distinct_model = m;
    distinct_offset = offset;
    distinct_per_env = per_env;
    qsort(idx, m->n, sizeof *idx, by_env_text);
    size_t slots = per_env ? m->nenv : 1;
    for (size_t k = 0; k < slots; k++) counts[k] = 0;
    for (size_t i = 0; i < m->n; i++)
        if (!i || by_env_text(&idx[i - 1], &idx[i]))
            counts[per_env ? m->run_env[idx[i]] : 0]++;
    free(idx);
    return 0;
}

static void summarize_config(rp_model *m, rp_config *c, double *v[9])
{
    int defs[3] = {0, 0, 0};
    for (size_t j = 0; j < c->nrows; j++) {
        const ec_run_record *x = &m->r[c->rows[j]];
        ec_energy_definition d;
        v[0][j] = ec_record_energy_per_1k(x, &d);
        if (isfinite(v[0][j])) defs[d] = 1;
        v[1][j] = x->j_per_1k_gross;
        v[2][j] = x->j_per_1k_net;
        v[3][j] = per_request(x->gpu_energy_j, x->j_per_1k_gross, x);
        v[4][j] = per_request(x->gpu_energy_net_j, x->j_per_1k_net, x);
        v[5][j] = x->tok_s;
        v[6][j] = x->avg_power_w;
        v[7][j] = x->perplexity;
        v[8][j] = x->kl_vs_f32;
    }
    ec_summary *s[9] = {&c->e, &c->e_gross, &c->e_net, &c->req_gross, &c->req_net,
                        &c->tok, &c->w, &c->ppl, &c->kl};
    for (int k = 0; k < 9; k++) ec_summarize(v[k], c->nrows, s[k]);
    c->def = defs[0] ? EC_ENERGY_GROSS : defs[1] ? EC_ENERGY_NET : EC_ENERGY_UNKNOWN;
    c->mixed = defs[0] + defs[1] + defs[2] > 1;
    /* A source's own figure without ours: per request from it, in its definition. */
    if (!c->req_gross.n && c->def == EC_ENERGY_GROSS && c->e.n) {
        for (size_t j = 0; j < c->nrows; j++)
            v[3][j] = per_request(NAN, v[0][j], &m->r[c->rows[j]]);
        ec_summarize(v[3], c->nrows, &c->req_gross);
    }
    int pass = 1, fail = 0;
    for (size_t j = 0; j < c->nrows; j++) {
        ec_gate_status g = m->r[c->rows[j]].gate;
        fail |= g == EC_GATE_FAIL;
        pass &= g == EC_GATE_PASS;
    }
    c->gate = fail ? EC_GATE_FAIL : pass ? EC_GATE_PASS : c->key->gate;
    const ec_run_record *k = c->key;
    int len = snprintf(c->label, sizeof c->label, "%s", k->precision);
    if (k->kernels[0] && len < (int)sizeof c->label)
        len += snprintf(c->label + len, sizeof c->label - (size_t)len, " · %s", k->kernels);
    if (k->batch > 0 && len < (int)sizeof c->label)
        len += snprintf(c->label + len, sizeof c->label - (size_t)len, " · B=%d", k->batch);
    if (ec_record_gpus(k) > 1 && len < (int)sizeof c->label)
        snprintf(c->label + len, sizeof c->label - (size_t)len, " · TP %d", ec_record_gpus(k));
}

/* The fp16 configuration c compares against: its baseline key (EC_KEY_BASELINE) and energy
 * definition; the same family named, then the same source, ranks first. */
static long find_baseline(const rp_model *m, size_t i)
{
    const rp_config *c = &m->c[i];
    const ec_run_record *a = c->key;
    long best = -1;
    int best_score = -1;
    for (size_t j = 0; j < m->nc; j++) {
        const rp_config *b = &m->c[j];
        const ec_run_record *k = b->key;
        if (j == i || strcmp(k->precision, BASELINE) || b->mixed || c->mixed || b->def != c->def ||
            !b->e.n || !ec_records_match(a, k, EC_KEY_BASELINE))
            continue;
        int score = 2 * !strcmp(a->kernels, k->kernels) + !strcmp(a->source, k->source);
        if (score > best_score) {
            best_score = score;
            best = (long)j;
        }
    }
    return best;
}

/* Appends configuration ci to the group whose key `same` accepts, or to a new group. */
typedef int (*same_group_fn)(const rp_config *a, const rp_config *b);

static int add_to_group(rp_model *m, rp_group **gs, size_t *ng, size_t *cap, size_t ci,
                        same_group_fn same)
{
    rp_group *g = NULL;
    for (size_t k = *ng; k-- > 0;)
        if (same(&m->c[(*gs)[k].cfg[0]], &m->c[ci])) {
            g = &(*gs)[k];
            break;
        }
    if (!g) {
        if (*ng == *cap) {
            size_t nc = *cap ? *cap * 2 : 16;
            rp_group *p = realloc(*gs, nc * sizeof *p);
            if (!p) return ec_set_error("out of memory");
            *gs = p;
            *cap = nc;
        }
        g = &(*gs)[(*ng)++];
        *g = (rp_group){0};
    }
    size_t *p = realloc(g->cfg, (g->n + 1) * sizeof *p);
    if (!p) return ec_set_error("out of memory");
    g->cfg = p;
    g->cfg[g->n++] = ci;
    return 0;
}

/* The groups of the views: a key variant (results.h) and the energy definition. */
static int same_experiment(const rp_config *a, const rp_config *b)
{
    return ec_records_match(a->key, b->key, EC_KEY_EXPERIMENT) && a->def == b->def &&
           a->mixed == b->mixed;
}

static int same_batch_series_set(const rp_config *a, const rp_config *b)
{
    return ec_records_match(a->key, b->key, EC_KEY_BATCH_CHART) && a->def == b->def &&
           a->mixed == b->mixed;
}

static int same_crossover_set(const rp_config *a, const rp_config *b)
{
    return ec_records_match(a->key, b->key, EC_KEY_MODEL_SERIES) && a->def == b->def;
}

static size_t distinct_values(const rp_model *m, const rp_group *g, int batch)
{
    size_t d = 0;
    for (size_t i = 0; i < g->n; i++) {
        int seen = 0;
        const ec_run_record *x = m->c[g->cfg[i]].key;
        for (size_t j = 0; j < i && !seen; j++) {
            const ec_run_record *y = m->c[g->cfg[j]].key;
            seen = batch ? x->batch == y->batch : x->params_b == y->params_b;
        }
        d += !seen;
    }
    return d;
}

/* Keeps the groups with at least two distinct values (batch sizes or model sizes). */
static void keep_spread(const rp_model *m, rp_group *g, size_t *n, int batch)
{
    size_t k = 0;
    for (size_t i = 0; i < *n; i++) {
        if (distinct_values(m, &g[i], batch) >= 2) g[k++] = g[i];
        else free(g[i].cfg);
    }
    *n = k;
}

/* qsort has no context argument in C11: the model being sorted, set just before. */
static const rp_model *sort_model;

/* fp16 first, then by bytes per weight; reference before fused; then batch and model size. */
static int by_config_order(const void *x, const void *y)
{
    const rp_config *a = &sort_model->c[*(const size_t *)x], *b = &sort_model->c[*(const size_t *)y];
    int s = rp_precision_rank(a->key->precision) - rp_precision_rank(b->key->precision);
    if (s) return s;
    if ((s = strcmp(a->key->precision, b->key->precision))) return s;
    if ((s = strcmp(b->key->kernels, a->key->kernels))) return s; /* reference before fused */
    if (a->key->batch != b->key->batch) return a->key->batch < b->key->batch ? -1 : 1;
    return (a->key->params_b > b->key->params_b) - (a->key->params_b < b->key->params_b);
}

/* The GPUs a group ran on: the name, with the count when the model was split over several
 * (groups differ in their world size as in any other key field). */
static const char *gpus_title(const ec_run_record *k, char *out, size_t n)
{
    const char *name = k->gpu_name[0] ? k->gpu_name : "GPU unknown";
    if (ec_record_gpus(k) > 1)
        snprintf(out, n, "%s ×%d (tensor parallel)", name, ec_record_gpus(k));
    else
        snprintf(out, n, "%s", name);
    return out;
}

static void title_groups(rp_model *m)
{
    char b[32], len[64], gpus[200];
    for (size_t i = 0; i < m->nprec; i++) {
        const rp_config *c = &m->c[m->prec[i].cfg[0]];
        const ec_run_record *k = c->key;
        snprintf(len, sizeof len, "prompt %d tok, %d new tok", k->prompt_len, k->gen_len);
        snprintf(m->prec[i].title, sizeof m->prec[i].title, "%s · %s · batch %d · %s · energy %s",
                 gpus_title(k, gpus, sizeof gpus), k->model, k->batch, len,
                 rp_def_name(c->def, c->mixed));
    }
    for (size_t i = 0; i < m->nbatch; i++) {
        const rp_config *c = &m->c[m->batch[i].cfg[0]];
        const ec_run_record *k = c->key;
        snprintf(m->batch[i].title, sizeof m->batch[i].title,
                 "%s · %s · kernels %s · prompt %d tok, %d new tok · energy %s",
                 gpus_title(k, gpus, sizeof gpus), k->model, k->kernels[0] ? k->kernels : "unnamed",
                 k->prompt_len, k->gen_len, rp_def_name(c->def, c->mixed));
    }
    for (size_t i = 0; i < m->ncross; i++) {
        const rp_config *c = &m->c[m->cross[i].cfg[0]];
        const ec_run_record *k = c->key;
        snprintf(b, sizeof b, "%d", k->batch);
        snprintf(m->cross[i].title, sizeof m->cross[i].title,
                 "%s · kernels %s · batch %s · energy %s", gpus_title(k, gpus, sizeof gpus),
                 k->kernels[0] ? k->kernels : "unnamed", b, rp_def_name(c->def, c->mixed));
    }
}

static int build_groups(rp_model *m)
{
    size_t cp = 0, cb = 0, cx = 0;
    for (size_t i = 0; i < m->nc; i++) {
        const rp_config *c = &m->c[i];
        if (!c->e.n) continue; /* accuracy-only rows */
        if (add_to_group(m, &m->prec, &m->nprec, &cp, i, same_experiment)) return -1;
        if (c->key->batch > 0 && c->req_gross.n + c->req_net.n + c->tok.n > 0 &&
            add_to_group(m, &m->batch, &m->nbatch, &cb, i, same_batch_series_set))
            return -1;
        if (c->has_delta && c->key->params_b > 0 && isfinite(c->delta.pct) &&
            add_to_group(m, &m->cross, &m->ncross, &cx, i, same_crossover_set))
            return -1;
    }
    keep_spread(m, m->batch, &m->nbatch, 1);
    keep_spread(m, m->cross, &m->ncross, 0);
    sort_model = m;
    rp_group *all[3] = {m->prec, m->batch, m->cross};
    size_t nall[3] = {m->nprec, m->nbatch, m->ncross};
    for (int v = 0; v < 3; v++)
        for (size_t i = 0; i < nall[v]; i++)
            qsort(all[v][i].cfg, all[v][i].n, sizeof *all[v][i].cfg, by_config_order);
    title_groups(m);
    return 0;
}

/* Per GPU × model the configuration with the lowest mean energy in its definition (gross before
 * net before unknown: the first definition the pair has). */
static int build_best(rp_model *m)
{
    m->best = malloc((m->nc ? m->nc : 1) * sizeof *m->best);
    if (!m->best) return ec_set_error("out of memory");
    for (size_t i = 0; i < m->nc; i++) {
        const rp_config *c = &m->c[i];
        if (!c->e.n || c->mixed) continue;
        size_t k = 0;
        while (k < m->nbest && (strcmp(m->c[m->best[k]].key->gpu_name, c->key->gpu_name) ||
                                strcmp(m->c[m->best[k]].key->model, c->key->model)))
            k++;
        if (k == m->nbest) m->best[m->nbest++] = i;
        else {
            const rp_config *b = &m->c[m->best[k]];
            if (c->def < b->def || (c->def == b->def && c->e.mean < b->e.mean)) m->best[k] = i;
        }
    }
    return 0;
}

int rp_model_build(rp_model *m, const ec_run_record *r, size_t n, const ec_report_options *o)
{
    *m = (rp_model){.r = r, .n = n, .traces = o ? o->traces : NULL};
    m->title = o && o->title ? o->title : "ecocompute report";
    m->input = o && o->input ? o->input : "";
    size_t *run_env = malloc((n ? n : 1) * sizeof *run_env);
    if (!run_env) return ec_set_error("out of memory");
    m->run_env = run_env;
    if (build_envs(m, run_env)) goto fail;
    ec_config_group *g;
    size_t ng;
    if (ec_group_configs(r, n, &g, &ng)) goto fail;
    m->c = calloc(ng ? ng : 1, sizeof *m->c);
    double *v[9] = {0};
    int oom = !m->c;
    for (int k = 0; k < 9 && !oom; k++) oom = !(v[k] = malloc((n ? n : 1) * sizeof *v[k]));
    if (oom) {
        for (int k = 0; k < 9; k++) free(v[k]);
        ec_groups_free(g, ng);
        ec_set_error("out of memory");
        goto fail;
    }
    for (size_t i = 0; i < ng; i++) {
        rp_config *c = &m->c[i];
        c->key = g[i].key;
        c->rows = g[i].rows; /* owned by the model from here on */
        g[i].rows = NULL;
        c->nrows = g[i].n;
        c->env = run_env[c->rows[0]];
        summarize_config(m, c, v);
    }
    m->nc = ng;
    ec_groups_free(g, ng);
    for (int k = 0; k < 9; k++) free(v[k]);
    /* Superseded summary rows leave the configurations (their records stay in the Runs view). */
    char *drop = calloc(m->nc ? m->nc : 1, 1);
    if (!drop) {
        ec_set_error("out of memory");
        goto fail;
    }
    for (size_t i = 0; i < m->nc; i++) drop[i] = (char)superseded_summary(m, &m->c[i]);
    size_t kept = 0;
    for (size_t i = 0; i < m->nc; i++) {
        if (drop[i]) free((void *)m->c[i].rows);
        else m->c[kept++] = m->c[i];
    }
    m->nc = kept;
    free(drop);
    for (size_t i = 0; i < m->nc; i++) {
        rp_config *c = &m->c[i];
        c->d_ppl = NAN;
        c->baseline = strcmp(c->key->precision, BASELINE) ? find_baseline(m, i) : -1;
        if (c->baseline < 0) continue;
        const rp_config *b = &m->c[c->baseline];
        /* The test needs n ≥ 2 on both sides; Δ% alone is still shown without it. */
        if (ec_welch_test(&c->e, &b->e, &c->delta)) {
            c->delta.pct = 100.0 * (c->e.mean - b->e.mean) / b->e.mean;
            c->delta.pct_lo = c->delta.pct_hi = NAN;
        }
        c->has_delta = isfinite(c->delta.pct);
        if (c->ppl.n && b->ppl.n) c->d_ppl = c->ppl.mean - b->ppl.mean;
    }
    for (size_t i = 0; i < m->nc; i++) m->naccuracy += m->c[i].ppl.n + m->c[i].kl.n > 0;
    if (build_groups(m) || build_best(m)) goto fail;
    return 0;
fail:
    rp_model_free(m);
    return -1;
}

void rp_model_free(rp_model *m)
{
    for (size_t i = 0; i < m->nc; i++) free((void *)m->c[i].rows);
    free(m->c);
    rp_group *all[3] = {m->prec, m->batch, m->cross};
    size_t nall[3] = {m->nprec, m->nbatch, m->ncross};
    for (int v = 0; v < 3; v++) {
        for (size_t i = 0; i < nall[v]; i++) free(all[v][i].cfg);
        free(all[v]);
    }
    free(m->best);
    free(m->env);
    free((void *)m->run_env);
    *m = (rp_model){0};
}

int rp_batch_series_fit(const rp_model *m, const rp_group *g, size_t first, char *members,
                        rp_batch_fit *out)
{
    memset(out, 0, sizeof *out);
    const ec_run_record *a = m->c[g->cfg[first]].key;
    size_t total = 0;
    for (size_t i = 0; i < g->n; i++) {
        const ec_run_record *b = m->c[g->cfg[i]].key;
        members[i] = !strcmp(a->precision, b->precision) && !strcmp(a->kernels, b->kernels);
        if (members[i]) total += m->c[g->cfg[i]].nrows;
    }
    double *x = malloc((total ? total : 1) * sizeof *x), *y = malloc((total ? total : 1) * sizeof *y);
    double *lx = malloc((total ? total : 1) * sizeof *lx), *ly = malloc((total ? total : 1) * sizeof *ly);
    if (!x || !y || !lx || !ly) {
        free(x), free(y), free(lx), free(ly);
        return ec_set_error("out of memory");
    }
    size_t k = 0, sizes = 0;
    for (size_t i = 0; i < g->n; i++) {
        if (!members[i]) continue;
        const rp_config *c = &m->c[g->cfg[i]];
        int seen = 0;
        for (size_t j = 0; j < i; j++)
            seen |= members[j] && m->c[g->cfg[j]].key->batch == c->key->batch;
        sizes += !seen;
        for (size_t j = 0; j < c->nrows; j++) {
            const ec_run_record *r = &m->r[c->rows[j]];
            double v = c->def == EC_ENERGY_NET && !c->req_gross.n
                           ? per_request(r->gpu_energy_net_j, r->j_per_1k_net, r)
                           : per_request(r->gpu_energy_j, r->j_per_1k_gross, r);
            if (!isfinite(v)) v = per_request(NAN, c->e.mean, r);
            if (!(v > 0)) continue;
            x[k] = r->batch;
            y[k] = v;
            lx[k] = log(r->batch);
            ly[k++] = log(v);
        }
    }
    if (sizes >= 3 && !ec_fit_power_law(x, y, k, &out->fit) && !ec_fit_linear(lx, ly, k, &out->line) &&
        out->line.n > 2) {
        out->ok = 1;
        out->t = ec_t_quantile(0.975, (double)out->line.n - 2);
        double s = 0, ss = 0;
        for (size_t i = 0; i < k; i++) s += lx[i];
        out->mean_lnx = s / (double)k;
        for (size_t i = 0; i < k; i++) ss += (lx[i] - out->mean_lnx) * (lx[i] - out->mean_lnx);
        out->sxx = ss;
    }
    free(x), free(y), free(lx), free(ly);
    return 0;
}

void rp_batch_band(const rp_batch_fit *f, double b, double *lo, double *hi)
{
    double lx = log(b);
    double mid = f->line.intercept + f->line.slope * lx;
    /* Confidence band of the mean response of the log-log line. */
    double se = f->line.resid_sd *
                sqrt(1.0 / (double)f->line.n + (lx - f->mean_lnx) * (lx - f->mean_lnx) / f->sxx);
    if (!isfinite(se)) se = 0;
    *lo = exp(mid - f->t * se);
    *hi = exp(mid + f->t * se);
}

/* Series of a group: index of the first configuration of each distinct precision × kernels. */
size_t rp_series_of(const rp_model *m, const rp_group *g, size_t *first, size_t *which)
{
    size_t ns = 0;
    for (size_t i = 0; i < g->n; i++) {
        const ec_run_record *k = m->c[g->cfg[i]].key;
        size_t s = 0;
        while (s < ns && (strcmp(m->c[g->cfg[first[s]]].key->precision, k->precision) ||
                          strcmp(m->c[g->cfg[first[s]]].key->kernels, k->kernels)))
            s++;
        if (s == ns) first[ns++] = i;
        which[i] = s;
    }
    return ns;
}

int rp_cross_series_fit(const rp_model *m, const rp_group *g, const size_t *which, size_t s,
                        ec_crossover *out)
{
    double *x = malloc(g->n * sizeof *x), *y = malloc(g->n * sizeof *y);
    if (!x || !y) {
        free(x), free(y);
        return ec_set_error("out of memory");
    }
    size_t k = 0, sizes = 0;
    for (size_t i = 0; i < g->n; i++) {
        if (which[i] != s) continue;
        const rp_config *c = &m->c[g->cfg[i]];
        int seen = 0;
        for (size_t q = 0; q < k; q++) seen |= x[q] == c->key->params_b;
        sizes += !seen;
        x[k] = c->key->params_b;
        y[k++] = c->delta.pct;
    }
    int rc = sizes >= 2 && !ec_fit_crossover(x, y, k, out) ? 0 : 1;
    free(x), free(y);
    return rc;
}

size_t rp_groups_max_size(const rp_group *g, size_t n)
{
    size_t max = 1; /* never 0: the callers size arrays by it */
    for (size_t i = 0; i < n; i++) max = g[i].n > max ? g[i].n : max;
    return max;
}
