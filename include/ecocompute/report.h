/* ecocompute/report.h — the report layer: one self-contained HTML dashboard (or the same content
 * as Markdown) of a set of run records — overview, precisions, batch size, crossover, energy ×
 * accuracy, power traces, compare, runs. Reads records (results.h), stored traces (store.h) and
 * the analysis layer's statistics and fits; never the engine. docs/report.md shows the views. */
#ifndef ECOCOMPUTE_REPORT_H
#define ECOCOMPUTE_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "ecocompute/results.h"
#include "ecocompute/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The marker every report carries near its top (HTML: <meta name="generator" content="...">;
 * Markdown: a comment on the first line), by which a previous report is recognised and may be
 * written over. */
#define EC_REPORT_GENERATOR "ecocompute report"

typedef enum { EC_REPORT_HTML = 0, EC_REPORT_MARKDOWN } ec_report_format;

/* The stored power traces of the sessions a report shows. */
typedef struct {
    char session_id[64];
    ec_session_trace trace;
} ec_report_trace;
typedef struct {
    ec_report_trace *v; /* [n] */
    size_t n;
    char why_none[160]; /* when n = 0: why (no database, no trace stored, ...) */
} ec_report_traces;

typedef struct {
    const char *title;  /* NULL: "ecocompute report" */
    const char *input;  /* where the records came from ("results.db", "3 files") */
    const ec_report_traces *traces; /* NULL: none (the view says why) */
} ec_report_options;

/* Writes the report of r[0..n) to out. n may be 0 (an empty database): every view says why it is
 * empty. Returns -1 (ec_last_error) when out of memory or on a write error. */
int ec_report_write(FILE *out, ec_report_format fmt, const ec_run_record *r, size_t n,
                    const ec_report_options *o);

/* Loads the traces stored in the database at db_path for the sessions of r (at most max
 * sessions, the first by record order). A session without a trace is skipped. */
int ec_report_load_traces(const char *db_path, const ec_run_record *r, size_t n, size_t max,
                          ec_report_traces *out);
void ec_report_traces_free(ec_report_traces *t);

/* What a report starts with (the HTML head up to its generator marker; the Markdown comment),
 * NULL-terminated: ec_output_check's signatures, so only a previous report is written over. */
extern const char *const ec_report_signatures[];

#ifdef __cplusplus
}
#endif
#endif
