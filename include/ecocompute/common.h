/* ecocompute/common.h — what every layer shares: error reporting, clocks, output formats.
 *
 * Errors: library functions return 0 on success and -1 on failure, after recording a one-line
 * message with ec_set_error(); callers read it with ec_last_error(). The message is per thread,
 * so the sampler thread and the caller never overwrite each other's errors. */
#ifndef ECOCOMPUTE_COMMON_H
#define ECOCOMPUTE_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define EC_PRINTF(fmt_idx, arg_idx) __attribute__((format(printf, fmt_idx, arg_idx)))
#else
#define EC_PRINTF(fmt_idx, arg_idx)
#endif

/* Records a one-line error message for the calling thread and returns -1. Arguments may include
 * ec_last_error() itself. */
int ec_set_error(const char *fmt, ...) EC_PRINTF(1, 2);
/* Puts context in front of the current message ("loading X: <cause>") and returns -1, so each
 * layer names what it was doing and the message keeps the file, the field and the cause. */
int ec_error_context(const char *fmt, ...) EC_PRINTF(1, 2);
/* The last message recorded on this thread ("" if none). */
const char *ec_last_error(void);

const char *ec_version(void);    /* "0.1.0" */
const char *ec_git_commit(void); /* short commit the binary was built from, or "unknown" */

/* Opens a file a user named for reading, refusing anything but a regular file (a FIFO, socket,
 * device or directory) without blocking on it. Returns a descriptor / stream, or -1 / NULL with
 * the error set ("PATH: is a FIFO, not a regular file"). */
int ec_open_regular(const char *path);
FILE *ec_fopen_regular(const char *path);
/* Whether `path` may be written as a `what` ("trace CSV", "export"): yes when it does not exist,
 * is empty, or starts with one of `signatures` (a previous output of the same kind, compared
 * without blanks; NULL-terminated). Otherwise -1 with the error set, unless force > 0 — never
 * for a database, a FIFO or a directory. force < 0: the command offers no --force. */
int ec_output_check(const char *path, const char *what, const char *const *signatures, int force);

/* SHA-256 of len bytes / of a file's content as 64 lowercase hex digits (+ NUL). */
void ec_sha256_hex(const void *data, size_t len, char hex[65]);
int ec_sha256_file(const char *path, char hex[65]);

/* Seconds on CLOCK_MONOTONIC (never jumps; the time base of every measurement). */
double ec_now_s(void);
/* Seconds since the Unix epoch (CLOCK_REALTIME), for timestamps stored with results. */
double ec_wall_s(void);
/* ISO-8601 UTC text of a Unix time, e.g. "2026-11-22T04:32:00Z"; buf needs 32 bytes. */
const char *ec_iso8601(double unix_s, char *buf, size_t len);
/* Sleeps for the given seconds, resuming after signals; returns early if *stop becomes nonzero. */
void ec_sleep_s(double seconds, const volatile int *stop);

/* ---- Output formats: every command that prints data takes --format table|json|csv. ---- */
typedef enum { EC_FORMAT_TABLE = 0, EC_FORMAT_JSON, EC_FORMAT_CSV } ec_format;
/* Parses "table", "json" or "csv"; returns -1 (with ec_last_error set) otherwise. */
int ec_format_parse(const char *text, ec_format *out);

/* A table of typed cells, rendered as an aligned text table, CSV (RFC 4180) or a JSON array of
 * objects. Column keys are the machine names used in CSV headers and JSON keys ("energy_j");
 * labels are what a person reads ("Energy (J)"). A numeric cell keeps its number for JSON. */
typedef struct ec_table ec_table;
ec_table *ec_table_new(void);
void ec_table_free(ec_table *t);
/* Adds a column; returns its index. */
int ec_table_column(ec_table *t, const char *key, const char *label);
/* Makes a column optional in text tables: a text table wider than the text width (see
 * ec_table_set_text_width) leaves out optional columns, the highest priority number first
 * (1 goes last), then shortens its widest text cells with an ellipsis; the columns left out
 * are named on stderr. 0 (the default) shows the column always. CSV and JSON keep every column. */
void ec_table_priority(ec_table *t, int col, int priority);
/* Lets a column's long text (a message, a note) continue on the next lines of its row instead
 * of being shortened when a text table is narrowed. */
void ec_table_wrap(ec_table *t, int col);
/* The width, in characters, that this process's text tables are fitted to; 0 (the default) for
 * no limit. The ecocompute CLI sets 120 unless --wide is given. */
void ec_table_set_text_width(int columns);
/* Starts a new row; cells of the new row start empty (null in JSON, empty in CSV, "-" in tables). */
void ec_table_row(ec_table *t);
/* Sets a cell of the current row to text. */
void ec_table_text(ec_table *t, int col, const char *fmt, ...) EC_PRINTF(3, 4);
/* Sets a cell to a number, printed with printf format fmt in table/CSV (e.g. "%.1f"). */
void ec_table_number(ec_table *t, int col, const char *fmt, double value);
size_t ec_table_rows(const ec_table *t);
/* Renders to out in the given format. */
void ec_table_print(const ec_table *t, ec_format fmt, FILE *out);

/* Writes text as a CSV field (quoted when needed). */
void ec_csv_field(FILE *out, const char *text);

#ifdef __cplusplus
}
#endif
#endif
