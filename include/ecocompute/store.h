/* ecocompute/store.h — the results database (SQLite) and the export/import file format.
 *
 * The database holds sessions (one sitting of `bench`: environment, provenance, idle baseline),
 * configurations (what a sweep measures, keyed for resume), runs (one measured generation each),
 * their prefill/decode phases, optional power traces, and GPU calibrations. docs/data-schema.md
 * describes the tables, the schema version and the migration policy, and the export columns.
 *
 * Writers commit each run in its own transaction (the run and its phases), so a run is either
 * wholly stored or absent, also after kill -9. The file is in WAL mode: readers (export,
 * analyze) work while a sweep writes. Opening a file that is not an ecocompute database, a
 * damaged one, or one written by a newer ecocompute fails with a one-line error and leaves the
 * file untouched. Functions return 0 or -1 (ec_last_error), as everywhere. */
#ifndef ECOCOMPUTE_STORE_H
#define ECOCOMPUTE_STORE_H

#include "ecocompute/common.h"
#include "ecocompute/calib.h"
#include "ecocompute/results.h"

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Schema version this build writes; older files are migrated forward on a writable open. */
#define EC_STORE_SCHEMA_VERSION 6

typedef struct ec_store ec_store;

/* Opens the database at path. !readonly: creates it (and its directory) when absent and
 * migrates an older schema forward. readonly: the file must exist and be current. */
int ec_store_open(ec_store **out, const char *path, int readonly);
void ec_store_close(ec_store *s); /* NULL is fine */
/* $XDG_DATA_HOME/ecocompute/results.db, else $HOME/.local/share/ecocompute/results.db
 * (static storage; "results.db" in the working directory when neither variable is set). */
const char *ec_store_default_path(void);
int ec_store_schema_version(ec_store *s); /* the file's schema version after open */

/* ---- runs as flat records (results.h) ---- */

/* Which runs to load; NULL text fields and batch 0 match anything. gpu matches the GPU name or
 * its UUID; session a session id. */
typedef struct {
    const char *model, *precision, *kernels, *device, *gpu, *session;
    int batch; /* 0 = any */
} ec_run_filter;
/* Loads the runs that match f (NULL = all), ordered by run id: every run of every imported
 * source, and of each measured configuration the runs of its final attempt (runs of attempts
 * superseded by a quality-gate re-run stay in the database but are not loaded). *out is one
 * malloc'd array (free() it; NULL when n = 0). */
int ec_store_load_runs(ec_store *s, const ec_run_filter *f, ec_run_record **out, size_t *n);
/* Stores records from another database or source (import), in one transaction. A record equal
 * to one already stored (same content, run_id and gate aside) is skipped, so importing a file
 * twice adds nothing. Each record keeps its source, licence and energy definition. */
int ec_store_insert_records(ec_store *s, const ec_run_record *r, size_t n);
/* The same, counting the records that were new in *inserted. */
int ec_store_insert_records_counted(ec_store *s, const ec_run_record *r, size_t n,
                                    size_t *inserted);

/* ---- sessions, configurations and measured runs (the bench protocol's writes) ---- */

typedef struct {
    char id[64];          /* filled by ec_store_begin_session: "<UTC time>-<random hex>" */
    char started_utc[32]; /* filled too */
    /* environment: the first GPU the meter measures ("" / NaN without one) */
    char gpu_name[96], gpu_uuid[96], gpu_arch[32], driver[32], cuda[16];
    double power_limit_w; /* W, enforced */
    int gpu_count;
    char host_cpu[96], hostname[64];
    char ecocompute_version[16], git_commit[24];
    const char *command_line; /* the whole command line, shell-quoted */
    const char *spec_json;    /* the sweep (bench.h ec_bench_spec as JSON): what --resume runs */
    double idle_s;            /* idle baseline length, s (0: none) */
    double idle_power_w;      /* GPU idle power summed over GPUs, W (NaN: none) */
    char idle_method[16];     /* energy method of the baseline window */
    double interval_s;        /* meter sampler period, s */
    const char *trace_path;   /* meter trace CSV, or NULL */
} ec_session;
/* Inserts the session (filling id and started_utc). */
int ec_store_begin_session(ec_store *s, ec_session *sess);
/* Records the session's end time. */
int ec_store_end_session(ec_store *s, const char *session_id);
/* The sweep spec (JSON) of the most recent session, into a malloc'd string; *out = NULL when
 * the database has no session. */
int ec_store_last_spec(ec_store *s, char **out);

/* What identifies a configuration across resumes: re-running the same sweep finds it again. */
typedef struct {
    char tag[64]; /* --tag: lets the same sweep be measured again as a separate set */
    char model[64];
    double params_b; /* billions (not part of the identity) */
    char precision[16], kernels[16], device[EC_DEVICE_NAME_LEN], gpu_uuid[96];
    int batch, prompt_len, gen_len;
    char protocol[256]; /* canonical protocol parameters ("runs=10 warmup=3 ...") */
    int runs;           /* measured runs per attempt */
    int tp;             /* tensor-parallel ranks (part of the identity) */
    char interconnect[32]; /* between its GPUs (ec_meter_interconnect; not part of the identity) */
} ec_config_key;
typedef struct {
    long id;
    int attempt;         /* current attempt (0 first; +1 per quality-gate re-run) */
    ec_gate_status gate; /* pending until the configuration is finished */
    int committed;       /* measured runs stored for the current attempt */
    double cv_tok_pct, cv_power_pct; /* of the last evaluated attempt (NaN before) */
} ec_config_state;
/* Finds the configuration of key k, creating it when new; fills its state. */
int ec_store_config(ec_store *s, const ec_config_key *k, ec_config_state *st);
/* Claims configuration config_id for this process, so that sweeps sharing a database split the
 * work and never measure a configuration twice. Returns 1 when the claim is this process's (new
 * or renewed), 0 when another live process holds it (*holder: "pid P on HOST"), -1 on error. A
 * claim of a process that is gone (same host, no such pid) or silent for
 * EC_STORE_CLAIM_STALE_S (another host) is taken over. */
#define EC_STORE_CLAIM_STALE_S 1800.0
int ec_store_claim_config(ec_store *s, long config_id, char *holder, size_t holder_len);
/* Gives a claim of this process back (no-op when it holds none). */
int ec_store_release_config(ec_store *s, long config_id);
/* Stores one measured run (r with its two phases) of attempt `attempt` of configuration
 * config_id, measured in session r->session_id, in one transaction; *run_id may be NULL. Fails
 * when another process holds the configuration's claim; renews this process's claim. */
int ec_store_insert_run(ec_store *s, long config_id, int attempt, const ec_run_record *r,
                        long *run_id);
/* The runs of one attempt of a configuration (free() *out). */
int ec_store_load_attempt(ec_store *s, long config_id, int attempt, ec_run_record **out,
                          size_t *n);
/* Ends an attempt: with gate pass or fail the configuration is finished; with gate pending
 * it moves to attempt + 1 (a quality-gate re-run). cv_* are the attempt's CVs (%). Only
 * applies while the configuration is still at `attempt` (a repeated call is harmless). */
int ec_store_finish_attempt(ec_store *s, long config_id, int attempt, ec_gate_status gate,
                            double cv_tok_pct, double cv_power_pct);
/* Records how long the thermal stabilization before the configuration's current attempt
 * waited (s) and whether temperature and power had settled (auto) or the wait was fixed. */
int ec_store_config_stabilized(ec_store *s, long config_id, double waited_s, int settled);

/* Loads the meter's trace CSV (docs/measurement.md "Trace CSV") into the traces table for the
 * session, in one transaction. */
int ec_store_import_trace(ec_store *s, const char *session_id, const char *csv_path);

/* One sampler tick of a stored trace: time since the meter opened (s) and instant power (W). */
typedef struct {
    double t_s, power_w;
} ec_trace_point;
typedef struct {
    char started_utc[32];  /* the session's start, ISO 8601 (the meter opened about then) */
    double idle_power_w;   /* the session's idle baseline, W (NaN: none) */
    ec_trace_point *points; /* [n], by time; the session's first GPU; lost ticks left out */
    size_t n;
} ec_session_trace;
/* The stored power trace of a session (n = 0 when it has none). Free with
 * ec_session_trace_free. */
int ec_store_load_trace(ec_store *s, const char *session_id, ec_session_trace *out);
void ec_session_trace_free(ec_session_trace *t);

/* ---- GPU calibrations (`ecocompute calibrate`, calib.h) ---- */
/* Stores the identity, idle power and the three loads' rate and gross average power, plus the
 * read sweep's net pJ/byte (the columns of docs/data-schema.md). */
int ec_store_insert_calibration(ec_store *s, const ec_calibration *c);
/* The most recent calibration of the GPU with that UUID; -1 (ec_last_error) when none. */
int ec_store_latest_calibration(ec_store *s, const char *gpu_uuid, ec_calibration *out);

/* ---- export files: the documented column set (docs/data-schema.md) ---- */

typedef enum {
    EC_COL_TEXT = 0, /* char[] field */
    EC_COL_REAL,     /* double; NaN = empty / null */
    EC_COL_INT,      /* int; -1 = unknown */
    EC_COL_LONG,     /* long; -1 = unknown */
    EC_COL_HEX,      /* unsigned long long, written "0x..." */
    EC_COL_ENERGY_DEF, /* ec_energy_definition, by name */
    EC_COL_GATE      /* ec_gate_status, by name */
} ec_column_type;
typedef struct {
    const char *name; /* CSV header / JSON key */
    ec_column_type type;
    const char *unit; /* "J", "s", "W", ... or "" */
    size_t offset;    /* in ec_run_record */
    size_t size;      /* bytes of the text field (TEXT only) */
    const char *description;
} ec_column;
/* The export columns, in file order; *n gets their number. */
const ec_column *ec_run_columns(size_t *n);

/* Whether every number of r is in its column's range: finite; energies, times and counts not
 * negative; powers, throughput and gross J/1k above zero; batch and gen_len at least 1 (net
 * energies may be negative; unknown values always pass). Returns 0, or -1 with *why naming the
 * column, its value and the rule ("tok_s = inf: must be finite"). */
int ec_run_record_check(const ec_run_record *r, char *why, size_t len);

/* A record with every number NaN, every count -1, every text "" (the "unknown" values). */
void ec_run_record_init(ec_run_record *r);
/* The files `export` writes. The first three are read back by ec_dataset_read; md and table are
 * for people; sql is for sqlite3. */
typedef enum {
    EC_EXPORT_CSV = 0, /* header + one row per run */
    EC_EXPORT_JSON,    /* {"ecocompute_export": "runs", "schema_version": N, "columns": [...],
                          "rows": [...]} */
    EC_EXPORT_JSONL,   /* one JSON object per run and line, every column a key */
    EC_EXPORT_MD,      /* a Markdown table of the main columns */
    EC_EXPORT_SQL,     /* CREATE TABLE IF NOT EXISTS ecocompute_runs + one INSERT per run, in one
                          transaction: `sqlite3 FILE.db < export.sql`, appendable */
    EC_EXPORT_TABLE    /* a terminal table of the main columns */
} ec_export_format;
/* "csv", "json", "jsonl", "md", "sql" or "table"; -1 for anything else. */
int ec_export_format_parse(const char *text, ec_export_format *out);
/* Writes records in one of those formats. */
int ec_dataset_write(FILE *out, ec_export_format fmt, const ec_run_record *r, size_t n);
/* What every file of that format starts with (blanks aside), so that a later export may replace
 * it (ec_output_check); NULL-terminated. */
const char *const *ec_export_signatures(void);

/* `export --dataset DIR`: a directory ready to publish, runs.jsonl (EC_EXPORT_JSONL) and
 * README.md, a dataset card (each column's unit and meaning, the energy definitions and the
 * measurement protocol, the licence and provenance of every row). DIR is created when absent;
 * an existing DIR must be empty or an earlier dataset (its README.md is a card of ours); only
 * the two files are written, each complete or not at all. licence (an SPDX id, may be NULL)
 * becomes the licence of own measurements (source "ecocompute"), whose licence is empty in the
 * database. */
int ec_dataset_publish(const char *dir, const ec_run_record *r, size_t n, const char *licence);
/* The check ec_dataset_publish makes first, alone: 0 when DIR may be written. */
int ec_dataset_dir_check(const char *dir);
/* Reads an ecocompute export (CSV or JSON, detected from the content) or a results database (its
 * stored runs, as ec_store_load_runs) into records (free() *out); any other file goes to the
 * readers of the seeds' published files. */
int ec_dataset_read(const char *path, ec_run_record **out, size_t *n);
/* The same from memory; name is used in messages. Exports only (no foreign formats). */
int ec_dataset_parse(const char *name, const char *data, size_t len, ec_run_record **out,
                     size_t *n);

#ifdef __cplusplus
}
#endif
#endif
