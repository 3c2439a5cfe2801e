/* dataset.c — export files: writing runs as CSV/JSON (the column set of columns.c) and reading
 * them back (CSV, JSON and JSONL), losslessly (numbers are written with the fewest digits that
 * read back to the same double). A results database given as a file is read as its stored runs
 * (merging shard databases); files that are neither go to the readers of the seeds' published
 * files. The other formats are written by export_formats.c. */
#include "ecocompute/store.h"
#include "store/export_internal.h"
#include "store/seed_import.h"
#include "store/store_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT_KEY "ecocompute_export"
/* Largest export we read into memory at once (a million runs is ~500 MB of CSV). */
#define MAX_FILE_BYTES (1024L * 1024 * 1024)

/* Shortest "%.Ng" that reads back as exactly v. */
static void fmt_real(char *buf, size_t len, double v)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) return;
    }
}

int ec_column_text(const ec_column *c, const void *r, char *buf, size_t len)
{
    const char *p = (const char *)r + c->offset;
    switch (c->type) {
    case EC_COL_TEXT: snprintf(buf, len, "%s", p); return 1;
    case EC_COL_REAL: {
        double v = *(const double *)(const void *)p;
        if (!isfinite(v)) return 0;
        fmt_real(buf, len, v);
        return 1;
    }
    case EC_COL_INT: snprintf(buf, len, "%d", *(const int *)(const void *)p); return 1;
    case EC_COL_LONG: snprintf(buf, len, "%ld", *(const long *)(const void *)p); return 1;
    case EC_COL_HEX:
        snprintf(buf, len, "0x%llx", *(const unsigned long long *)(const void *)p);
        return 1;
    case EC_COL_ENERGY_DEF:
        snprintf(buf, len, "%s",
                 ec_energy_definition_name(*(const ec_energy_definition *)(const void *)p));
        return 1;
    case EC_COL_GATE:
        snprintf(buf, len, "%s", ec_gate_status_name(*(const ec_gate_status *)(const void *)p));
        return 1;
    }
    return 0;
}

void ec_columns_write_csv(FILE *out, const ec_column *c, size_t nc, const void *recs,
                          size_t size, size_t n)
{
    for (size_t j = 0; j < nc; j++)
        fprintf(out, "%s%s", j ? "," : "", c[j].name);
    fputs("\r\n", out);
    char buf[256];
    for (size_t i = 0; i < n; i++) {
        const char *rec = (const char *)recs + i * size;
        for (size_t j = 0; j < nc; j++) {
            if (j) fputc(',', out);
            if (ec_column_text(&c[j], rec, buf, sizeof buf)) ec_csv_field(out, buf);
        }
        fputs("\r\n", out);
    }
}

static void write_csv(FILE *out, const ec_run_record *r, size_t n)
{
    size_t nc;
    const ec_column *c = ec_run_columns(&nc);
    ec_columns_write_csv(out, c, nc, r, sizeof *r, n);
}

cJSON *ec_column_json(const ec_column *c, const void *rec)
{
    char buf[256];
    const char *p = (const char *)rec + c->offset;
    if (!ec_column_text(c, rec, buf, sizeof buf)) return cJSON_CreateNull();
    if (c->type == EC_COL_REAL) return cJSON_CreateRaw(buf); /* shortest exact, not %.15g */
    if (c->type == EC_COL_INT) return cJSON_CreateNumber(*(const int *)(const void *)p);
    if (c->type == EC_COL_LONG) return cJSON_CreateNumber((double)*(const long *)(const void *)p);
    return cJSON_CreateString(buf);
}

cJSON *ec_export_row_json(const ec_run_record *r)
{
    size_t nc;
    const ec_column *c = ec_run_columns(&nc);
    cJSON *row = cJSON_CreateObject();
    for (size_t j = 0; j < nc; j++)
        cJSON_AddItemToObject(row, c[j].name, ec_column_json(&c[j], r));
    return row;
}

int ec_columns_write_json(FILE *out, const char *kind, const ec_column *c, size_t nc,
                          const void *recs, size_t size, size_t n)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, EXPORT_KEY, kind);
    cJSON_AddNumberToObject(o, "schema_version", EC_STORE_SCHEMA_VERSION);
    cJSON *cols = cJSON_AddArrayToObject(o, "columns");
    for (size_t j = 0; j < nc; j++)
        cJSON_AddItemToArray(cols, cJSON_CreateString(c[j].name));
    cJSON *rows = cJSON_AddArrayToObject(o, "rows");
    for (size_t i = 0; i < n; i++) {
        const char *rec = (const char *)recs + i * size;
        cJSON *row = cJSON_CreateObject();
        for (size_t j = 0; j < nc; j++)
            cJSON_AddItemToObject(row, c[j].name, ec_column_json(&c[j], rec));
        cJSON_AddItemToArray(rows, row);
    }
    char *text = cJSON_Print(o);
    cJSON_Delete(o);
    if (!text) return ec_set_error("out of memory writing JSON");
    fputs(text, out);
    fputc('\n', out);
    free(text);
    return 0;
}

static int write_json(FILE *out, const ec_run_record *r, size_t n)
{
    size_t nc;
    const ec_column *c = ec_run_columns(&nc);
    return ec_columns_write_json(out, "runs", c, nc, r, sizeof *r, n);
}

static void write_table(FILE *out, const ec_run_record *r, size_t n)
{
    ec_table *t = ec_table_new();
    int c_model = ec_table_column(t, "model", "Model");
    int c_prec = ec_table_column(t, "precision", "Precision");
    int c_kern = ec_table_column(t, "kernels", "Kernels");
    int c_dev = ec_table_column(t, "device", "Device");
    int c_tp = ec_table_column(t, "tp", "TP");
    int c_batch = ec_table_column(t, "batch", "Batch (seq)");
    int c_gen = ec_table_column(t, "gen_len", "Gen (tok)");
    int c_run = ec_table_column(t, "run_index", "Run");
    int c_gate = ec_table_column(t, "gate", "Gate");
    int c_tok = ec_table_column(t, "tok_s", "Decode (tok/s)");
    int c_gross = ec_table_column(t, "j_per_1k_gross", "J/1k tok gross");
    int c_net = ec_table_column(t, "j_per_1k_net", "J/1k tok net");
    int c_src = ec_table_column(t, "energy_j_per_1k", "Source J/1k tok");
    int c_def = ec_table_column(t, "energy_definition", "Source energy");
    int c_pow = ec_table_column(t, "avg_power_w", "Avg power (W)");
    int c_from = ec_table_column(t, "source", "Source");
    /* A narrow table keeps each run's configuration and figures; provenance goes first. */
    ec_table_priority(t, c_from, 6);
    ec_table_priority(t, c_def, 5);
    ec_table_priority(t, c_src, 4);
    ec_table_priority(t, c_kern, 3);
    ec_table_priority(t, c_pow, 2);
    ec_table_priority(t, c_dev, 1);
    ec_table_priority(t, c_tp, 1);
    for (size_t i = 0; i < n; i++) {
        const ec_run_record *x = &r[i];
        ec_table_row(t);
        ec_table_text(t, c_model, "%s", x->model);
        ec_table_text(t, c_prec, "%s", x->precision);
        ec_table_text(t, c_kern, "%s", x->kernels);
        ec_table_text(t, c_dev, "%s", x->device);
        ec_table_number(t, c_tp, "%.0f", x->tp);
        ec_table_number(t, c_batch, "%.0f", x->batch);
        ec_table_number(t, c_gen, "%.0f", x->gen_len);
        ec_table_number(t, c_run, "%.0f", x->run_index);
        ec_table_text(t, c_gate, "%s", ec_gate_status_name(x->gate));
        ec_table_number(t, c_tok, "%.2f", x->tok_s);
        ec_table_number(t, c_gross, "%.2f", x->j_per_1k_gross);
        ec_table_number(t, c_net, "%.2f", x->j_per_1k_net);
        ec_table_number(t, c_src, "%.2f", x->energy_j_per_1k);
        ec_table_text(t, c_def, "%s", ec_energy_definition_name(x->energy_definition));
        ec_table_number(t, c_pow, "%.1f", x->avg_power_w);
        ec_table_text(t, c_from, "%s", x->source);
    }
    ec_table_print(t, EC_FORMAT_TABLE, out);
    ec_table_free(t);
}

int ec_dataset_write(FILE *out, ec_export_format fmt, const ec_run_record *r, size_t n)
{
    int rc = 0;
    switch (fmt) {
    case EC_EXPORT_CSV: write_csv(out, r, n); break;
    case EC_EXPORT_JSON: rc = write_json(out, r, n); break;
    case EC_EXPORT_TABLE: write_table(out, r, n); break;
    case EC_EXPORT_JSONL:
    case EC_EXPORT_MD:
    case EC_EXPORT_SQL: rc = ec_export_write_other(out, fmt, r, n); break;
    }
    if (rc != 0) return -1;
    if (fflush(out) != 0 || ferror(out)) return ec_set_error("write failed: %s", strerror(errno));
    return 0;
}

/* ---- reading ---- */

static const ec_column *find_column(const char *name)
{
    size_t nc;
    const ec_column *c = ec_run_columns(&nc);
    for (size_t j = 0; j < nc; j++)
        if (!strcmp(c[j].name, name)) return &c[j];
    return NULL;
}

int ec_column_set(const char *name, size_t row, const ec_column *c, void *r, const char *text)
{
    char *p = (char *)r + c->offset;
    char *end;
    if (c->type == EC_COL_TEXT) {
        if (strlen(text) >= c->size)
            return ec_set_error("%s: row %zu: %s is longer than %zu characters", name, row,
                                c->name, c->size - 1);
        memcpy(p, text, strlen(text) + 1);
        return 0;
    }
    if (!*text) return 0; /* stays unknown (record initialised) */
    errno = 0;
    switch (c->type) {
    case EC_COL_REAL: {
        double v = strtod(text, &end);
        if (*end || errno == EINVAL || end == text) break;
        *(double *)(void *)p = v;
        return 0;
    }
    case EC_COL_INT:
    case EC_COL_LONG: {
        long v = strtol(text, &end, 10);
        if (*end || errno || end == text) break;
        if (c->type == EC_COL_LONG) {
            *(long *)(void *)p = v;
            return 0;
        }
        if (v < -2147483647L || v > 2147483647L) break;
        *(int *)(void *)p = (int)v;
        return 0;
    }
    case EC_COL_HEX: {
        if (strncmp(text, "0x", 2) != 0 || !text[2] || text[2] == '-' || text[2] == '+') break;
        unsigned long long v = strtoull(text + 2, &end, 16);
        if (*end || errno) break;
        *(unsigned long long *)(void *)p = v;
        return 0;
    }
    case EC_COL_ENERGY_DEF:
        if (ec_energy_definition_parse(text, (ec_energy_definition *)(void *)p) != 0) break;
        return 0;
    case EC_COL_GATE:
        if (ec_gate_status_parse(text, (ec_gate_status *)(void *)p) != 0) break;
        return 0;
    case EC_COL_TEXT: break;
    }
    return ec_set_error("%s: row %zu: bad %s value '%.40s'", name, row, c->name, text);
}

typedef struct {
    ec_run_record *v;
    size_t n, cap;
} record_vec;

static ec_run_record *vec_push(record_vec *rv)
{
    if (rv->n == rv->cap) {
        size_t cap = rv->cap ? 2 * rv->cap : 64;
        ec_run_record *v = realloc(rv->v, cap * sizeof *v);
        if (!v) return NULL;
        rv->v = v;
        rv->cap = cap;
    }
    ec_run_record *r = &rv->v[rv->n++];
    ec_run_record_init(r);
    return r;
}

/* One RFC 4180 record: fields (pointers into a buffer owned by the reader) until end of line. */
typedef struct {
    const char *p, *end;
    char *buf;   /* unquoted field text, NUL-separated */
    size_t cap;
    const char **fields;
    size_t nfields, fcap;
} csv_reader;

/* Reads the next record. Returns 1 with a record, 0 at end of input, -1 on a syntax error. */
static int csv_next(csv_reader *cr, const char *name, size_t line)
{
    if (cr->p >= cr->end) return 0;
    size_t used = 0;
    cr->nfields = 0;
    size_t *starts = NULL, nstarts = 0, scap = 0;
    int rc = 1;
    for (;;) {
        if (nstarts == scap) {
            scap = scap ? 2 * scap : 64;
            size_t *s = realloc(starts, scap * sizeof *s);
            if (!s) {
                rc = ec_set_error("out of memory");
                break;
            }
            starts = s;
        }
        starts[nstarts++] = used;
        int quoted = cr->p < cr->end && *cr->p == '"';
        if (quoted) cr->p++;
        int closed = !quoted;
        while (cr->p < cr->end) {
            char ch = *cr->p;
            if (quoted && !closed) {
                if (ch == '"') {
                    if (cr->p + 1 < cr->end && cr->p[1] == '"') {
                        cr->p++;
                    } else {
                        closed = 1;
                        cr->p++;
                        continue;
                    }
                }
            } else if (ch == ',' || ch == '\n' || ch == '\r') {
                break;
            } else if (quoted || ch == '"') {
                rc = ec_set_error("%s: line %zu: stray quote or text after a quoted field", name,
                                  line);
                break;
            }
            if (used + 2 > cr->cap) {
                size_t cap = cr->cap ? 2 * cr->cap : 4096;
                char *b = realloc(cr->buf, cap);
                if (!b) {
                    rc = ec_set_error("out of memory");
                    break;
                }
                cr->buf = b;
                cr->cap = cap;
            }
            cr->buf[used++] = ch;
            cr->p++;
        }
        if (rc < 0) break;
        if (!closed) {
            rc = ec_set_error("%s: line %zu: unterminated quoted field", name, line);
            break;
        }
        if (used + 1 > cr->cap) {
            char *b = realloc(cr->buf, cr->cap + 4096);
            if (!b) {
                rc = ec_set_error("out of memory");
                break;
            }
            cr->buf = b;
            cr->cap += 4096;
        }
        cr->buf[used++] = '\0';
        if (cr->p < cr->end && *cr->p == ',') {
            cr->p++;
            continue;
        }
        if (cr->p < cr->end && *cr->p == '\r') cr->p++;
        if (cr->p < cr->end && *cr->p == '\n') cr->p++;
        break;
    }
    if (rc > 0) {
        if (nstarts > cr->fcap) {
            const char **f = realloc(cr->fields, nstarts * sizeof *f);
            if (!f) rc = ec_set_error("out of memory");
            else {
                cr->fields = f;
                cr->fcap = nstarts;
            }
        }
        if (rc > 0) {
            for (size_t i = 0; i < nstarts; i++)
                cr->fields[i] = cr->buf + starts[i];
            cr->nfields = nstarts;
        }
    }
    free(starts);
    return rc;
}

/* 1: not an export (first header field is not "source"); 0 read; -1 malformed. */
static int parse_csv(const char *name, const char *data, size_t len, record_vec *rv)
{
    csv_reader cr = {.p = data, .end = data + len};
    int rc = csv_next(&cr, name, 1);
    const ec_column **map = NULL;
    /* An export's header is plain names starting with "source"; anything else (JSON arrays,
     * other CSV files, binary data) is some other kind of file. */
    if (rc <= 0 || cr.nfields == 0 || strcmp(cr.fields[0], "source") != 0) {
        rc = 1;
        goto done;
    }
    size_t ncols = cr.nfields;
    map = calloc(ncols, sizeof *map);
    if (!map) {
        rc = ec_set_error("out of memory");
        goto done;
    }
    for (size_t j = 0; j < ncols; j++) {
        map[j] = find_column(cr.fields[j]);
        if (!map[j]) {
            rc = ec_set_error("%s: unknown column '%.40s' (docs/data-schema.md lists them)", name,
                              cr.fields[j]);
            goto done;
        }
        for (size_t k = 0; k < j; k++)
            if (map[k] == map[j]) {
                rc = ec_set_error("%s: column '%s' appears twice", name, cr.fields[j]);
                goto done;
            }
    }
    size_t line = 1;
    while ((rc = csv_next(&cr, name, ++line)) > 0) {
        if (cr.nfields == 1 && !cr.fields[0][0]) continue; /* blank line */
        if (cr.nfields != ncols) {
            rc = ec_set_error("%s: line %zu: %zu fields, the header has %zu", name, line,
                              cr.nfields, ncols);
            goto done;
        }
        ec_run_record *r = vec_push(rv);
        if (!r) {
            rc = ec_set_error("out of memory");
            goto done;
        }
        for (size_t j = 0; j < ncols; j++)
            if (ec_column_set(name, rv->n, map[j], r, cr.fields[j]) != 0) {
                rc = -1;
                goto done;
            }
    }
done:
    free(map);
    free(cr.buf);
    free(cr.fields);
    return rc;
}

int ec_column_set_json(const char *name, size_t row, const ec_column *c, void *r, const cJSON *v)
{
    char buf[64];
    const char *text;
    if (cJSON_IsNull(v)) {
        text = "";
    } else if (cJSON_IsString(v) && (c->type == EC_COL_TEXT || c->type == EC_COL_HEX ||
                                     c->type >= EC_COL_ENERGY_DEF)) {
        text = v->valuestring;
    } else if (cJSON_IsNumber(v) && (c->type == EC_COL_REAL || c->type == EC_COL_INT ||
                                     c->type == EC_COL_LONG)) {
        /* Integers are checked for being whole; reals keep cJSON's parsed double. */
        if (c->type == EC_COL_REAL) {
            *(double *)(void *)((char *)r + c->offset) = v->valuedouble;
            return 0;
        }
        if (v->valuedouble != floor(v->valuedouble) || fabs(v->valuedouble) > 9e15)
            return ec_set_error("%s: row %zu: %s must be a whole number", name, row, c->name);
        snprintf(buf, sizeof buf, "%.0f", v->valuedouble);
        text = buf;
    } else {
        return ec_set_error("%s: row %zu: %s has the wrong JSON type", name, row, c->name);
    }
    return ec_column_set(name, row, c, r, text);
}


/* One run's object (a JSON export's row, a JSONL line) into a new record; 0 or -1. */
static int parse_row(const char *name, const cJSON *row, record_vec *rv)
{
    if (!cJSON_IsObject(row)) return ec_set_error("%s: row %zu is not an object", name, rv->n + 1);
    ec_run_record *r = vec_push(rv);
    if (!r) return ec_set_error("out of memory");
    const cJSON *v;
    cJSON_ArrayForEach(v, row)
    {
        const ec_column *c = find_column(v->string);
        if (!c)
            return ec_set_error("%s: row %zu: unknown column '%.40s'", name, rv->n, v->string);
        if (ec_column_set_json(name, rv->n, c, r, v) != 0) return -1;
    }
    return 0;
}

/* JSONL: one run object per line, its first key "source" (as a CSV export's first column).
 * 1: not an export; 0 read; -1 malformed. */
static int parse_jsonl(const char *name, const char *data, size_t len, record_vec *rv)
{
    size_t line = 0;
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(data + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - data) : len;
        line++;
        size_t k = at;
        while (k < end && (data[k] == ' ' || data[k] == '\t' || data[k] == '\r'))
            k++;
        if (k < end) {
            cJSON *row = cJSON_ParseWithLength(data + at, end - at);
            if (rv->n == 0 && (!cJSON_IsObject(row) || !row->child || !row->child->string ||
                          strcmp(row->child->string, "source") != 0)) {
                cJSON_Delete(row);
                return 1;
            }
            if (!row) return ec_set_error("%s: line %zu: not a JSON object", name, line);
            int rc = parse_row(name, row, rv);
            cJSON_Delete(row);
            if (rc != 0) return -1;
        }
        at = end + 1;
    }
    return 0;
}

/* A JSON export or, failing that, JSONL. 1: not an export; 0 read; -1 malformed. */
static int parse_json(const char *name, const char *data, size_t len, record_vec *rv)
{
    cJSON *o = cJSON_ParseWithLength(data, len); /* JSONL: its first line */
    if (!o) return parse_jsonl(name, data, len, rv);
    int rc = 0;
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(o, EXPORT_KEY);
    if (!cJSON_IsObject(o) || !kind) {
        cJSON_Delete(o);
        return parse_jsonl(name, data, len, rv);
    }
    if (cJSON_IsString(kind) && !strcmp(kind->valuestring, "accuracy")) {
        rc = ec_set_error("%s: an accuracy export holds no runs (`import` stores it; `analyze "
                          "--accuracy` reads it)", name);
        goto done;
    }
    if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "runs") != 0) {
        rc = ec_set_error("%s: a '%s' export cannot be imported (import reads one row per run: "
                          "'ecocompute export' without --summary)",
                          name, cJSON_IsString(kind) ? kind->valuestring : "?");
        goto done;
    }
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(o, "schema_version");
    if (!cJSON_IsNumber(ver) || ver->valuedouble > EC_STORE_SCHEMA_VERSION) {
        rc = ec_set_error("%s: export schema version %s is newer than this ecocompute's (%d)", name,
                          cJSON_IsNumber(ver) ? "given" : "missing", EC_STORE_SCHEMA_VERSION);
        goto done;
    }
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(o, "rows");
    if (!cJSON_IsArray(rows)) {
        rc = ec_set_error("%s: no \"rows\" array", name);
        goto done;
    }
    const cJSON *row;
    cJSON_ArrayForEach(row, rows)
    {
        if ((rc = parse_row(name, row, rv)) != 0) goto done;
    }
done:
    cJSON_Delete(o);
    return rc;
}

/* 1: not an export; 0 read; -1 malformed (ec_last_error). */
static int parse_export(const char *name, const char *data, size_t len, ec_run_record **out,
                        size_t *n)
{
    record_vec rv = {0};
    size_t i = 0;
    while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n'))
        i++;
    int rc = i < len && data[i] == '{' ? parse_json(name, data, len, &rv)
                                       : parse_csv(name, data, len, &rv);
    if (rc != 0) {
        free(rv.v);
        return rc;
    }
    *out = rv.v;
    *n = rv.n;
    return 0;
}

int ec_dataset_parse(const char *name, const char *data, size_t len, ec_run_record **out,
                     size_t *n)
{
    *out = NULL;
    *n = 0;
    int rc = parse_export(name, data, len, out, n);
    if (rc > 0) return ec_set_error("%s: not an ecocompute export", name);
    return rc;
}

/* Files that are not ecocompute exports: the seeds' published CSV/JSON files, recognised by
 * their columns or keys (seed_import.c); anything else is refused there with the reason. */
/* Not our export: maybe one of the seeds' published files (seed_import.c). */
static int read_foreign(const char *path, ec_run_record **out, size_t *n)
{
    if (ec_seed_read(path, out, n) == 0) return 0;
    char why[512];
    snprintf(why, sizeof why, "%s", ec_last_error()); /* read below while a new one is set */
    const char *colon = strstr(why, ": not a recognised seed-data file");
    if (!colon) return -1; /* a seed file that is damaged: its own message names the problem */
    return ec_set_error("%s: not an ecocompute export, and%s", path, colon + 1);
}

/* SQLite's file header: a database passed where a file is expected (e.g. a bench shard). */
static const char sqlite_magic[16] = "SQLite format 3";

static int read_database(const char *path, ec_run_record **out, size_t *n)
{
    ec_store *s;
    if (ec_store_open(&s, path, 1) != 0) return -1;
    int rc = ec_store_load_runs(s, NULL, out, n);
    ec_store_close(s);
    return rc;
}

int ec_dataset_read(const char *path, ec_run_record **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    FILE *f = ec_fopen_regular(path);
    if (!f) return -1;
    char head[sizeof sqlite_magic];
    if (fread(head, 1, sizeof head, f) == sizeof head && !memcmp(head, sqlite_magic, sizeof head)) {
        fclose(f);
        return read_database(path, out, n);
    }
    rewind(f);
    char *data = NULL;
    size_t len = 0, cap = 0;
    int rc = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? 2 * cap : 65536;
            char *d = cap > (size_t)MAX_FILE_BYTES ? NULL : realloc(data, cap);
            if (!d) {
                rc = ec_set_error("%s: too large or out of memory", path);
                break;
            }
            data = d;
        }
        size_t got = fread(data + len, 1, cap - len, f);
        len += got;
        if (got == 0) {
            if (ferror(f)) rc = ec_set_error("reading %s: %s", path, strerror(errno));
            break;
        }
    }
    fclose(f);
    if (rc == 0) {
        rc = parse_export(path, data, len, out, n);
        if (rc > 0) rc = read_foreign(path, out, n);
    }
    free(data);
    /* A value no measurement can have is an error of the file, never a number to average. */
    char why[256];
    for (size_t i = 0; rc == 0 && i < *n; i++)
        if (ec_run_record_check(&(*out)[i], why, sizeof why) != 0) {
            rc = ec_set_error("%s: record %zu (%s %s, batch %d): %s", path, i + 1, (*out)[i].model,
                              (*out)[i].precision, (*out)[i].batch, why);
            free(*out);
            *out = NULL;
            *n = 0;
        }
    return rc;
}
