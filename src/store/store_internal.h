/* store_internal.h — the store's schema migrations, shared by store.c and the migration test,
 * and what the store's files share about column tables (ec_column): binding and reading a
 * column in SQLite, a record's content fingerprint, a column's value as export text and back. */
#ifndef EC_STORE_INTERNAL_H
#define EC_STORE_INTERNAL_H

#include "ecocompute/store.h"

#include <cjson/cJSON.h>
#include <sqlite3.h>

/* PRAGMA application_id of an ecocompute database: "ECOC". A file whose id is anything else
 * (0 with tables present included) is foreign and never written to. */
#define EC_STORE_APPLICATION_ID 0x45434F43

/* ec_store_migrations[v - 1] turns a version v-1 database into version v (v = 1 creates it).
 * Each runs in one transaction together with the version bump; released migrations are never
 * edited, only appended. */
extern const char *const ec_store_migrations[];

/* The open database's SQLite handle and file path (for the store's other files). */
sqlite3 *ec_store_sqlite(ec_store *s);
const char *ec_store_file(ec_store *s);

/* Column c of the record at rec (any record type the column table describes): bound as
 * statement parameter idx (unknown values as NULL), or read from result column idx. */
void ec_store_bind_column(sqlite3_stmt *st, int idx, const ec_column *c, const void *rec);
void ec_store_read_column(sqlite3_stmt *st, int idx, const ec_column *c, void *rec);
/* FNV-1a over the record's export text, the columns named in skip (NULL-terminated) aside: the
 * content identity that makes a re-import skip rows already stored. out: 16 hex digits. */
void ec_store_fingerprint(const ec_column *c, size_t nc, const void *rec, const char *const *skip,
                          char out[17]);

/* Column c of rec as export text (shortest exact digits for reals); 0 when the value is
 * unknown (an empty CSV cell, JSON null). */
int ec_column_text(const ec_column *c, const void *rec, char *buf, size_t len);
/* Sets column c of rec from export text ("" = unknown). name and row go into the message. */
int ec_column_set(const char *name, size_t row, const ec_column *c, void *rec, const char *text);
/* Sets column c of rec from a JSON value of an export row (null = unknown). */
int ec_column_set_json(const char *name, size_t row, const ec_column *c, void *rec,
                       const cJSON *v);
/* An export of n records of `size` bytes at recs described by columns c [nc]: CSV (a header
 * row, CRLF lines) or a JSON document {EXPORT_KEY: kind, schema_version, columns, rows}. */
void ec_columns_write_csv(FILE *out, const ec_column *c, size_t nc, const void *recs,
                          size_t size, size_t n);
int ec_columns_write_json(FILE *out, const char *kind, const ec_column *c, size_t nc,
                          const void *recs, size_t size, size_t n);
/* The JSON value of column c of rec in an export (null, exact number, or string). */
cJSON *ec_column_json(const ec_column *c, const void *rec);

#endif
