/* ecocompute/analysis.h — statistics, fits, roofline bounds, grouping and dataset validation over
 * flat run records (results.h). Pure computation: no I/O, no store, no GPU.
 *
 * Conventions as in results.h: NaN is "unknown / not computable" (e.g. a standard deviation of one
 * value), never a silent zero. Formulas are written out in docs/analysis.md. */
#ifndef ECOCOMPUTE_ANALYSIS_H
#define ECOCOMPUTE_ANALYSIS_H

#include <stddef.h>

#include "ecocompute/model.h"
#include "ecocompute/results.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- statistics (stats.c) ---- */

/* Regularized incomplete beta I_x(a, b), a, b > 0, 0 <= x <= 1 (continued fraction, Lentz). */
double ec_betai(double a, double b, double x);
/* Student t: P(T <= t) with df degrees of freedom (df may be INFINITY: the normal). */
double ec_t_cdf(double t, double df);
/* The p-quantile of Student t (0 < p < 1); ec_t_quantile(0.975, 10) = 2.228. */
double ec_t_quantile(double p, double df);

typedef struct {
    size_t n;            /* finite values used */
    double mean, sd;     /* sd with n − 1 (NaN for n < 2) */
    double cv_pct;       /* 100 · sd / |mean| */
    double se;           /* sd / √n */
    double ci_lo, ci_hi; /* mean ± t(0.975, n − 1) · se (NaN for n < 2) */
} ec_summary;
/* Summarises the finite values of x[0..n) (NaN entries are skipped). Confidence 95%. */
void ec_summarize(const double *x, size_t n, ec_summary *out);

typedef struct {
    double diff;          /* mean(a) − mean(b) */
    double se;            /* √(sa²/na + sb²/nb) */
    double df;            /* Welch–Satterthwaite degrees of freedom */
    double t, p;          /* t statistic, two-sided p-value */
    double ci_lo, ci_hi;  /* 95% CI of diff */
    double pct, pct_lo, pct_hi; /* 100·diff/mean(b) with a 95% CI (delta method on the ratio) */
} ec_welch;
/* Welch's unequal-variance t-test of a against b (the baseline). Needs n ≥ 2 in both and a
 * nonzero pooled standard error; returns -1 (ec_last_error) otherwise. pct is filled whenever
 * mean(b) ≠ 0 (its CI only when the test is possible). */
int ec_welch_test(const ec_summary *a, const ec_summary *b, ec_welch *out);

/* ---- fits (fit.c) ---- */

typedef struct {
    size_t n;
    double slope, intercept;        /* y = intercept + slope · x */
    double se_slope, se_intercept;  /* NaN for n < 3 */
    double cov;                     /* cov(intercept, slope) */
    double r2;                      /* 1 − SS_res/SS_tot (NaN when SS_tot = 0) */
    double resid_sd;                /* √(SS_res/(n − 2)) */
} ec_linear_fit;
/* Ordinary least squares over the pairs where both x and y are finite; needs ≥ 2 distinct x. */
int ec_fit_linear(const double *x, const double *y, size_t n, ec_linear_fit *out);

typedef struct {
    size_t n;
    double a, b;          /* y ≈ a · x^(−b) */
    double se_b;          /* standard error of b (from the log-log fit) */
    double a_lo, a_hi;    /* 95% CI of a (exp of the log-intercept CI) */
    double b_lo, b_hi;    /* 95% CI of b */
    double r2;            /* R² of the log-log fit */
} ec_power_fit;
/* Fits y = a·x^−b by least squares on (ln x, ln y); pairs with x ≤ 0 or y ≤ 0 are skipped. */
int ec_fit_power_law(const double *x, const double *y, size_t n, ec_power_fit *out);

typedef struct {
    ec_linear_fit line;     /* Δ% = intercept + slope · ln(params_b) */
    int found;              /* 1: the fitted line crosses zero inside [min, max] of the data */
    double params_b;        /* crossover, billions of parameters (NaN if the slope is 0) */
    double lo_b, hi_b;      /* 95% CI (delta method in ln space; NaN with fewer than 3 sizes) */
    double min_b, max_b;    /* range of the data */
} ec_crossover;
/* Crossover fit: delta_pct[i] (energy of a precision vs fp16, %) against params_b[i]. */
int ec_fit_crossover(const double *params_b, const double *delta_pct, size_t n, ec_crossover *out);

/* ---- roofline (roofline.c) ---- */

/* Datasheet peak memory bandwidth of a GPU by name ("NVIDIA H100 80GB HBM3", "A800-SXM4-80GB",
 * "Tesla T4"...), bytes/s; NaN if the GPU is not in the table (docs/analysis.md cites each). */
double ec_gpu_peak_bandwidth(const char *gpu_name);
typedef struct {
    double weight_bytes; /* bytes of weights read per decode step */
    double kv_bytes;     /* bytes of KV cache read per step (all sequences), at the given context */
    double max_tok_s;    /* batch · bandwidth / (weight_bytes + kv_bytes), tokens/s */
    int from_catalog;    /* 1: exact shapes; 0: params_b × bytes per parameter, no KV */
} ec_roofline;
/* The decode throughput that memory bandwidth allows: every step reads all weights once and the
 * KV cache of every sequence. model may be NULL (then params_b is used, as a lower bound on the
 * bytes, so the bound is generous). context_len < 0 counts no KV. Returns -1 when neither a
 * model nor params_b > 0 is given, or the precision is unknown. */
int ec_roofline_decode(const ec_model_config *model, double params_b, ec_precision prec,
                       int batch, int context_len, double bandwidth_Bps, ec_roofline *out);

/* ---- records and configurations (group.c) ---- */

/* Energy per 1000 generated tokens of a record and which definition it is: the source's own
 * figure (energy_j_per_1k) when given, else our gross, else our net. NaN if none. */
double ec_record_energy_per_1k(const ec_run_record *r, ec_energy_definition *def);
/* ec_record_is_summary and ec_same_config live with the record (results.h), below the store's
 * seed readers that use them. */

typedef struct {
    const ec_run_record *key; /* the first record of the configuration */
    size_t *rows;             /* indices into the record array, in input order */
    size_t n;
} ec_config_group;
/* Groups records into configurations, in order of first appearance. */
int ec_group_configs(const ec_run_record *r, size_t n, ec_config_group **out, size_t *ngroups);
void ec_groups_free(ec_config_group *g, size_t ngroups);
/* Of each configuration that several ecocompute commits measured, keeps only the runs of the
 * commit whose latest run started last (their timestamp_utc): pooling runs of code that changed
 * between them would make one mean of two programs. Runs without a commit (the seeds' files)
 * all stay. Compacts r in place, keeping the order; *n becomes the number kept. */
int ec_records_latest(ec_run_record *r, size_t *n);

/* ---- validation (validate.c) ---- */

typedef enum { EC_SEV_INFO = 0, EC_SEV_WARNING, EC_SEV_ERROR } ec_severity;
const char *ec_severity_name(ec_severity s); /* "info", "warning", "error" */

typedef struct {
    ec_severity severity;
    char check[32];     /* "energy-identity", "mixed-energy-definition", ... */
    long row;           /* index of the record in the input, -1 for a finding about a group */
    char where[192];    /* source and configuration */
    char message[384];
} ec_finding;

typedef struct {
    double energy_tol_pct;   /* energy vs power × time / tokens; default 5 % */
    double summary_tol_pct;  /* summary row vs mean of its runs; default 1 % */
    double roofline_margin;  /* flag tok/s above margin × bandwidth bound; default 1.0 */
    double duplicate_abs;    /* equal energy figures: |a − b| ≤ this J/1k; default 0.5 */
    int duplicate_min;       /* equal at this many precisions for two models; default 3 */
} ec_validate_options;
void ec_validate_options_default(ec_validate_options *o);

typedef struct {
    ec_finding *v;
    size_t n, cap;
} ec_findings;
void ec_findings_free(ec_findings *f);

/* The checks, one function each; each appends to f and returns -1 only when out of memory.
 * energy-identity: energy per 1k tokens ≠ power × time / tokens (gross) or (power − idle) ×
 *   time / tokens (net) beyond energy_tol_pct; a "net" figure that equals the gross identity. */
int ec_check_energy_identity(const ec_run_record *r, size_t n, const ec_validate_options *o,
                             ec_findings *f);
/* mixed-energy-definition: records that would be compared (same gpu and model) or a dataset that
 * carry different energy definitions; unknown definitions are reported too. */
int ec_check_energy_definitions(const ec_run_record *r, size_t n, const ec_validate_options *o,
                                ec_findings *f);
/* roofline: tok/s above what the GPU's peak memory bandwidth allows for model, precision, batch. */
int ec_check_roofline(const ec_run_record *r, size_t n, const ec_validate_options *o,
                      ec_findings *f);
/* output-length: configurations compared (one source folder, same gpu, model and batch,
 * different precisions) whose generated lengths differ, and runs of one configuration that
 * differ. */
int ec_check_output_lengths(const ec_run_record *r, size_t n, const ec_validate_options *o,
                            ec_findings *f);
/* summary-mismatch: a summary row whose tok/s, power or energy differs beyond summary_tol_pct
 * from the mean of the runs (any source) of exactly its configuration: gpu, model, precision,
 * batch, prompt and output length, and session when both name one. */
int ec_check_summaries(const ec_run_record *r, size_t n, const ec_validate_options *o,
                       ec_findings *f);
/* duplicate-values: two different models whose configurations carry equal energy figures
 * (within duplicate_abs) at duplicate_min or more precisions, in any sources: values copied
 * between tables. */
int ec_check_duplicates(const ec_run_record *r, size_t n, const ec_validate_options *o,
                        ec_findings *f);
/* All checks above, in that order. */
int ec_validate(const ec_run_record *r, size_t n, const ec_validate_options *o, ec_findings *f);

#ifdef __cplusplus
}
#endif
#endif
