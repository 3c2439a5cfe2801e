/* ecocompute/bench.h — the measurement protocol over a sweep of configurations:
 * in-session idle baseline, thermal stabilization between configurations, warm-up runs, n
 * measured runs of fixed output length with prefill and decode metered separately, quality
 * gates (CV of decode throughput and of GPU power) with bounded re-runs, and resume: every
 * measured run is committed to the store as soon as it ends, and a sweep started again finds
 * its configurations and continues where it stopped. It knows nothing of the command line;
 * `ecocompute bench` (src/cli/cmd_bench.c) drives it. docs/measurement.md ("bench") describes
 * the protocol in prose. */
#ifndef ECOCOMPUTE_BENCH_H
#define ECOCOMPUTE_BENCH_H

#include "ecocompute/engine.h"
#include "ecocompute/meter.h"
#include "ecocompute/results.h"
#include "ecocompute/store.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EC_BENCH_MAX_LIST 32 /* values per swept dimension */
#define EC_BENCH_MAX_TP 8    /* tensor-parallel ranks: the GPUs of one host */

/* The seeds' protocol defaults, but for the runs: the seeds measured 10 runs of one
 * plain window each, whose run-to-run CV of J/1k tokens reached 4.7 % on an H200; each run's
 * windows now last >= 5 s (--min-window), which brings that CV to 0.02-0.5 % (docs/results.md) at
 * ~10 s a run, so 5 runs bound the mean tighter than 10 did (95 % CI ±0.6 % at CV 0.5 %) and keep
 * a sweep within ~2x its former wall time. --runs 10 gives the seeds' count. */
#define EC_BENCH_DEFAULT_WARMUP 3
#define EC_BENCH_DEFAULT_RUNS 5
#define EC_BENCH_DEFAULT_PROMPT_LEN 64
#define EC_BENCH_DEFAULT_GEN 256
#define EC_BENCH_DEFAULT_IDLE_S 10.0
#define EC_BENCH_DEFAULT_STABILIZE_S 30.0
#define EC_BENCH_DEFAULT_STABILIZE_MAX_S 300.0
#define EC_BENCH_DEFAULT_CV_TOK_PCT 2.0
#define EC_BENCH_DEFAULT_CV_POWER_PCT 5.0
#define EC_BENCH_DEFAULT_RERUNS 3
/* --min-window auto: EC_MIN_WINDOW_PERIODS counter periods (meter.h). */
#define EC_BENCH_MIN_WINDOW_AUTO (-1.0)
/* Gate: a run's energy may be uncertain by at most this (1 standard uncertainty), %. */
#define EC_BENCH_DEFAULT_MAX_UNCERT_PCT 1.0

typedef struct {
    /* the sweep: every combination of these (model outermost, then precision, kernels,
     * tensor-parallel ranks, batch, prompt length; gen innermost) */
    char models[EC_BENCH_MAX_LIST][256]; /* catalog names, HF directories, llama2.c files */
    int nmodels;
    ec_precision precisions[EC_BENCH_MAX_LIST];
    int nprecisions;
    ec_kernels kernels[EC_BENCH_MAX_LIST];
    int nkernels;
    int batches[EC_BENCH_MAX_LIST];
    int nbatches;
    int prompt_lens[EC_BENCH_MAX_LIST]; /* synthetic prompt tokens per sequence */
    int nprompt_lens;
    int gens[EC_BENCH_MAX_LIST]; /* new tokens per sequence, never stopping early */
    int ngens;
    int tps[EC_BENCH_MAX_LIST]; /* tensor-parallel ranks (ec_device_list with the device) */
    int ntps;
    char device[EC_DEVICE_NAME_LEN]; /* "cpu", "cuda", "cuda:N", "cuda:0,1" */
    /* the protocol */
    int warmup, runs;      /* warm-up runs (not stored), measured runs per attempt */
    double cv_tok_pct;     /* gate: CV of decode tok/s below this, % */
    double cv_power_pct;   /* gate: CV of average GPU power below this, % */
    int max_reruns;        /* attempts after the first when a gate fails */
    double min_window_s;   /* each measured phase's window at least this long, s (repeating the
                              phase); EC_BENCH_MIN_WINDOW_AUTO: EC_MIN_WINDOW_PERIODS
                              counter periods; 0: one phase per plain window, as measured
                              before (edges read at random moments) */
    double max_uncert_pct; /* gate: energy uncertainty of a run below this, % of its energy */
    double idle_s;         /* idle baseline per session, s (0: none, net figures NaN) */
    double stabilize_s;    /* fixed wait between configurations, s */
    int stabilize_auto;    /* wait until temperature and power settle instead ... */
    double stabilize_max_s; /* ... but at most this long, s */
    /* the engine */
    uint64_t seed;         /* synthetic weights and prompts */
    int threads;           /* CPU backend threads, 0 = all cores */
    float int8_threshold;  /* int8-mixed outlier threshold */
    int outliers;          /* synthetic weights: injected outlier hidden dims, -1 = the catalog's */
    float outlier_mag;     /* ... and their magnitude, 0 = the catalog's */
    char tag[64];          /* names a separate measurement of the same sweep ("" = none) */
    /* a part of the sweep (a cluster job array): the configurations whose 0-based position k in
     * the sweep's canonical order has k mod shard_count == shard_index - 1; 0/0 = all */
    int shard_index, shard_count; /* 1..count, count >= 1 */
} ec_bench_spec;
void ec_bench_spec_default(ec_bench_spec *s); /* one value per dimension: fp16, fused, tp 1, b=1 */
/* Checks that every tp of the sweep names devices with its device (ec_device_list): a GPU list
 * fixes the world size. Returns 0 or -1 (ec_last_error). */
int ec_bench_spec_check_devices(const ec_bench_spec *s);
/* The spec as JSON (stored with each session so that `bench --resume` can run it again);
 * malloc'd. Keys are the field names above; precisions and kernels by name. */
char *ec_bench_spec_to_json(const ec_bench_spec *s);
/* Reads such JSON over the defaults: "models" is required, any other key may be left out. */
int ec_bench_spec_from_json(const char *json, ec_bench_spec *s);
/* A sweep file (`bench --config`, bench/sweeps/NAME.json): such JSON with only the keys of
 * ec_bench_spec_to_json and a free-text "description" (a misspelt key is an error, not a
 * default silently measured); -1 with ec_last_error() naming the key. */
int ec_bench_spec_from_config(const char *json, ec_bench_spec *s);
/* The UUIDs ("GPU-...", as the meter selects GPUs) of the GPUs `device` with `tp` ranks names
 * (ec_device_list), in rank order. Returns their count, or -1 (ec_last_error) for the CPU, a
 * malformed device or a build without CUDA. */
int ec_bench_device_gpus(const char *device, int tp, char (*uuids)[96], int cap);
/* Reads "I/N" (1 <= I <= N <= 100000) into the spec's shard. Returns 0 or -1 (ec_last_error). */
int ec_bench_spec_parse_shard(const char *text, ec_bench_spec *s);
/* 1 when the configuration at 0-based canonical position k belongs to the spec's shard. The shard
 * is not part of a configuration's identity: the shards of a sweep store exactly the keys the
 * whole sweep would, so merged shard databases equal the unsharded sweep. */
int ec_bench_in_shard(const ec_bench_spec *s, int k);
/* The protocol parameters that identify a configuration besides its own values. */
void ec_bench_protocol_key(const ec_bench_spec *s, char *out, size_t len);

/* One point of the sweep. */
typedef struct {
    const char *model;
    ec_precision precision;
    ec_kernels kernels;
    int tp; /* tensor-parallel ranks: the first tp devices of the spec's device */
    int batch, prompt_len, gen;
} ec_bench_config;

/* How models and backends are made; NULL in ec_bench_env means ec_model_open and
 * ec_backend_create + load with the spec's options. */
typedef struct {
    int (*open_model)(void *ctx, const ec_bench_spec *s, const char *name, ec_model **out);
    /* Loads m in c's precision and kernels for up to max_batch sequences of max_seq positions. */
    int (*open_backend)(void *ctx, const ec_bench_spec *s, const ec_model *m,
                        const ec_bench_config *c, int max_batch, int max_seq, ec_backend **out);
    void *ctx;
} ec_bench_factory;

typedef enum {
    EC_BENCH_STAGE_LOAD = 0,  /* loading a model / backend */
    EC_BENCH_STAGE_IDLE,      /* idle baseline */
    EC_BENCH_STAGE_STABILIZE, /* waiting between configurations */
    EC_BENCH_STAGE_WARMUP,    /* warm-up run `run` of `runs` */
    EC_BENCH_STAGE_RUN,       /* measured run `run` of `runs` finished and committed */
    EC_BENCH_STAGE_GATE,      /* attempt evaluated; note says the verdict */
    EC_BENCH_STAGE_DONE,      /* configuration already finished (resume) */
    EC_BENCH_STAGE_HELD       /* another process is measuring it; note says which */
} ec_bench_stage;
typedef struct {
    ec_bench_stage stage;
    int config, configs; /* 1-based configuration index of N in the sweep */
    const ec_bench_config *c;
    int run, runs;       /* 1-based run of n (warm-up or measured) */
    int attempt;         /* 0 first, then re-runs */
    double eta_s;        /* estimated time left for the sweep, s (NaN until known) */
    const ec_run_record *record; /* RUN: the committed run */
    char note[256];      /* GATE: verdict; STABILIZE: outcome */
} ec_bench_progress;

typedef struct {
    ec_meter *meter;   /* started (ec_meter_start) */
    ec_store *store;   /* open for writing */
    const ec_bench_factory *factory; /* NULL: the default */
    void (*on_progress)(void *ctx, const ec_bench_progress *p); /* may be NULL */
    void *ctx;
    const volatile int *stop;  /* nonzero: stop after the current run (may be NULL) */
    const char *command_line;  /* provenance */
    const char *trace_path;    /* the meter's trace file, recorded with the session, or NULL */
} ec_bench_env;

typedef struct {
    int configs;          /* in the sweep */
    int finished;         /* finished (gate pass, fail or unknown), including earlier sessions */
    int already_done;     /* of those, finished before this call */
    int gate_failures;    /* finished with gate fail */
    int measured_runs;    /* runs committed by this call */
    int held_elsewhere;   /* left to other processes measuring them in the same database */
    int interrupted;      /* *stop ended it early */
    char session_id[64];  /* the session this call measured in ("" when nothing was left) */
} ec_bench_outcome;

/* Runs the sweep. Returns 0 (also when interrupted: see out->interrupted), or -1 on a failure
 * (model, backend, meter, store), with every run measured until then committed. */
int ec_bench_run(const ec_bench_spec *spec, const ec_bench_env *env, ec_bench_outcome *out);

/* The runs of the sweep's configurations measured on the meter's GPUs (each configuration's
 * final attempt), in sweep order; free() *out. */
int ec_bench_load_sweep(const ec_bench_spec *spec, ec_meter *m, ec_store *st, ec_run_record **out,
                        size_t *n);

/* ---- summaries: one row per configuration ---- */
typedef struct {
    int n;
    double mean, sd, cv_pct; /* sd with n - 1; NaN when n < 2 (cv also when mean is 0) */
} ec_stat;
typedef struct {
    char source[128], model[64], precision[16], kernels[16], device[EC_DEVICE_NAME_LEN];
    char gpu_name[96], gpu_uuid[96];
    int tp, batch, prompt_len, gen_len;
    ec_gate_status gate;
    ec_energy_definition energy_definition; /* of source_j_per_1k */
    ec_stat tok_s, j_per_1k_gross, j_per_1k_net, source_j_per_1k, avg_power_w, total_time_s;
    /* relative to fp16 of the same source, model, kernels, device, tp, GPU, batch, prompt and
     * generation length, %: mean J/1k gross, net, and decode tok/s (NaN without an fp16 row) */
    double delta_gross_pct, delta_net_pct, delta_tok_pct;
} ec_bench_summary;
void ec_stat_of(const double *x, int n, ec_stat *out); /* NaN values are left out */
/* Groups runs by configuration, in order of first appearance; free() *out. */
int ec_bench_summarize(const ec_run_record *r, size_t n, ec_bench_summary **out, size_t *nout);

#ifdef __cplusplus
}
#endif
#endif
