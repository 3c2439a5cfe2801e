/* csv.h — a small RFC 4180 CSV reader (internal): whole-buffer parsing into rows of fields.
 *
 * Accepts quoted fields with doubled quotes and embedded commas/newlines, CRLF or LF line ends,
 * a UTF-8 byte-order mark, and a missing final newline. Rejects (with a message naming the line)
 * what is ambiguous: a quote inside an unquoted field, text after a closing quote, an unterminated
 * quoted field, and NUL bytes. Fields are NUL-terminated copies, so callers can use string
 * functions on them. Limits keep hostile input from exhausting memory. */
#ifndef ECOCOMPUTE_CSV_H
#define ECOCOMPUTE_CSV_H

#include <stddef.h>

typedef struct {
    char **fields; /* [nfields] NUL-terminated */
    size_t nfields;
} ec_csv_row;

typedef struct {
    ec_csv_row *rows; /* [nrows]; the header, when there is one, is rows[0] */
    size_t nrows;
} ec_csv;

#define EC_CSV_MAX_FIELDS 4096  /* per row */
#define EC_CSV_MAX_ROWS 1000000

/* Parses len bytes of text; name is used in error messages. Returns 0, or -1 with ec_last_error()
 * "NAME:LINE: what is wrong". Blank lines are skipped. */
int ec_csv_parse(const char *text, size_t len, const char *name, ec_csv *out);
/* Reads and parses a file. */
int ec_csv_read_file(const char *path, ec_csv *out);
void ec_csv_free(ec_csv *c);
/* Index of the column whose header (rows[0]) equals name, or -1. */
int ec_csv_column(const ec_csv *c, const char *name);

#endif
