/* validate.c — internal-consistency checks of a dataset of run records (ours or imported), each a
 * function that appends findings. They look for the kinds of problems found in the seeds'
 * published data (docs/analysis.md §6 lists each with the files that show it): energy figures
 * that do not follow from power and time, comparisons across energy definitions, throughput
 * faster than the memory allows, outputs of different lengths compared as equals, summaries that
 * do not match their runs, and values copied between tables. Tolerances and their defaults:
 * docs/analysis.md §4. */
#include "ecocompute/analysis.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ecocompute/common.h"

const char *ec_severity_name(ec_severity s)
{
    switch (s) {
    case EC_SEV_INFO: return "info";
    case EC_SEV_WARNING: return "warning";
    case EC_SEV_ERROR: return "error";
    }
    return "unknown";
}

void ec_validate_options_default(ec_validate_options *o)
{
    o->energy_tol_pct = 5.0;  /* integrated vs averaged power differ by ~2% in the seeds */
    o->summary_tol_pct = 1.0; /* published means are rounded to 3-4 significant digits */
    o->roofline_margin = 1.0; /* the datasheet peak is already above any achievable rate */
    o->duplicate_abs = 0.5;   /* J/1k: tables round to whole joules */
    o->duplicate_min = 3;
}

void ec_findings_free(ec_findings *f)
{
    free(f->v);
    f->v = NULL;
    f->n = f->cap = 0;
}

static int add(ec_findings *f, ec_severity sev, const char *check, long row, const char *where,
               const char *fmt, ...) EC_PRINTF(6, 7);
static int add(ec_findings *f, ec_severity sev, const char *check, long row, const char *where,
               const char *fmt, ...)
{
    if (f->n == f->cap) {
        size_t nc = f->cap ? f->cap * 2 : 32;
        ec_finding *p = realloc(f->v, nc * sizeof *p);
        if (!p) return ec_set_error("out of memory");
        f->v = p;
        f->cap = nc;
    }
    ec_finding *x = &f->v[f->n++];
    x->severity = sev;
    snprintf(x->check, sizeof x->check, "%s", check);
    x->row = row;
    snprintf(x->where, sizeof x->where, "%s", where);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->message, sizeof x->message, fmt, ap);
    va_end(ap);
    return 0;
}

/* snprintf through va_list: messages are cut at their buffer on purpose (one line each). */
static void fmt_to(char *buf, size_t cap, const char *fmt, ...) EC_PRINTF(3, 4);
static void fmt_to(char *buf, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
}

/* "SOURCE: GPU MODEL PRECISION batch B" — where a finding points in a person's terms. */
static void describe(const ec_run_record *r, char *buf, size_t cap)
{
    char extra[48] = "";
    if (r->batch > 0) snprintf(extra, sizeof extra, " batch %d", r->batch);
    fmt_to(buf, cap, "%s: %s %s %s%s%s", r->source[0] ? r->source : "-",
             r->gpu_name[0] ? r->gpu_name : "(gpu?)", r->model[0] ? r->model : "(model?)",
             r->precision[0] ? r->precision : "(precision?)", extra,
             ec_record_is_summary(r) ? " (summary)" : "");
}

/* GPU names as sources write them differ in vendor words: "NVIDIA GeForce RTX 4090" and
 * "RTX 4090" are one GPU. Lowercase words joined by '-', without nvidia/geforce/tesla. */
static void norm_gpu(const char *name, char *out, size_t cap)
{
    size_t n = 0;
    for (const char *p = name; *p;) {
        while (*p && !isalnum((unsigned char)*p)) p++;
        const char *s = p;
        while (*p && isalnum((unsigned char)*p)) p++;
        size_t l = (size_t)(p - s);
        if (!l) break;
        char w[32];
        size_t k = 0;
        for (; k < l && k + 1 < sizeof w; k++) w[k] = (char)tolower((unsigned char)s[k]);
        w[k] = '\0';
        if (!strcmp(w, "nvidia") || !strcmp(w, "geforce") || !strcmp(w, "tesla")) continue;
        if (n && n + 1 < cap) out[n++] = '-';
        for (size_t i = 0; i < k && n + 1 < cap; i++) out[n++] = w[i];
    }
    out[n] = '\0';
}

/* Model name without an organisation prefix, lowercased ("Qwen/Qwen2-7B" = "qwen2-7b"). */
static void norm_model(const char *name, char *out, size_t cap)
{
    const char *s = strrchr(name, '/');
    s = s ? s + 1 : name;
    size_t n = 0;
    for (; *s && n + 1 < cap; s++) out[n++] = (char)tolower((unsigned char)*s);
    out[n] = '\0';
}

/* Both records come from one folder of a source (one experiment's files). */
static int same_folder(const ec_run_record *a, const ec_run_record *b)
{
    const char *sa = strrchr(a->source, '/'), *sb = strrchr(b->source, '/');
    size_t la = sa ? (size_t)(sa - a->source) : 0, lb = sb ? (size_t)(sb - b->source) : 0;
    return la == lb && !strncmp(a->source, b->source, la);
}

static double rel_pct(double a, double ref)
{
    return 100.0 * (a - ref) / ref;
}

int ec_check_energy_identity(const ec_run_record *r, size_t n, const ec_validate_options *o,
                             ec_findings *f)
{
    char where[192];
    for (size_t i = 0; i < n; i++) {
        const ec_run_record *x = &r[i];
        describe(x, where, sizeof where);
        /* Whole-run joules = average power × duration, whatever else the row says. */
        if (isfinite(x->gpu_energy_j) && isfinite(x->avg_power_w) && isfinite(x->total_time_s) &&
            x->avg_power_w > 0 && x->total_time_s > 0) {
            double pt = x->avg_power_w * x->total_time_s, d = rel_pct(x->gpu_energy_j, pt);
            if (fabs(d) > o->energy_tol_pct &&
                add(f, EC_SEV_ERROR, "energy-identity", (long)i, where,
                    "energy %.1f J but power x time = %.1f W x %.2f s = %.1f J (%+.1f%%)",
                    x->gpu_energy_j, x->avg_power_w, x->total_time_s, pt, d))
                return -1;
        }
        ec_energy_definition def;
        double e = ec_record_energy_per_1k(x, &def);
        if (!isfinite(e) || !isfinite(x->avg_power_w) || !isfinite(x->tok_s) ||
            !(x->avg_power_w > 0) || !(x->tok_s > 0))
            continue;
        /* J per 1000 tokens = W × (s per token) × 1000 = 1000 · P / throughput (gross). A record
         * with a measured prefill phase (ecocompute's) has tok/s over the decode phase but energy
         * over the whole run, so its throughput here is the whole run's: tokens / total time. */
        double rate = x->tok_s;
        if (isfinite(x->prefill.time_s) && x->prefill.time_s > 0 && isfinite(x->total_time_s) &&
            x->total_time_s > 0 && x->batch > 0 && x->gen_len > 0)
            rate = (double)x->batch * x->gen_len / x->total_time_s;
        double gross = 1000.0 * x->avg_power_w / rate;
        double implied_idle = x->avg_power_w - e * rate / 1000.0;
        double dg = rel_pct(e, gross);
        int rc = 0;
        if (def == EC_ENERGY_GROSS) {
            if (fabs(dg) > o->energy_tol_pct)
                rc = add(f, EC_SEV_ERROR, "energy-identity", (long)i, where,
                         "gross energy %.1f J/1k tok but 1000 x %.2f W / %.3f tok/s = %.1f J/1k "
                         "(%+.1f%%; as if %.1f W were subtracted)",
                         e, x->avg_power_w, rate, gross, dg, implied_idle);
        } else if (def == EC_ENERGY_NET) {
            if (isfinite(x->idle_power_w)) {
                double net = 1000.0 * (x->avg_power_w - x->idle_power_w) / rate;
                double dn = rel_pct(e, net);
                if (fabs(dn) > o->energy_tol_pct)
                    rc = add(f, EC_SEV_ERROR, "energy-identity", (long)i, where,
                             "net energy %.1f J/1k tok but 1000 x (%.2f - %.2f idle) W / %.3f "
                             "tok/s = %.1f J/1k (%+.1f%%)",
                             e, x->avg_power_w, x->idle_power_w, rate, net, dn);
            } else if (fabs(dg) <= o->energy_tol_pct) {
                rc = add(f, EC_SEV_WARNING, "energy-identity", (long)i, where,
                         "labelled net (idle-subtracted) but equals the gross 1000 x P / tok/s = "
                         "%.1f J/1k (implied idle %.1f W)", gross, implied_idle);
            } else if (implied_idle < 0 || implied_idle >= x->avg_power_w) {
                rc = add(f, EC_SEV_ERROR, "energy-identity", (long)i, where,
                         "net energy %.1f J/1k tok implies an idle power of %.1f W at %.2f W "
                         "average: impossible", e, implied_idle, x->avg_power_w);
            }
        } else if (fabs(dg) > o->energy_tol_pct) {
            rc = add(f, EC_SEV_WARNING, "energy-identity", (long)i, where,
                     "energy %.1f J/1k tok (definition unknown) is not 1000 x P / tok/s = %.1f "
                     "J/1k (%+.1f%%; implied idle %.1f W)", e, gross, dg, implied_idle);
        }
        if (rc) return -1;
    }
    return 0;
}

int ec_check_energy_definitions(const ec_run_record *r, size_t n, const ec_validate_options *o,
                                ec_findings *f)
{
    (void)o;
    size_t count[3] = {0, 0, 0}, first_finding = f->n;
    char *seen = calloc(n ? n : 1, 1); /* record already reported within its comparison */
    if (!seen) return ec_set_error("out of memory");
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        ec_energy_definition di;
        if (!isfinite(ec_record_energy_per_1k(&r[i], &di))) continue;
        count[di]++;
        if (seen[i]) continue;
        /* The comparison a record belongs to: every record of the same GPU and model. */
        char gi[96], mi[64], gj[96], mj[64];
        norm_gpu(r[i].gpu_name, gi, sizeof gi);
        norm_model(r[i].model, mi, sizeof mi);
        size_t per[3] = {0, 0, 0};
        for (size_t j = i; j < n; j++) {
            ec_energy_definition dj;
            if (!isfinite(ec_record_energy_per_1k(&r[j], &dj))) continue;
            norm_gpu(r[j].gpu_name, gj, sizeof gj);
            norm_model(r[j].model, mj, sizeof mj);
            if (strcmp(gi, gj) || strcmp(mi, mj)) continue;
            seen[j] = 1;
            per[dj]++;
        }
        /* gross next to net is an error; a known definition next to an unknown one cannot be
         * told apart, so a warning. */
        int kinds = (per[0] > 0) + (per[1] > 0) + (per[2] > 0);
        if (kinds > 1) {
            const char *gpu = r[i].gpu_name[0] ? r[i].gpu_name : "(gpu?)";
            char msg[sizeof f->v->message];
            fmt_to(msg, sizeof msg,
                   "each comparison mixes energy definitions: %zu gross, %zu net "
                   "(idle-subtracted), %zu unknown rows", per[0], per[1], per[2]);
            /* The same mix on one GPU for several models is one finding naming the models. */
            ec_finding *same = NULL;
            size_t gl = strlen(gpu);
            for (size_t k = first_finding; k < f->n && !same; k++)
                if (!strcmp(f->v[k].check, "mixed-energy-definition") &&
                    !strcmp(f->v[k].message, msg) && !strncmp(f->v[k].where, gpu, gl) &&
                    f->v[k].where[gl] == ' ')
                    same = &f->v[k];
            if (same) {
                size_t len = strlen(same->where);
                fmt_to(same->where + len, sizeof same->where - len, ", %s", r[i].model);
            } else {
                char where[sizeof f->v->where];
                fmt_to(where, sizeof where, "%s %s", gpu, r[i].model);
                rc = add(f, per[0] && per[1] ? EC_SEV_ERROR : EC_SEV_WARNING,
                         "mixed-energy-definition", -1, where, "%s", msg);
            }
        }
    }
    free(seen);
    if (rc) return -1;
    if ((count[0] > 0) + (count[1] > 0) + (count[2] > 0) > 1 &&
        add(f, EC_SEV_WARNING, "mixed-energy-definition", -1, "dataset",
            "energy figures of different definitions: %zu gross, %zu net (idle-subtracted), %zu "
            "unknown rows; comparisons across GPUs or sources are not like for like",
            count[0], count[1], count[2]))
        return -1;
    /* A source whose definition is unknown: one note per source, not per row. */
    for (size_t i = 0; i < n; i++) {
        ec_energy_definition d;
        if (!isfinite(ec_record_energy_per_1k(&r[i], &d)) || d != EC_ENERGY_UNKNOWN) continue;
        int first = 1;
        size_t rows = 0;
        for (size_t j = 0; j < n; j++) {
            ec_energy_definition dj;
            if (strcmp(r[j].source, r[i].source) || !isfinite(ec_record_energy_per_1k(&r[j], &dj)) ||
                dj != EC_ENERGY_UNKNOWN)
                continue;
            if (j < i) first = 0;
            rows++;
        }
        if (first && add(f, EC_SEV_INFO, "mixed-energy-definition", -1, r[i].source,
                         "energy definition unknown (gross or idle-subtracted) for %zu rows", rows))
            return -1;
    }
    return 0;
}

int ec_check_roofline(const ec_run_record *r, size_t n, const ec_validate_options *o,
                      ec_findings *f)
{
    char where[192];
    for (size_t i = 0; i < n; i++) {
        const ec_run_record *x = &r[i];
        ec_precision p;
        /* a model split over several GPUs reads its shards at once */
        double bw = ec_gpu_peak_bandwidth(x->gpu_name) * ec_record_gpus(x);
        if (!(x->tok_s > 0) || !isfinite(bw) || x->batch < 1 ||
            ec_precision_from_text(x->precision, &p))
            continue;
        const ec_model_config *m = ec_catalog_match(x->model);
        ec_roofline rf;
        /* KV at the prompt length only: the smallest context of the run, the most generous bound. */
        if (ec_roofline_decode(m, x->params_b, p, x->batch, x->prompt_len, bw, &rf)) continue;
        if (x->tok_s > o->roofline_margin * rf.max_tok_s) {
            describe(x, where, sizeof where);
            if (add(f, EC_SEV_ERROR, "roofline", (long)i, where,
                    "%.2f tok/s exceeds the memory-bandwidth bound %.2f tok/s (%.2f GB per step "
                    "%s at %.3f TB/s peak)", x->tok_s, rf.max_tok_s,
                    (rf.weight_bytes + rf.kv_bytes) / 1e9,
                    rf.from_catalog ? "from the catalog shapes" : "from the parameter count",
                    bw / 1e12))
                return -1;
        }
    }
    return 0;
}

/* Tokens generated per sequence by a run: counted decode tokens when the source gives them (the
 * seeds often did not pin the length), else the configured length; -1 unknown. */
static double gen_length(const ec_run_record *x)
{
    if (x->decode.tokens >= 0) return (double)x->decode.tokens / (x->batch > 0 ? x->batch : 1);
    return x->gen_len >= 0 ? (double)x->gen_len : -1.0;
}

int ec_check_output_lengths(const ec_run_record *r, size_t n, const ec_validate_options *o,
                            ec_findings *f)
{
    (void)o;
    ec_config_group *g;
    size_t ng;
    if (ec_group_configs(r, n, &g, &ng)) return -1;
    int rc = 0;
    char where[192];
    /* Within a configuration: runs that produced different numbers of tokens. */
    for (size_t k = 0; k < ng && !rc; k++) {
        double lo = INFINITY, hi = -INFINITY;
        for (size_t j = 0; j < g[k].n; j++) {
            double L = gen_length(&r[g[k].rows[j]]);
            if (L < 0) continue;
            lo = fmin(lo, L);
            hi = fmax(hi, L);
        }
        if (hi > lo) {
            describe(g[k].key, where, sizeof where);
            rc = add(f, EC_SEV_WARNING, "output-length", -1, where,
                     "runs of one configuration generated %.0f to %.0f tokens per sequence",
                     lo, hi);
        }
    }
    /* Across configurations compared with each other: one experiment (folder), same GPU, model
     * and batch, other precision. A longer output costs more per token at the start and less later, so lengths
     * must match for Δ energy to mean anything. */
    char *done = calloc(ng ? ng : 1, 1);
    if (!done) {
        ec_groups_free(g, ng);
        return ec_set_error("out of memory");
    }
    for (size_t k = 0; k < ng && !rc; k++) {
        if (done[k] || ec_record_is_summary(g[k].key)) continue;
        const ec_run_record *a = g[k].key;
        char gk[96], mk[64], gq[96], mq[64], list[320] = "";
        norm_gpu(a->gpu_name, gk, sizeof gk);
        norm_model(a->model, mk, sizeof mk);
        double lo = INFINITY, hi = -INFINITY;
        int precisions_differ = 0, members = 0;
        size_t len = 0;
        for (size_t q = k; q < ng; q++) {
            const ec_run_record *b = g[q].key;
            if (ec_record_is_summary(b) || b->batch != a->batch || !same_folder(a, b)) continue;
            norm_gpu(b->gpu_name, gq, sizeof gq);
            norm_model(b->model, mq, sizeof mq);
            if (strcmp(gk, gq) || strcmp(mk, mq)) continue;
            done[q] = 1;
            double L = gen_length(&r[g[q].rows[0]]);
            if (L < 0) continue;
            members++;
            if (strcmp(a->precision, b->precision)) precisions_differ = 1;
            lo = fmin(lo, L);
            hi = fmax(hi, L);
            if (len + 1 < sizeof list)
                len += (size_t)snprintf(list + len, sizeof list - len, "%s%s %.0f",
                                        len ? ", " : "", b->precision, L);
            if (len >= sizeof list) len = sizeof list - 1;
        }
        if (members > 1 && precisions_differ && hi > lo) {
            fmt_to(where, sizeof where, "%s %s batch %d", a->gpu_name, a->model, a->batch);
            rc = add(f, EC_SEV_WARNING, "output-length", -1, where,
                     "precisions compared at different output lengths (tokens per sequence): %s",
                     list);
        }
    }
    free(done);
    ec_groups_free(g, ng);
    return rc ? -1 : 0;
}

/* A summary row and a run describe the same configuration: GPU, model, precision and batch known
 * and equal, prompt and output lengths equal (unknown only matches unknown), and the session the
 * same when both name one. */
static int summary_matches(const ec_run_record *s, const ec_run_record *x)
{
    char a[96], b[96];
    if (s->batch < 1 || x->batch != s->batch || strcmp(s->precision, x->precision)) return 0;
    if (x->gen_len != s->gen_len || x->prompt_len != s->prompt_len) return 0;
    if (s->session_id[0] && x->session_id[0] && strcmp(s->session_id, x->session_id)) return 0;
    norm_gpu(s->gpu_name, a, sizeof a);
    norm_gpu(x->gpu_name, b, sizeof b);
    if (!a[0] || strcmp(a, b)) return 0;
    norm_model(s->model, a, sizeof a);
    norm_model(x->model, b, sizeof b);
    return a[0] && !strcmp(a, b);
}

int ec_check_summaries(const ec_run_record *r, size_t n, const ec_validate_options *o,
                       ec_findings *f)
{
    char where[192];
    double *v = malloc((n ? n : 1) * sizeof *v);
    if (!v) return ec_set_error("out of memory");
    for (size_t i = 0; i < n; i++) {
        const ec_run_record *s = &r[i];
        if (!ec_record_is_summary(s)) continue;
        static const char *const names[] = {"throughput (tok/s)", "average power (W)",
                                            "energy (J/1k tok)"};
        for (int field = 0; field < 3; field++) {
            ec_energy_definition d;
            double want = field == 0 ? s->tok_s : field == 1 ? s->avg_power_w
                                                             : ec_record_energy_per_1k(s, &d);
            if (!isfinite(want)) continue;
            size_t k = 0;
            for (size_t j = 0; j < n; j++) {
                const ec_run_record *x = &r[j];
                if (ec_record_is_summary(x) || !summary_matches(s, x)) continue;
                v[k++] = field == 0 ? x->tok_s : field == 1 ? x->avg_power_w
                                                            : ec_record_energy_per_1k(x, &d);
            }
            ec_summary m;
            ec_summarize(v, k, &m);
            if (!m.n || m.mean == 0.0) continue;
            double diff = rel_pct(want, m.mean);
            if (fabs(diff) > o->summary_tol_pct) {
                describe(s, where, sizeof where);
                if (add(f, EC_SEV_ERROR, "summary-mismatch", (long)i, where,
                        "%s %.4g but the mean of its %zu runs is %.4g (%+.1f%%)", names[field],
                        want, m.n, m.mean, diff)) {
                    free(v);
                    return -1;
                }
            }
        }
    }
    free(v);
    return 0;
}

typedef struct {
    char a[64], b[64];   /* model family keys, a < b */
    const char *src_a, *src_b, *name_a, *name_b;
    char precisions[256];
    int count;
} model_pair;

int ec_check_duplicates(const ec_run_record *r, size_t n, const ec_validate_options *o,
                        ec_findings *f)
{
    ec_config_group *g;
    size_t ng;
    if (ec_group_configs(r, n, &g, &ng)) return -1;
    double *e = malloc((ng ? ng : 1) * sizeof *e), *tmp = malloc((n ? n : 1) * sizeof *tmp);
    char(*key)[64] = malloc((ng ? ng : 1) * sizeof *key);
    model_pair *pairs = NULL;
    size_t np = 0, cap = 0;
    int rc = 0;
    if (!e || !tmp || !key) {
        rc = ec_set_error("out of memory");
        goto out;
    }
    for (size_t k = 0; k < ng; k++) {
        ec_energy_definition d;
        for (size_t j = 0; j < g[k].n; j++) tmp[j] = ec_record_energy_per_1k(&r[g[k].rows[j]], &d);
        ec_summary s;
        ec_summarize(tmp, g[k].n, &s);
        e[k] = s.mean;
        /* One model under two spellings ("Mistral-7B" and "Mistral-7B-v0.1") is one model:
         * a curated table that repeats another's numbers is not copying between models. */
        ec_model_family_key(g[k].key->model, key[k], sizeof key[k]);
    }
    for (size_t p = 0; p < ng && !rc; p++) {
        for (size_t q = 0; q < ng && !rc; q++) {
            const ec_run_record *kp = g[p].key, *kq = g[q].key;
            if (!isfinite(e[p]) || !isfinite(e[q]) || strcmp(key[p], key[q]) >= 0 ||
                strcmp(kp->precision, kq->precision) || fabs(e[p] - e[q]) > o->duplicate_abs)
                continue;
            size_t i = 0;
            while (i < np && (strcmp(pairs[i].a, key[p]) || strcmp(pairs[i].b, key[q]))) i++;
            if (i == np) {
                if (np == cap) {
                    size_t nc = cap ? cap * 2 : 8;
                    model_pair *x = realloc(pairs, nc * sizeof *x);
                    if (!x) {
                        rc = ec_set_error("out of memory");
                        break;
                    }
                    pairs = x;
                    cap = nc;
                }
                model_pair *m = &pairs[np++];
                memset(m, 0, sizeof *m);
                snprintf(m->a, sizeof m->a, "%s", key[p]);
                snprintf(m->b, sizeof m->b, "%s", key[q]);
                m->src_a = kp->source;
                m->src_b = kq->source;
                m->name_a = kp->model;
                m->name_b = kq->model;
            }
            model_pair *m = &pairs[i];
            /* count each precision once, whatever number of sources repeat it */
            char tag[40];
            fmt_to(tag, sizeof tag, "%s ", kp->precision);
            if (strstr(m->precisions, tag)) continue;
            size_t len = strlen(m->precisions);
            fmt_to(m->precisions + len, sizeof m->precisions - len, "%s%.0f, ", tag, e[p]);
            m->count++;
        }
    }
    /* Models that carry one set of figures form one finding, however many pairs they make:
     * three tables sharing values are one copy, not three. comp[i] is pair i's group. */
    int *comp = malloc((np ? np : 1) * sizeof *comp);
    if (!rc && !comp) rc = ec_set_error("out of memory");
    for (size_t i = 0; i < np && !rc; i++) comp[i] = pairs[i].count >= o->duplicate_min ? -1 : -2;
    for (size_t i = 0; i < np && !rc; i++) {
        if (comp[i] != -1) continue;
        comp[i] = (int)i;
        for (int grew = 1; grew;) { /* pairs sharing a model with the group join it */
            grew = 0;
            for (size_t j = 0; j < np; j++) {
                if (comp[j] != -1) continue;
                for (size_t k = 0; k < np && comp[j] == -1; k++)
                    if (comp[k] == (int)i &&
                        (!strcmp(pairs[j].a, pairs[k].a) || !strcmp(pairs[j].a, pairs[k].b) ||
                         !strcmp(pairs[j].b, pairs[k].a) || !strcmp(pairs[j].b, pairs[k].b)))
                        comp[j] = (int)i, grew = 1;
            }
        }
        /* The group's models once each, and the pair sharing the most precisions. */
        const model_pair *best = &pairs[i];
        char where[sizeof f->v->where] = "";
        int models = 0;
        for (size_t j = 0; j < np; j++) {
            if (comp[j] != (int)i) continue;
            if (pairs[j].count > best->count) best = &pairs[j];
            for (int side = 0; side < 2; side++) {
                const char *k = side ? pairs[j].b : pairs[j].a;
                int seen = 0;
                for (size_t q = 0; q < j && !seen; q++)
                    seen = comp[q] == (int)i && (!strcmp(pairs[q].a, k) || !strcmp(pairs[q].b, k));
                seen |= side && !strcmp(pairs[j].a, k);
                if (seen) continue;
                size_t len = strlen(where);
                /* file names, not paths: the group must fit its one line */
                const char *src = side ? pairs[j].src_b : pairs[j].src_a;
                const char *base = strrchr(src, '/');
                fmt_to(where + len, sizeof where - len, "%s%s %s", models ? " / " : "",
                       base ? base + 1 : src, side ? pairs[j].name_b : pairs[j].name_a);
                models++;
            }
        }
        char prec[sizeof best->precisions];
        snprintf(prec, sizeof prec, "%s", best->precisions);
        size_t len = strlen(prec);
        if (len >= 2) prec[len - 2] = '\0';
        rc = add(f, EC_SEV_WARNING, "duplicate-values", -1, where,
                 "%d models carry the same energy (J/1k tok) at %d precisions: %s; values copied "
                 "between tables?", models, best->count, prec);
    }
    free(comp);
out:
    free(e);
    free(tmp);
    free(key);
    free(pairs);
    ec_groups_free(g, ng);
    return rc ? -1 : 0;
}

int ec_validate(const ec_run_record *r, size_t n, const ec_validate_options *o, ec_findings *f)
{
    if (ec_check_energy_identity(r, n, o, f) || ec_check_energy_definitions(r, n, o, f) ||
        ec_check_roofline(r, n, o, f) || ec_check_output_lengths(r, n, o, f) ||
        ec_check_summaries(r, n, o, f) || ec_check_duplicates(r, n, o, f))
        return -1;
    return 0;
}
