/* ecocompute/advise.h — the decision layer: answers about energy, cost and CO2 computed from the
 * shipped data (data/: GPU table, region table, equivalents, characters per token, reference
 * dataset), the user's stored runs, and a physical model fitted to the measured rows; plus a
 * static audit of Python inference code. Reads store and analysis, never the engine, so every
 * answer is the same on a machine without a GPU. docs/advise.md explains the model and its error.
 *
 * Every figure says how it was obtained (measured / interpolated / modelled), which rows it comes
 * from, and its ± (the spread of the runs, or the model's leave-one-out error). A question the data
 * and the model cannot answer is answered with EC_ANSWER_NONE and a reason, never a number. */
#ifndef ECOCOMPUTE_ADVISE_H
#define ECOCOMPUTE_ADVISE_H

#include <stddef.h>
#include <stdio.h>

#include "ecocompute/quant.h"
#include "ecocompute/results.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- shipped data (data.c): one CSV per table, each row with its source ---- */

typedef struct {
    char name[32];     /* table key, e.g. "H100-SXM" */
    char aliases[192]; /* '|'-separated names it is also known by ("H100 80GB HBM3") */
    char arch[32];
    double memory_gb, bandwidth_gbs, tdp_w;
    double fp16_tflops, int8_tops, fp8_tflops; /* dense tensor rates; NaN where none */
    double idle_w;                             /* NaN where no sourced figure exists */
    char idle_basis[128], source[192];
} ec_gpu_spec;

typedef struct {
    char key[32], aliases[96], name[64];
    double g_co2_per_kwh; /* grid intensity, gCO2e/kWh */
    char intensity_basis[32], intensity_source[128];
    int intensity_year;
    double usd_per_kwh; /* NaN where no sourced price exists */
    char price_basis[64], price_source[160];
    int price_year;
} ec_region;

typedef struct {
    char key[24], what[96];
    double value; /* per unit below */
    char unit[24], basis[160], year[64], source[160];
} ec_equivalent;

typedef struct {
    char lang[8], tokenizer[32];
    double chars_per_token;
    char confidence[32], source[160];
} ec_chars_per_token;

typedef struct {
    char dir[512];
    ec_gpu_spec *gpus;
    size_t ngpus;
    ec_region *regions;
    size_t nregions;
    ec_equivalent *equivalents;
    size_t nequivalents;
    ec_chars_per_token *cpt;
    size_t ncpt;
    ec_run_record *records; /* data/reference CSV files, then any appended (user's --db) */
    size_t nrecords;
    size_t nreference; /* the first nreference records are the shipped ones */
} ec_advise_data;

/* Loads every table and the reference dataset from dir. -1 (ec_last_error names the file) on a
 * missing or malformed file. */
int ec_advise_data_load(const char *dir, ec_advise_data *d);
/* A GPU that `calibrate` measured into the database (the latest calibration of each GPU UUID
 * the runs r name) answers with its measured idle power instead of the table's; its idle_basis
 * says so. Returns how many GPUs changed. */
struct ec_store;
size_t ec_advise_use_calibrations(ec_advise_data *d, struct ec_store *s, const ec_run_record *r,
                                  size_t n, const char *db_name);
/* Appends records (the user's own runs); they are preferred over the shipped ones. */
int ec_advise_data_append(ec_advise_data *d, const ec_run_record *r, size_t n);
void ec_advise_data_free(ec_advise_data *d);

/* The data folder: explicit (--data-dir) when given, else $ECOCOMPUTE_DATA_DIR, else the first of
 * <exe dir>/../share/ecocompute/data, <exe dir>/data, <exe dir>/../data that holds gpus.csv.
 * Returns 0 with the path in out, or -1 with a message listing where it looked. */
int ec_advise_data_dir(const char *explicit_dir, char *out, size_t cap);

/* Lookups by name, case- and punctuation-insensitive over the key and the aliases (a GPU name as
 * NVML reports it, "NVIDIA H100 80GB HBM3", also matches). NULL when unknown. */
const ec_gpu_spec *ec_advise_find_gpu(const ec_advise_data *d, const char *name);
const ec_region *ec_advise_find_region(const ec_advise_data *d, const char *name);
const ec_equivalent *ec_advise_find_equivalent(const ec_advise_data *d, const char *key);
/* Characters per token for a language; tokenizer NULL picks the first row of that language. */
const ec_chars_per_token *ec_advise_find_cpt(const ec_advise_data *d, const char *lang,
                                             const char *tokenizer);

/* Levenshtein distance (case-insensitive). */
size_t ec_edit_distance(const char *a, const char *b);
/* The up to 3 names closest to query, comma-separated, into out. */
void ec_closest_names(const char *query, const char *const *names, size_t n, char *out, size_t cap);

/* ---- reference points (reference.c): one per measured configuration ---- */

typedef struct {
    size_t first_row; /* index into the record array of its first run */
    char source[128], licence[32];
    char gpu[32];      /* GPU table key ("" when the GPU is not in the table) */
    char gpu_name[96]; /* as the source spells it */
    char model[64];    /* as the source spells it */
    double params_b;
    char precision[16];
    char stack[24]; /* "fused", "reference" (ecocompute) or "hf-bnb" (the seeds') */
    int batch, prompt_len, gen_len;
    size_t n;                   /* runs (1 for a source's summary row) */
    double tok_s, tok_s_cv_pct; /* decode tok/s, mean and CV over runs */
    double j_per_1k, j_cv_pct;  /* J per 1000 generated tokens, definition below */
    ec_energy_definition def;
    double idle_w;   /* the session's idle W, or NaN */
    int verdict;     /* worst validate severity of its rows: -1 none, else ec_severity */
    char checks[96]; /* the validate checks that flagged it */
    int user;        /* 1: from the user's own database */
} ec_ref_point;

/* The stack a record belongs to: ecocompute's kernel families keep their name; every seed row
 * (Hugging Face transformers with bitsandbytes / torchao) is "hf-bnb". */
const char *ec_record_stack(const ec_run_record *r);
/* Groups d's records into points, runs validate over them and keeps each point's verdict; a point
 * with an error verdict is never used for an answer or a fit. A source's summary row is dropped
 * when the same source has the runs it summarises; records without a model, precision, batch or
 * any measurement form no point. *error_rows (may be NULL) gets the records validate flags as
 * errors. */
int ec_ref_points(const ec_advise_data *d, ec_ref_point **out, size_t *n, size_t *error_rows);

/* ---- the physical model (physmodel.c) ---- */

/* The work of one decode step. */
typedef struct {
    double params_b;
    double weight_bytes;  /* all weights, read once per step */
    double kv_bytes;      /* KV cache of every sequence at the mean context, per step */
    double flops;         /* 2 · params · batch, per decode step */
    double flops_prefill; /* prefill FLOPs spread over the step's generated tokens */
    int n_layers;
    int batch;
    int from_catalog; /* 1: exact shapes; 0: params only (layers assumed 32, no KV) */
} ec_step_work;
/* Work of model (catalog name or a source's name; params_b used when not in the catalog) at a
 * precision, batch and lengths. -1 when neither the model nor params_b > 0 is known. */
int ec_step_work_of(const char *model, double params_b, const char *precision, int batch,
                    int prompt_len, int gen_len, ec_step_work *w);

typedef struct {
    char stack[24], precision[16];
    double eta_bw;           /* effective / peak memory bandwidth */
    double eta_tf;           /* effective / peak tensor throughput */
    double overhead_s;       /* fixed time per layer per step, s */
    double seq_overhead_s;   /* time per layer per sequence of the batch, s */
    double pj_per_byte;      /* energy above idle per byte read, pJ */
    double pj_per_flop;      /* energy above idle per FLOP, pJ */
    double active_w;         /* power above idle while a step runs, W */
    size_t n_time, n_energy; /* points the fits used */
    /* The fixed overheads belong to the host as much as to the GPU (Python, kernel launches):
     * a GPU with 3 or more points gets its own scale of them; others use 1. */
    size_t nscales;
    char scale_gpu[16][32];
    double overhead_scale[16];
} ec_model_params;
/* The overhead scale the fit found for a GPU (1 when it had too few points). */
double ec_model_overhead_scale(const ec_model_params *p, const ec_gpu_spec *g);

/* Time of one step and its gross energy on a GPU. */
void ec_model_step(const ec_model_params *p, const ec_gpu_spec *g, const ec_step_work *w,
                   double idle_w, double *time_s, double *energy_j);
/* Idle power used for a GPU: the table's, else ec_idle_fraction_of_tdp × TDP (labelled). */
double ec_gpu_idle_w(const ec_gpu_spec *g, int *assumed);
extern const double ec_idle_fraction_of_tdp;

/* Fits the parameters of one stack and precision to the points (skip: index to leave out, or
 * (size_t)-1). Points used: that stack and precision, a GPU in the table, verdict not error;
 * energy only from gross or net points. -1 with fewer than 2 usable points. */
int ec_model_fit(const ec_ref_point *pts, size_t n, const ec_advise_data *d, const char *stack,
                 const char *precision, size_t skip, ec_model_params *out);
/* Predicts decode tok/s and gross J/1k tokens of a point's configuration. */
int ec_model_predict(const ec_model_params *p, const ec_gpu_spec *g, const ec_step_work *w,
                     int batch, double idle_w, double *tok_s, double *j_per_1k);

/* Leave-one-out: every usable point predicted by the fit of the others of its stack and
 * precision; errors are (predicted − measured) / measured, %. NaN where not computable. */
typedef struct {
    size_t point;
    double tok_s_err_pct, energy_err_pct;
} ec_loo_error;
int ec_model_loo(const ec_ref_point *pts, size_t n, const ec_advise_data *d, ec_loo_error **out,
                 size_t *nout);
/* Median absolute error (%) of the LOO errors whose point matches stack and gpu family (arch
 * prefix, e.g. "Hopper"; NULL = any). which: 0 tok/s, 1 energy. NaN when none. *count gets n. */
double ec_loo_median(const ec_loo_error *e, size_t n, const ec_ref_point *pts,
                     const ec_advise_data *d, const char *stack, const char *family, int which,
                     size_t *count);

/* ---- answers (answer.c) ---- */

typedef enum {
    EC_ANSWER_MEASURED = 0,
    EC_ANSWER_INTERPOLATED, /* between two measured batches, log-log */
    EC_ANSWER_MODELLED,
    EC_ANSWER_NONE /* cannot be answered: reason says why */
} ec_answer_method;
const char *ec_answer_method_name(ec_answer_method m);

typedef struct {
    const char *model; /* catalog or source name */
    double params_b;   /* 0: from the catalog */
    const ec_gpu_spec *gpu;
    const char *precision; /* ec_precision_name spelling */
    int batch;
    const char *stack; /* "fused", "reference", "hf-bnb" */
    int prompt_len, gen_len;
} ec_query;

typedef struct {
    ec_answer_method method;
    double tok_s, j_per_1k; /* decode tok/s; J per 1000 generated tokens */
    ec_energy_definition def;
    double j_per_1k_gross; /* gross; from a net figure + idle W × 1000 / tok/s (reason says) */
    double pm_tok_pct, pm_energy_pct; /* ± %, see basis */
    char basis[160];   /* what the ± is: "CV of 3 runs", "LOO median abs error, 12 points" */
    char sources[512]; /* source rows: "file (model, precision, batch)" */
    char reason[256];  /* EC_ANSWER_NONE: why; otherwise notes (assumed idle, ...) */
    double vram_gb;    /* weights + KV cache at the context, GB */
    int fits;          /* vram_gb ≤ the GPU's memory */
} ec_answer;

typedef struct {
    ec_advise_data *data;
    ec_ref_point *pts;
    size_t npts;
    ec_loo_error *loo;
    size_t nloo;
    size_t error_rows; /* records validate flags as errors (not used) */
} ec_advisor;
/* Builds points and LOO errors over data (data stays owned by the caller). */
int ec_advisor_init(ec_advisor *a, ec_advise_data *data);
void ec_advisor_free(ec_advisor *a);
/* Answers a query: measured (the user's runs first), else interpolated, else modelled. */
int ec_advise_answer(const ec_advisor *a, const ec_query *q, ec_answer *out);

/* ---- workload arithmetic (workload.c) ---- */

typedef enum { EC_PER_DAY = 0, EC_PER_MONTH, EC_PER_YEAR } ec_period;
int ec_period_parse(const char *text, ec_period *out);
const char *ec_period_name(ec_period p);
double ec_period_days(ec_period p); /* 1, 365.25/12, 365.25 */

/* A workload in natural quantities, each per period; NaN = not given. Exactly one of tokens,
 * requests, chars, users, hours_per_day must be given. */
typedef struct {
    double tokens;
    double requests, tokens_per_request;
    double chars, chars_per_token;
    double users, requests_per_user; /* requests = users × requests_per_user */
    double hours_per_day, tok_s;     /* full throughput for hours a day */
    ec_period period;
} ec_workload_input;
typedef struct {
    double tokens;   /* generated tokens per period */
    double requests; /* per period (NaN when not derivable) */
    char how[256];   /* how the tokens were derived, in words */
} ec_workload;
/* A count as people write it: "1000000", "1,000,000", "1e6", "2.5k", "1M", "3B" (thousand,
 * million, billion), "100万" (10^4), "3亿" (10^8). -1 (ec_last_error) on anything else or < 0. */
int ec_parse_quantity(const char *text, double *out);
/* Derives the tokens per period. -1 (ec_last_error) when none or several quantities are given or
 * a needed factor (tokens per request, chars per token, tok/s) is missing or not positive. */
int ec_workload_tokens(const ec_workload_input *in, ec_workload *out);

typedef struct {
    double gpu_kwh, facility_kwh; /* per period; facility = gpu × PUE */
    double pue;
    double cost_usd;  /* NaN without a price */
    double kg_co2;    /* NaN without an intensity */
    double gpu_hours; /* busy GPU time per period at the answer's tok/s */
} ec_footprint;
/* kWh = tokens × J/1k / 1000 / 3.6e6; facility kWh = × pue; cost = facility kWh × usd_per_kwh;
 * kgCO2 = facility kWh × g/kWh / 1000. NaN price or intensity leave cost or CO2 NaN. */
void ec_footprint_of(double tokens, double j_per_1k, double tok_s, double pue, double usd_per_kwh,
                     double g_co2_per_kwh, ec_footprint *out);

/* ---- ASCII bar charts (bars.c) ---- */
/* One bar per value, scaled to the largest, width columns at most; labels left, values right. */
void ec_ascii_bars(FILE *out, const char *title, const char *const *labels, const double *values,
                   size_t n, const char *unit, int width);

/* ---- static audit of Python inference code (pytokens.c, audit.c) ---- */

typedef enum {
    EC_PYT_NAME = 0,
    EC_PYT_NUMBER,
    EC_PYT_STRING,
    EC_PYT_OP,
    EC_PYT_NEWLINE
} ec_pyt_kind;
typedef struct {
    ec_pyt_kind kind;
    int line;   /* 1-based line of the token's first character */
    int indent; /* indentation (columns) of the logical line the token belongs to */
    char *text; /* NAME/NUMBER/OP: as written; STRING: the value without prefix and quotes */
} ec_pytoken;
/* Tokenizes Python source: comments dropped, strings (any prefix, triple-quoted, escaped) one
 * token each, implicit line joining inside brackets and after '\'. -1 on an unterminated string
 * (message with the line). */
int ec_py_tokenize(const char *src, size_t len, ec_pytoken **out, size_t *n);
void ec_py_tokens_free(ec_pytoken *t, size_t n);

typedef enum {
    EC_AUDIT_GRAY = 0, /* cannot tell (e.g. model size unknown) */
    EC_AUDIT_GREEN,    /* informational */
    EC_AUDIT_YELLOW,
    EC_AUDIT_ORANGE,
    EC_AUDIT_RED
} ec_audit_severity;
const char *ec_audit_severity_name(ec_audit_severity s);
int ec_audit_severity_parse(const char *text, ec_audit_severity *out);

typedef struct {
    const char *id, *title, *fix;
    ec_audit_severity severity;
} ec_audit_rule;
const ec_audit_rule *ec_audit_rules(size_t *n);

typedef struct {
    const ec_audit_rule *rule;
    ec_audit_severity severity; /* may differ from the rule's default (e.g. gray) */
    char file[512];
    int line;
    char message[384];
    char impact[1024]; /* measured impact with its source rows, or why there is none */
} ec_audit_finding;

typedef struct {
    ec_audit_finding *v;
    size_t n, cap;
} ec_audit_findings;
void ec_audit_findings_free(ec_audit_findings *f);
/* Audits one file: Python source (by content: *.py) or requirements / pyproject. name is what
 * findings cite. a may be NULL (then impacts say no data was loaded). */
int ec_audit_source(const ec_advisor *a, const char *name, const char *text, size_t len,
                    int is_python, ec_audit_findings *f);
/* Audits a file or a folder (recursively: *.py, requirements*.txt, pyproject.toml). */
int ec_audit_path(const ec_advisor *a, const char *path, ec_audit_findings *f);
/* The measured change of energy (%) of precision vs fp16 for the stack, median over the
 * reference points that have both (same GPU, model, batch, source), into text with its rows. */
int ec_measured_delta(const ec_advisor *a, const char *stack, const char *precision,
                      double max_params_b, double min_params_b, double *median_pct, char *text,
                      size_t cap);
/* Writes findings as SARIF 2.1.0. */
int ec_audit_write_sarif(FILE *out, const ec_audit_findings *f);

/* ---- candidates: precision x batch x stack for one model and GPU (candidates.c) ---- */

typedef struct {
    ec_query q; /* q.precision and q.stack point into the fields below */
    char precision[16], stack[24];
    ec_answer a;
} ec_candidate;
/* Whether the advisor ranks precision p: every format the CUDA backend runs (the format table's
 * EC_QFORMAT_CUDA) but bf16, which no reference source (data/reference) measured. */
int ec_advise_ranks_precision(ec_precision p);
/* Answers every precision it ranks, in the format table's order, × batch × stack for base's
 * model, GPU and lengths, sorted by gross J/1k (unanswerable ones last). */
int ec_candidates(const ec_advisor *a, const ec_query *base, const char *const *stacks,
                  size_t nstacks, const int *batches, size_t nbatches, ec_candidate **out,
                  size_t *n);

/* ---- diagnosis of one configuration (diagnose.c) ---- */

typedef struct {
    char id[24];
    ec_audit_severity severity;
    char message[256], fix[192], impact[768];
} ec_trap;

typedef struct {
    ec_answer answer;      /* the configuration's figures (or the measured ones given) */
    double roofline_tok_s; /* memory-bandwidth bound at the GPU's peak, tok/s */
    double roofline_pct;   /* tok/s / roofline, % */
    double idle_share_pct; /* idle W × time / gross energy, % */
    ec_trap traps[8];
    size_t ntraps;
    ec_query best; /* the greenest alternative on the same GPU and model */
    char best_precision[16], best_stack[24];
    ec_answer best_answer;
    double best_saving_pct; /* gross J/1k saved vs this configuration, % (NaN: none better) */
} ec_diagnosis;
/* Diagnoses q. measured_tok_s / measured_j_gross (NaN: unknown) replace the answer's figures
 * when the user measured the configuration (a stored run, a meter output). */
int ec_diagnose(const ec_advisor *a, const ec_query *q, double measured_tok_s,
                double measured_j_gross, ec_diagnosis *out);

#ifdef __cplusplus
}
#endif
#endif
