/* report_internal.h — what the report's files share: the report model (configurations with their
 * statistics, baselines, environments and the series the charts draw), built once by model.c and
 * rendered by html.c / markdown.c, and the SVG chart primitives of svg.c. */
#ifndef EC_REPORT_INTERNAL_H
#define EC_REPORT_INTERNAL_H

#include <stddef.h>
#include <stdio.h>

#include "ecocompute/analysis.h"
#include "ecocompute/report.h"

/* ---- the model (model.c) ---- */

/* A run's provenance: what the provenance tables list, one row per distinct environment. */
typedef struct {
    const ec_run_record *key; /* first run of the environment */
    size_t runs;
    size_t sessions;
} rp_env;

/* One configuration (ec_group_configs) with what the views show. Energies J per 1000 generated
 * tokens; per request J per sequence; NaN where not stored. */
typedef struct {
    const ec_run_record *key;
    const size_t *rows; /* [nrows] indices into the records */
    size_t nrows;
    ec_energy_definition def; /* definition of e (ec_record_energy_per_1k) */
    int mixed;                /* its runs carry different definitions */
    ec_summary e;             /* J/1k tok in def */
    ec_summary e_gross, e_net;    /* J/1k tok, our gross and net (ecocompute runs) */
    ec_summary req_gross, req_net; /* J per request (one sequence) */
    ec_summary tok, w;             /* tok/s, W */
    ec_summary ppl, kl;            /* perplexity, KL vs float32 (nats) */
    long baseline;       /* index of the baseline (fp16) configuration, -1: none */
    int has_delta;       /* delta filled: Δ% of e vs the baseline's e */
    ec_welch delta;      /* pct, pct_lo, pct_hi (CI NaN when n < 2 on a side) */
    double d_ppl;        /* perplexity − the baseline's (NaN: not stored) */
    ec_gate_status gate; /* fail if any run failed, pass if all passed, else pending/unknown */
    size_t env;          /* environment of key */
    char label[96];      /* "int8 · reference · B=8" */
} rp_config;

/* A set of configurations drawn together: the view's group (same GPU, model, lengths, ...). */
typedef struct {
    size_t *cfg; /* [n] indices into the configurations */
    size_t n;
    char title[400];
} rp_group;

typedef struct {
    const ec_run_record *r;
    size_t n;
    const size_t *run_env; /* [n] environment of each record */
    rp_config *c;
    size_t nc;
    rp_env *env;
    size_t nenv;
    rp_group *prec;  /* precisions view: gpu, model, batch, lengths, definition */
    size_t nprec;
    rp_group *batch; /* batch view: gpu, model, kernels, lengths, definition; ≥ 2 batch sizes */
    size_t nbatch;
    rp_group *cross; /* crossover view: gpu, kernels, batch, definition; deltas at ≥ 2 sizes */
    size_t ncross;
    size_t *best; /* overview: per gpu × model the lowest-energy configuration */
    size_t nbest;
    size_t naccuracy; /* configurations with perplexity or KL */
    const ec_report_traces *traces;
    const char *title, *input;
} rp_model;

int rp_model_build(rp_model *m, const ec_run_record *r, size_t n, const ec_report_options *o);
void rp_model_free(rp_model *m);

/* Precision order of the views: fp16 first, then by bytes per weight. */
int rp_precision_rank(const char *precision);
/* "J/1k tok (gross)" style unit label of a definition. */
const char *rp_def_name(ec_energy_definition d, int mixed);

/* A power law fitted over a batch series: y(B) = a·B^−b on J/request, with the 95 % band of
 * the log-log line. ok = 0 when fewer than 3 batch sizes. */
typedef struct {
    int ok;
    ec_power_fit fit;   /* a in J/request at B = 1 */
    ec_linear_fit line; /* ln y = intercept + slope·ln B */
    double t;           /* t(0.975, n − 2) */
    double mean_lnx, sxx; /* for the band */
} rp_batch_fit;
/* The fit over the runs of the configurations cfg[0..n) that share precision and kernels with
 * cfg[first]; members[] (n) is set to 1 for those. */
int rp_batch_series_fit(const rp_model *m, const rp_group *g, size_t first, char *members,
                        rp_batch_fit *out);
/* 95 % band of the fitted J/request at batch b: [lo, hi]. */
void rp_batch_band(const rp_batch_fit *f, double b, double *lo, double *hi);

/* The series of a group: first[s] is the index (into g->cfg) of the first configuration of
 * series s (one precision × kernels), which[i] the series of configuration i. Returns the
 * number of series. first and which hold g->n entries. */
size_t rp_series_of(const rp_model *m, const rp_group *g, size_t *first, size_t *which);
/* Distinct values of the text field at offset (offsetof(ec_run_record, ...)) over the records:
 * into counts[0], or per environment into counts[nenv] when per_env. */
int rp_count_distinct(const rp_model *m, size_t offset, int per_env, size_t *counts);
/* The largest group's size (at least 1): what per-series scratch arrays need. */
size_t rp_groups_max_size(const rp_group *g, size_t n);
/* The crossover fit of series s of a crossover group: 0 fitted, 1 fewer than two model sizes
 * (no fit), -1 out of memory. */
int rp_cross_series_fit(const rp_model *m, const rp_group *g, const size_t *which, size_t s,
                        ec_crossover *out);

/* ---- text and HTML helpers (html.c) ---- */

/* A number with sensible precision (3 significant digits, thousands kept whole), "–" for NaN. */
const char *rp_num(char *buf, size_t len, double v);
/* HTML-escaped text. */
void rp_html_text(FILE *out, const char *s);
/* A view's "empty" box; why is HTML (constant text with <code> allowed). */
void rp_empty(FILE *out, const char *why);
/* Table cells: a number (data-v keeps it for sorting; NaN shows "–"), a text, a header. */
void rp_td_num(FILE *out, double v);
void rp_td_int(FILE *out, long v); /* counts, batch sizes; < 0 shows "–" */
void rp_td_text(FILE *out, const char *s);
void rp_td_ci(FILE *out, double lo, double hi); /* "lo – hi"; "–" when either is NaN */
void rp_th(FILE *out, const char *label, int numeric);
/* Marks the environments of the runs of configuration c in used[nenv]. */
void rp_mark_config(const rp_model *m, const rp_config *c, char *used);
/* The view's provenance, one click away: the environments marked in used (NULL: all). */
void rp_provenance(FILE *out, const rp_model *m, const char *used);

/* The charted views (html_views.c): section contents without the <section> element. */
int rp_view_precisions(FILE *out, const rp_model *m);
int rp_view_batch(FILE *out, const rp_model *m);
int rp_view_crossover(FILE *out, const rp_model *m);
int rp_view_accuracy(FILE *out, const rp_model *m);
int rp_view_traces(FILE *out, const rp_model *m);
/* Charts drawn per view at most; the tables list every group. */
#define RP_MAX_CHARTS 40

/* The stylesheet and script inlined into the HTML (html_assets.c). */
extern const char rp_css[];
extern const char rp_js[];

/* The HTML page (html.c) and the Markdown document (markdown.c) of a model. */
int rp_write_html(FILE *out, const rp_model *m);
int rp_write_markdown(FILE *out, const rp_model *m);

/* ---- SVG charts (svg.c) ---- */

typedef struct {
    double x0, x1, y0, y1; /* data range */
    int logx, logy;
    double left, top, w, h; /* plot area, px */
} rp_axes;

/* A chart: <figure><svg ...> with a title and a description for screen readers. */
void rp_svg_begin(FILE *out, int width, int height, const char *title);
void rp_svg_end(FILE *out, const char *caption);
/* Ranges padded and rounded for ticks (log axes: to decades; linear: include zero when near). */
void rp_axes_fit(rp_axes *a);
void rp_axes_draw(FILE *out, const rp_axes *a, const char *xlabel, const char *ylabel);
double rp_px(const rp_axes *a, double x);
double rp_py(const rp_axes *a, double y);
/* Series style k: colour, marker shape and dash pattern differ together (readable without
 * colour). */
const char *rp_series_colour(size_t k);
const char *rp_series_dash(size_t k);
void rp_marker(FILE *out, size_t k, double px, double py, const char *tooltip);
/* A legend row at (x, y) px: marker + line sample + text. */
void rp_legend(FILE *out, size_t k, double x, double y, const char *text, int line);

#endif
