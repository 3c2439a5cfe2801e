/* reference.c — the measured configurations the advisor answers from: the records of the
 * reference dataset (and the user's runs) grouped into points with n, mean, CV, the stack they
 * were measured with, and what `validate` says about their rows. */
#include "ecocompute/advise.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ecocompute/analysis.h"
#include "ecocompute/common.h"
#include "ecocompute/model.h"

const char *ec_record_stack(const ec_run_record *r)
{
    int ours = !strcmp(r->source, "ecocompute");
    if (ours && !strcmp(r->kernels, "fused")) return "fused";
    if (ours && !strcmp(r->kernels, "reference")) return "reference";
    /* The seeds measured Hugging Face transformers eager with bitsandbytes (INT8, NF4) and
     * torchao (FP8), whatever their kernels column says. */
    if (strcmp(r->source, "ecocompute") != 0) return "hf-bnb";
    return r->kernels[0] ? r->kernels : "unknown";
}

static void summarize_field(const ec_run_record *r, const size_t *rows, size_t n, size_t offset,
                            double *mean, double *cv)
{
    double *x = malloc((n ? n : 1) * sizeof *x);
    if (!x) {
        *mean = *cv = NAN;
        return;
    }
    for (size_t i = 0; i < n; i++)
        memcpy(&x[i], (const char *)&r[rows[i]] + offset, sizeof x[i]);
    ec_summary s;
    ec_summarize(x, n, &s);
    *mean = s.n ? s.mean : NAN;
    *cv = s.cv_pct;
    free(x);
}

/* The energy figure of a record under the definition the point uses: our runs give gross (what
 * the board drew, the figure users pay for); a seed row gives its own figure and definition. */
static double record_energy(const ec_run_record *r, ec_energy_definition *def)
{
    if (isfinite(r->j_per_1k_gross)) {
        *def = EC_ENERGY_GROSS;
        return r->j_per_1k_gross;
    }
    return ec_record_energy_per_1k(r, def);
}

static int same_measurement(const ec_ref_point *p, const ec_run_record *k)
{
    char a[96], b[96];
    ec_model_family_key(p->model, a, sizeof a);
    ec_model_family_key(k->model, b, sizeof b);
    return !strcmp(p->gpu_name, k->gpu_name) && !strcmp(a, b) &&
           !strcmp(p->precision, k->precision) && p->batch == k->batch &&
           !strcmp(p->stack, ec_record_stack(k)) && p->prompt_len == k->prompt_len;
}

int ec_ref_points(const ec_advise_data *d, ec_ref_point **out, size_t *nout, size_t *error_rows)
{
    *out = NULL;
    *nout = 0;
    if (error_rows) *error_rows = 0;
    ec_config_group *g = NULL;
    size_t ng = 0;
    if (ec_group_configs(d->records, d->nrecords, &g, &ng)) return -1;
    int *worst = malloc((d->nrecords ? d->nrecords : 1) * sizeof *worst);
    char(*checks)[96] = calloc(d->nrecords ? d->nrecords : 1, sizeof *checks);
    ec_ref_point *p = calloc(ng ? ng : 1, sizeof *p);
    if (!worst || !checks || !p) {
        free(worst);
        free(checks);
        free(p);
        ec_groups_free(g, ng);
        return ec_set_error("out of memory");
    }
    for (size_t i = 0; i < d->nrecords; i++)
        worst[i] = -1;
    ec_validate_options vo;
    ec_validate_options_default(&vo);
    ec_findings f = {0};
    if (ec_validate(d->records, d->nrecords, &vo, &f) == 0)
        for (size_t i = 0; i < f.n; i++) {
            long row = f.v[i].row;
            if (row < 0 || (size_t)row >= d->nrecords) continue;
            if ((int)f.v[i].severity > worst[row]) worst[row] = (int)f.v[i].severity;
            if (!strstr(checks[row], f.v[i].check) &&
                strlen(checks[row]) + strlen(f.v[i].check) + 2 < sizeof checks[row]) {
                if (checks[row][0]) strcat(checks[row], " ");
                strcat(checks[row], f.v[i].check);
            }
        }
    ec_findings_free(&f);
    for (size_t i = 0; error_rows && i < d->nrecords; i++)
        *error_rows += worst[i] == (int)EC_SEV_ERROR;

    size_t np = 0;
    for (size_t gi = 0; gi < ng; gi++) {
        const ec_run_record *k = g[gi].key;
        if (!k->model[0] || !k->precision[0] || k->batch <= 0) continue;
        ec_ref_point *q = &p[np];
        memset(q, 0, sizeof *q);
        q->first_row = g[gi].rows[0];
        snprintf(q->source, sizeof q->source, "%s", k->source);
        snprintf(q->licence, sizeof q->licence, "%s", k->licence);
        snprintf(q->gpu_name, sizeof q->gpu_name, "%s", k->gpu_name);
        const ec_gpu_spec *gs = ec_advise_find_gpu(d, k->gpu_name);
        snprintf(q->gpu, sizeof q->gpu, "%s", gs ? gs->name : "");
        snprintf(q->model, sizeof q->model, "%s", k->model);
        q->params_b = k->params_b;
        if (!(q->params_b > 0)) {
            const ec_model_config *c = ec_catalog_match(k->model);
            if (c) q->params_b = (double)ec_model_param_count(c) / 1e9;
        }
        snprintf(q->precision, sizeof q->precision, "%s", k->precision);
        snprintf(q->stack, sizeof q->stack, "%s", ec_record_stack(k));
        q->batch = k->batch;
        q->prompt_len = k->prompt_len;
        q->gen_len = k->gen_len;
        q->n = g[gi].n;
        q->user = g[gi].rows[0] >= d->nreference;
        summarize_field(d->records, g[gi].rows, g[gi].n, offsetof(ec_run_record, tok_s), &q->tok_s,
                        &q->tok_s_cv_pct);
        summarize_field(d->records, g[gi].rows, g[gi].n, offsetof(ec_run_record, idle_power_w),
                        &q->idle_w, &(double){0});
        /* Energy: one definition per point (the first row's); rows of another are not mixed in. */
        double *e = malloc(g[gi].n * sizeof *e);
        if (!e) continue;
        size_t ne = 0;
        q->def = EC_ENERGY_UNKNOWN;
        for (size_t j = 0; j < g[gi].n; j++) {
            ec_energy_definition def;
            double v = record_energy(&d->records[g[gi].rows[j]], &def);
            if (!isfinite(v)) continue;
            if (!ne) q->def = def;
            if (def == q->def) e[ne++] = v;
        }
        ec_summary s;
        ec_summarize(e, ne, &s);
        free(e);
        q->j_per_1k = s.n ? s.mean : NAN;
        q->j_cv_pct = s.cv_pct;
        q->verdict = -1;
        for (size_t j = 0; j < g[gi].n; j++) {
            size_t row = g[gi].rows[j];
            if (worst[row] > q->verdict) q->verdict = worst[row];
            if (checks[row][0] && !strstr(q->checks, checks[row]) &&
                strlen(q->checks) + strlen(checks[row]) + 2 < sizeof q->checks) {
                if (q->checks[0]) strcat(q->checks, " ");
                strcat(q->checks, checks[row]);
            }
        }
        if (!isfinite(q->tok_s) && !isfinite(q->j_per_1k)) continue;
        np++;
    }
    /* A summary row repeats its runs: keep it only when the runs are not in the data. */
    size_t kept = 0;
    for (size_t i = 0; i < np; i++) {
        const ec_run_record *k = &d->records[p[i].first_row];
        int dup = 0;
        if (ec_record_is_summary(k))
            for (size_t j = 0; j < np && !dup; j++)
                dup = j != i && !ec_record_is_summary(&d->records[p[j].first_row]) &&
                      same_measurement(&p[j], k);
        if (!dup) p[kept++] = p[i];
    }
    free(worst);
    free(checks);
    ec_groups_free(g, ng);
    *out = p;
    *nout = kept;
    return 0;
}
