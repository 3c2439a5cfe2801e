/* analyze_accuracy.c — `ecocompute analyze --accuracy`: the accuracy × energy view. Per model,
 * precision and kernel family, the energy of each measured configuration (J per 1000 generated
 * tokens, Δ vs the baseline precision) beside the perplexity of that precision (Δ vs the
 * baseline's perplexity over the same text, window and stride) and its agreement with float32.
 *
 * Accuracy rows come from the database's accuracy table (`eval --db`), from accuracy exports
 * given as files, and from run records that carry a perplexity (the seeds' published perplexity
 * files). An evaluation repeated with the same text, window and stride is shown by its latest
 * row. An energy configuration takes the accuracy evaluated on its own GPU when there is one,
 * else the latest of another device (the column says where). */
#include "analyze_accuracy.h"
#include "analyze_args.h"

#include "cli.h"
#include "dataset_args.h"

#include "ecocompute/accuracy.h"
#include "ecocompute/analysis.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CMD "analyze"

/* Latest evaluation of one (source, model, precision, kernels, device, text, window, stride). */
typedef struct {
    const ec_accuracy_record *r;
    int n;            /* evaluations of it */
    double dppl_pct;  /* perplexity vs the baseline precision's, % */
    int used;         /* paired with an energy configuration */
} acc_group;

/* One energy configuration (ec_group_configs) and its mean. */
typedef struct {
    const ec_run_record *key;
    double mean;   /* J/1k tokens */
    int def;       /* ec_energy_definition, -1 mixed */
    double de_pct; /* vs the baseline precision's configuration, % */
} energy;

static int keep(const analyze_selection *f, const char *model, const char *prec,
                const char *kernels, const char *gpu)
{
    return (!f->model || cli_icontains(model, f->model)) && (!f->kernels || !strcmp(kernels, f->kernels)) &&
           (!f->prec || !strcmp(prec, f->prec) || !strcmp(prec, f->base) || !strcmp(prec, "f32")) &&
           (!f->gpu || !gpu || cli_icontains(gpu, f->gpu));
}

/* ---- loading ---- */

typedef struct {
    ec_accuracy_record *v;
    size_t n;
} acc_rows;

static int push_rows(acc_rows *a, const ec_accuracy_record *r, size_t n)
{
    if (n == 0) return 0; /* r may be NULL */
    ec_accuracy_record *v = realloc(a->v, (a->n + n + 1) * sizeof *v);
    if (!v) return ec_set_error("out of memory");
    memcpy(v + a->n, r, n * sizeof *r);
    a->v = v;
    a->n += n;
    return 0;
}

/* Run records with a perplexity (the seeds' perplexity files) as accuracy rows. */
static int from_runs(acc_rows *a, const ec_run_record *r, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(r[i].perplexity)) continue;
        ec_accuracy_record x;
        ec_accuracy_record_init(&x);
        snprintf(x.source, sizeof x.source, "%s", r[i].source);
        snprintf(x.licence, sizeof x.licence, "%s", r[i].licence);
        snprintf(x.model, sizeof x.model, "%s", r[i].model);
        snprintf(x.precision, sizeof x.precision, "%s", r[i].precision);
        snprintf(x.kernels, sizeof x.kernels, "%s", r[i].kernels);
        snprintf(x.device, sizeof x.device, "%s", r[i].device);
        snprintf(x.gpu_name, sizeof x.gpu_name, "%s", r[i].gpu_name);
        snprintf(x.timestamp_utc, sizeof x.timestamp_utc, "%s", r[i].timestamp_utc);
        x.params_b = r[i].params_b;
        x.perplexity = r[i].perplexity;
        x.kl_vs_f32 = r[i].kl_vs_f32;
        if (push_rows(a, &x, 1) != 0) return -1;
    }
    return 0;
}

/* The FILEs that are accuracy exports are read here and taken out of d (the rest are energy
 * datasets); with --db the database's accuracy table. *why says why there are none. */
static int load_accuracy(cli_dataset_args *d, acc_rows *a, char *why, size_t len)
{
    if (d->db) {
        ec_store *s;
        if (ec_store_open(&s, d->db, 1) != 0) return -1;
        ec_accuracy_record *r;
        size_t n;
        int rc = ec_store_load_accuracy(s, NULL, &r, &n);
        if (rc == 0 && n == 0 && ec_store_schema_version(s) < 5)
            snprintf(why, len, "%s predates accuracy rows (schema %d): `ecocompute eval --ppl "
                               "FILE --db %s` stores them", d->db, ec_store_schema_version(s), d->db);
        else if (rc == 0 && n == 0)
            snprintf(why, len, "%s holds no accuracy rows: `ecocompute eval --ppl FILE --db %s` "
                               "stores them", d->db, d->db);
        ec_store_close(s);
        if (rc == 0) rc = push_rows(a, r, n);
        free(r);
        return rc;
    }
    int kept = 0;
    for (int i = 0; i < d->npaths; i++) {
        ec_accuracy_record *r;
        size_t n;
        struct stat st;
        /* Folders are energy datasets (walked by the dataset loader). */
        int rc = stat(d->paths[i], &st) == 0 && S_ISDIR(st.st_mode)
                     ? 1
                     : ec_accuracy_read(d->paths[i], &r, &n);
        if (rc < 0) return -1;
        if (rc > 0) {
            d->paths[kept++] = d->paths[i];
            continue;
        }
        rc = push_rows(a, r, n);
        free(r);
        if (rc) return -1;
    }
    d->npaths = kept;
    snprintf(why, len, "no accuracy rows: give an `ecocompute export --accuracy` file, a file "
                       "with perplexities, or --db");
    return 0;
}

/* ---- grouping and baselines ---- */

/* Two accuracy rows of one evaluation setup: the same experiment (source folder: the seeds
 * publish one file per precision), model, kernels, device, text, window and stride. */
static int same_eval(const ec_accuracy_record *a, const ec_accuracy_record *b)
{
    return ec_same_source_folder(a->source, b->source) && !strcmp(a->model, b->model) &&
           !strcmp(a->kernels, b->kernels) && !strcmp(a->device, b->device) &&
           !strcmp(a->gpu_name, b->gpu_name) && !strcmp(a->dataset_sha256, b->dataset_sha256) &&
           a->window == b->window && a->stride == b->stride;
}

static acc_group *group_accuracy(const ec_accuracy_record *r, size_t n, const analyze_selection *f,
                                 size_t *ng)
{
    acc_group *g = calloc(n ? n : 1, sizeof *g);
    *ng = 0;
    if (!g) return NULL;
    for (size_t i = 0; i < n; i++) {
        if (!keep(f, r[i].model, r[i].precision, r[i].kernels, NULL)) continue;
        size_t j = 0;
        while (j < *ng && !(same_eval(g[j].r, &r[i]) && !strcmp(g[j].r->precision, r[i].precision)))
            j++;
        if (j == *ng) g[(*ng)++].r = &r[i];
        else if (strcmp(r[i].timestamp_utc, g[j].r->timestamp_utc) >= 0)
            g[j].r = &r[i]; /* the latest */
        g[j].n++;
    }
    /* Δ perplexity: against the baseline precision of the same evaluation (same source,
     * device, text, window and stride). */
    for (size_t i = 0; i < *ng; i++) {
        g[i].dppl_pct = NAN;
        for (size_t j = 0; j < *ng; j++)
            if (!strcmp(g[j].r->precision, f->base) && same_eval(g[i].r, g[j].r) &&
                g[j].r->perplexity > 0)
                g[i].dppl_pct = 100.0 * (g[i].r->perplexity / g[j].r->perplexity - 1.0);
    }
    return g;
}

/* analyze's rule for its configs table: a source's summary row stands for its configuration
 * only when no runs of that configuration (same experiment folder) are loaded. */
static int superseded(const ec_config_group *g, size_t ng, const ec_run_record *k)
{
    if (!ec_record_is_summary(k)) return 0;
    for (size_t j = 0; j < ng; j++) {
        const ec_run_record *b = g[j].key;
        if (!ec_record_is_summary(b) && ec_records_match(k, b, EC_KEY_SUMMARY_OF)) return 1;
    }
    return 0;
}

static energy *energy_configs(const ec_run_record *r, size_t n, const analyze_selection *f,
                              size_t *ne)
{
    ec_config_group *g;
    size_t ng;
    *ne = 0;
    if (ec_group_configs(r, n, &g, &ng)) return NULL;
    energy *e = calloc(ng ? ng : 1, sizeof *e);
    double *x = malloc((n ? n : 1) * sizeof *x);
    for (size_t i = 0; e && x && i < ng; i++) {
        const ec_run_record *k = g[i].key;
        if (!keep(f, k->model, k->precision, k->kernels, k->gpu_name) || superseded(g, ng, k))
            continue;
        int defs = 0, def = -1;
        for (size_t j = 0; j < g[i].n; j++) {
            ec_energy_definition d;
            x[j] = ec_record_energy_per_1k(&r[g[i].rows[j]], &d);
            if (isfinite(x[j]) && def != (int)d) def = defs++ ? -1 : (int)d;
        }
        ec_summary s;
        ec_summarize(x, g[i].n, &s);
        if (!s.n) continue; /* perplexity-only records */
        e[*ne] = (energy){k, s.mean, defs > 1 ? -1 : def, NAN};
        (*ne)++;
    }
    free(x);
    ec_groups_free(g, ng);
    if (!e) return NULL;
    for (size_t i = 0; i < *ne; i++)
        for (size_t j = 0; j < *ne; j++) {
            const ec_run_record *a = e[i].key, *b = e[j].key;
            if (!strcmp(b->precision, f->base) && ec_records_match(a, b, EC_KEY_BASELINE) &&
                e[i].def >= 0 && e[i].def == e[j].def &&
                ec_record_is_summary(a) == ec_record_is_summary(b) && e[j].mean > 0)
                e[i].de_pct = 100.0 * (e[i].mean / e[j].mean - 1.0);
        }
    return e;
}

/* The accuracy an energy configuration is shown with: same model and precision, a matching
 * kernel family; its own GPU first, then the same kernels named, then the latest. */
static acc_group *accuracy_of(const energy *e, acc_group *g, size_t ng)
{
    acc_group *best = NULL;
    int best_score = -1;
    for (size_t i = 0; i < ng; i++) {
        const ec_accuracy_record *a = g[i].r;
        const ec_run_record *k = e->key;
        if (strcmp(a->model, k->model) || strcmp(a->precision, k->precision) ||
            !ec_kernels_comparable(a->kernels, k->kernels))
            continue;
        int score = 4 * (a->gpu_name[0] && !strcmp(a->gpu_name, k->gpu_name)) +
                    2 * !strcmp(a->kernels, k->kernels);
        if (score > best_score ||
            (score == best_score && strcmp(a->timestamp_utc, best->r->timestamp_utc) > 0)) {
            best = &g[i];
            best_score = score;
        }
    }
    return best;
}

/* ---- the table ---- */

typedef struct {
    const energy *e;   /* NULL: no energy measured for this evaluation */
    const acc_group *a;
} view_row;

static int precision_rank(const char *p)
{
    ec_precision x;
    return ec_precision_from_text(p, &x) == 0 ? (int)x : EC_PREC_COUNT;
}

static int by_view(const void *x, const void *y)
{
    const view_row *a = x, *b = y;
    const char *ma = a->a->r->model, *mb = b->a->r->model;
    int s;
    if ((s = strcmp(ma, mb))) return s;
    const char *ga = a->e ? a->e->key->gpu_name : "", *gb = b->e ? b->e->key->gpu_name : "";
    if ((s = strcmp(ga, gb))) return s;
    const char *ka = a->e ? a->e->key->kernels : a->a->r->kernels;
    const char *kb = b->e ? b->e->key->kernels : b->a->r->kernels;
    if ((s = strcmp(ka, kb))) return s;
    int ba = a->e ? a->e->key->batch : 0, bb = b->e ? b->e->key->batch : 0;
    if (ba != bb) return ba < bb ? -1 : 1;
    return precision_rank(a->a->r->precision) - precision_rank(b->a->r->precision);
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash && slash[1] ? slash + 1 : path;
}

/* text cut to at most max characters (bytes; the cut ends in "~"), into buf. */
static const char *cut(const char *text, size_t max, char *buf, size_t len)
{
    if (strlen(text) <= max) return text;
    snprintf(buf, len, "%.*s~", (int)(max - 1), text);
    return buf;
}

/* A GPU's name without the vendor and brand words every name repeats. */
static const char *short_gpu(const char *name)
{
    static const char *const prefixes[] = {"NVIDIA ", "GeForce ", "Tesla ", NULL};
    for (int i = 0; prefixes[i]; i++)
        if (!strncmp(name, prefixes[i], strlen(prefixes[i]))) name += strlen(prefixes[i]);
    return name;
}

/* full: every column (json, csv); the text table keeps what fits 120 columns (names shortened,
 * top-1 left out) and names the texts, windows and strides below it. */
static ec_table *view_table(const view_row *v, size_t n, int full)
{
    ec_table *t = ec_table_new();
    int c_model = ec_table_column(t, "model", "Model");
    int c_prec = ec_table_column(t, "precision", "Precision");
    int c_kern = ec_table_column(t, "kernels", "Kernels");
    int c_gpu = ec_table_column(t, "gpu", "GPU");
    int c_b = ec_table_column(t, "batch", "Batch");
    int c_e = ec_table_column(t, "energy_j_per_1k", "J/1k tok");
    int c_de = ec_table_column(t, "delta_energy_pct", "ΔE (%)");
    int c_ppl = ec_table_column(t, "perplexity", "PPL");
    int c_dp = ec_table_column(t, "delta_ppl_pct", "ΔPPL (%)");
    int c_kl = ec_table_column(t, "kl_vs_f32", "KL (nats)");
    int c_top = full ? ec_table_column(t, "top1_agreement_pct", "Top-1 (%)") : -1;
    int c_def = full ? ec_table_column(t, "energy_definition", "Energy def") : -1;
    int c_gen = full ? ec_table_column(t, "gen_len", "Gen (tok)") : -1;
    int c_on = full ? ec_table_column(t, "accuracy_device", "Accuracy on") : -1;
    int c_agpu = full ? ec_table_column(t, "accuracy_gpu", "Accuracy GPU") : -1;
    int c_ds = full ? ec_table_column(t, "dataset", "Text") : -1;
    int c_sha = full ? ec_table_column(t, "dataset_sha256", "Text SHA-256") : -1;
    int c_w = full ? ec_table_column(t, "window", "Window") : -1;
    int c_s = full ? ec_table_column(t, "stride", "Stride") : -1;
    int c_tok = full ? ec_table_column(t, "ppl_tokens", "Scored (tok)") : -1;
    int c_n = full ? ec_table_column(t, "evaluations", "Evaluations") : -1;
    int c_src = full ? ec_table_column(t, "accuracy_source", "Accuracy source") : -1;
    for (size_t i = 0; i < n; i++) {
        const ec_accuracy_record *a = v[i].a->r;
        const ec_run_record *k = v[i].e ? v[i].e->key : NULL;
        char m[32], gpu[32];
        ec_table_row(t);
        ec_table_text(t, c_model, "%s",
                      full ? a->model : cut(base_name(a->model), 20, m, sizeof m));
        ec_table_text(t, c_prec, "%s", a->precision);
        ec_table_text(t, c_kern, "%s", k ? k->kernels : a->kernels);
        if (k) {
            ec_table_text(t, c_gpu, "%s",
                          full ? k->gpu_name : cut(short_gpu(k->gpu_name), 14, gpu, sizeof gpu));
            if (k->batch > 0) ec_table_number(t, c_b, "%.0f", k->batch);
            ec_table_number(t, c_e, "%.1f", v[i].e->mean);
            ec_table_number(t, c_de, "%+.1f", v[i].e->de_pct);
        }
        ec_table_number(t, c_ppl, "%.4f", a->perplexity);
        ec_table_number(t, c_dp, "%+.2f", v[i].a->dppl_pct);
        ec_table_number(t, c_kl, "%.2e", a->kl_vs_f32);
        if (!full) continue;
        ec_table_number(t, c_top, "%.2f", a->top1_agreement_pct);
        if (k) {
            ec_table_text(t, c_def, "%s", v[i].e->def < 0 ? "mixed"
                                          : ec_energy_definition_name(v[i].e->def));
            if (k->gen_len > 0) ec_table_number(t, c_gen, "%.0f", k->gen_len);
        }
        ec_table_text(t, c_on, "%s", a->device);
        ec_table_text(t, c_agpu, "%s", a->gpu_name);
        ec_table_text(t, c_ds, "%s", a->dataset);
        ec_table_text(t, c_sha, "%s", a->dataset_sha256);
        if (a->window > 0) ec_table_number(t, c_w, "%.0f", a->window);
        if (a->stride > 0) ec_table_number(t, c_s, "%.0f", a->stride);
        if (a->ppl_tokens >= 0) ec_table_number(t, c_tok, "%.0f", (double)a->ppl_tokens);
        ec_table_number(t, c_n, "%.0f", v[i].a->n);
        ec_table_text(t, c_src, "%s", a->source);
    }
    return t;
}

/* Below the text table: each distinct text, window and stride, and where accuracy ran. */
static void print_texts(const view_row *v, size_t n)
{
    size_t published = 0;
    for (size_t i = 0; i < n; i++) {
        const ec_accuracy_record *a = v[i].a->r;
        if (!a->dataset[0]) {
            published++;
            continue;
        }
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++) {
            const ec_accuracy_record *b = v[j].a->r;
            seen = !strcmp(a->dataset_sha256, b->dataset_sha256) && a->window == b->window &&
                   a->stride == b->stride && !strcmp(a->source, b->source) &&
                   !strcmp(a->device, b->device);
        }
        if (!seen)
            printf("perplexity: %s (sha256 %.12s…), window %d, stride %d, on %s%s%s\n",
                   a->dataset, a->dataset_sha256, a->window, a->stride, a->device,
                   a->gpu_name[0] ? " " : "", a->gpu_name);
    }
    if (published)
        printf("perplexity of %zu rows: as their sources published it (text, window and stride "
               "not stated; json names the source)\n", published);
}

static void usage(void)
{
    printf("usage: ecocompute analyze --accuracy --db PATH | FILE|FOLDER... [--model M]\n"
           "                          [--precision P] [--kernels K] [--gpu G] [--baseline P]\n"
           "                          [--latest] [--format table|json|csv]\n\n"
           "The accuracy x energy view: per model, precision and kernel family, J per 1000\n"
           "generated tokens of each measured configuration (and Δ vs the baseline precision of\n"
           "the same GPU, model, batch and lengths) beside the perplexity (Δ vs the baseline's\n"
           "perplexity over the same text, window and stride, evaluated on the same device), the\n"
           "mean KL and (json, csv) top-1 agreement against float32. Accuracy comes from\n"
           "`eval --db` rows, `export --accuracy` files, and records with a perplexity (the\n"
           "seeds' perplexity files). An energy configuration takes the accuracy evaluated on\n"
           "its GPU, else the latest evaluation elsewhere (json/csv name where).\n\n"
           "  --baseline P   baseline precision for both Δ columns (default fp16; f32 for\n"
           "                 evaluations without an fp16 row)\n"
           "  --latest       of an energy configuration measured by several ecocompute commits,\n"
           "                 only the runs of the newest (by start time)\n\n"
           "examples:\n"
           "  ecocompute analyze --accuracy --db results.db\n"
           "  ecocompute analyze --accuracy --db results.db --model Llama-2-7B --format json\n"
           "  ecocompute analyze --accuracy runs.csv accuracy.csv --format csv\n");
}

int cli_analyze_accuracy(int argc, char **argv)
{
    ec_format fmt = EC_FORMAT_TABLE;
    analyze_selection f = {.base = "fp16"};
    cli_dataset_args ds;
    if (cli_dataset_args_init(CMD, &ds, argc)) return EXIT_FAIL;
    int rc = EXIT_USAGE;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage();
            cli_dataset_args_free(&ds);
            return EXIT_OK;
        }
        if (!strcmp(a, "--accuracy")) continue;
        int took = analyze_selection_arg(&f, argc, argv, &i);
        if (took < 0) goto out;
        if (took) continue;
        if (!strcmp(a, "--format")) {
            if (i + 1 >= argc) {
                cli_usage_error(CMD, "%s needs a value", a);
                goto out;
            }
            if (cli_parse_format(CMD, argv[++i], &fmt)) goto out;
        } else if (cli_dataset_arg(CMD, &ds, argc, argv, &i)) {
            goto out;
        }
    }
    if (cli_dataset_args_check(CMD, &ds, "analyse")) goto out;
    rc = EXIT_FAIL;
    acc_rows ar = {0};
    char why[512] = "";
    if (load_accuracy(&ds, &ar, why, sizeof why)) {
        free(ar.v);
        rc = cli_fail(CMD, "%s", ec_last_error());
        goto out;
    }
    ec_run_record *runs = NULL;
    size_t nruns = 0;
    char from[4096] = "";
    if ((ds.db || ds.npaths) &&
        cli_dataset_args_load(CMD, &ds, &runs, &nruns, from, sizeof from)) {
        free(ar.v);
        goto out;
    }
    if (f.latest && cli_records_latest(CMD, runs, &nruns)) {
        free(ar.v);
        free(runs);
        goto out;
    }
    if (from_runs(&ar, runs, nruns)) {
        free(ar.v);
        free(runs);
        rc = cli_fail(CMD, "%s", ec_last_error());
        goto out;
    }
    size_t ng = 0, ne = 0, nv = 0;
    acc_group *g = group_accuracy(ar.v, ar.n, &f, &ng);
    energy *e = energy_configs(runs, nruns, &f, &ne);
    view_row *v = malloc((ne + ng + 1) * sizeof *v);
    if (!g || !e || !v) {
        rc = cli_fail(CMD, "%s", ec_last_error()[0] ? ec_last_error() : "out of memory");
    } else {
        size_t unpaired = 0;
        for (size_t i = 0; i < ne; i++) {
            acc_group *a = accuracy_of(&e[i], g, ng);
            if (!a) {
                unpaired++;
                continue;
            }
            a->used = 1;
            v[nv++] = (view_row){&e[i], a};
        }
        for (size_t i = 0; i < ng; i++)
            if (!g[i].used && (!f.gpu || cli_icontains(g[i].r->gpu_name, f.gpu)))
                v[nv++] = (view_row){NULL, &g[i]};
        /* --precision: the baselines served the Δ columns; the rows shown are what was asked. */
        size_t shown = 0;
        for (size_t i = 0; i < nv; i++)
            if (!f.prec || !strcmp(v[i].a->r->precision, f.prec)) v[shown++] = v[i];
        nv = shown;
        qsort(v, nv, sizeof *v, by_view);
        if (nv == 0 && ar.n) snprintf(why, sizeof why, "no accuracy rows match the filters");
        if (nv == 0) fprintf(stderr, "ecocompute %s: %s\n", CMD, why);
        if (fmt == EC_FORMAT_TABLE) printf("== Accuracy and energy (Δ vs %s) ==\n", f.base);
        if (nv == 0 && fmt == EC_FORMAT_TABLE) {
            printf("(none: %s)\n", why);
        } else {
            ec_table *t = view_table(v, nv, fmt != EC_FORMAT_TABLE);
            ec_table_print(t, fmt, stdout);
            ec_table_free(t);
            if (fmt == EC_FORMAT_TABLE) print_texts(v, nv);
        }
        fprintf(stderr, "%zu accuracy rows, %zu energy configurations%s%s: %zu rows shown, %zu "
                        "configurations without accuracy\n",
                ar.n, ne, from[0] ? " from " : "", from, nv, unpaired);
        rc = EXIT_OK;
    }
    free(v);
    free(e);
    free(g);
    free(runs);
    free(ar.v);
out:
    cli_dataset_args_free(&ds);
    return rc;
}
