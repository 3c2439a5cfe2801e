/* accuracy_file.c — accuracy exports: ec_accuracy_record rows as CSV or JSON (the column table of
 * accuracy.c, values written as dataset.c writes runs: shortest exact digits, unknown = empty or
 * null) and read back losslessly, and a human table of the main columns. An accuracy export is
 * recognised by its content: a CSV header that is exactly the accuracy columns' names from the
 * first on, or a JSON object whose "ecocompute_export" is "accuracy". */
#include "ecocompute/accuracy.h"

#include "common/csv.h"
#include "store/store_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT_KIND "accuracy"

static void write_csv(FILE *out, const ec_accuracy_record *r, size_t n)
{
    size_t nc;
    const ec_column *c = ec_accuracy_columns(&nc);
    ec_columns_write_csv(out, c, nc, r, sizeof *r, n);
}

static int write_json(FILE *out, const ec_accuracy_record *r, size_t n)
{
    size_t nc;
    const ec_column *c = ec_accuracy_columns(&nc);
    return ec_columns_write_json(out, EXPORT_KIND, c, nc, r, sizeof *r, n);
}

static void write_table(FILE *out, const ec_accuracy_record *r, size_t n)
{
    ec_table *t = ec_table_new();
    int c_model = ec_table_column(t, "model", "Model");
    int c_prec = ec_table_column(t, "precision", "Precision");
    int c_kern = ec_table_column(t, "kernels", "Kernels");
    int c_dev = ec_table_column(t, "device", "Device");
    int c_data = ec_table_column(t, "dataset", "Text");
    int c_win = ec_table_column(t, "window", "Window (tok)");
    int c_str = ec_table_column(t, "stride", "Stride (tok)");
    int c_tok = ec_table_column(t, "ppl_tokens", "Scored (tok)");
    int c_ppl = ec_table_column(t, "perplexity", "Perplexity");
    int c_kl = ec_table_column(t, "kl_vs_f32", "KL vs f32 (nats)");
    int c_top = ec_table_column(t, "top1_agreement_pct", "Top-1 (%)");
    int c_when = ec_table_column(t, "timestamp_utc", "When (UTC)");
    for (size_t i = 0; i < n; i++) {
        const ec_accuracy_record *x = &r[i];
        ec_table_row(t);
        ec_table_text(t, c_model, "%s", x->model);
        ec_table_text(t, c_prec, "%s", x->precision);
        ec_table_text(t, c_kern, "%s", x->kernels);
        ec_table_text(t, c_dev, "%s", x->device);
        ec_table_text(t, c_data, "%s", x->dataset);
        if (x->window > 0) ec_table_number(t, c_win, "%.0f", x->window);
        if (x->stride > 0) ec_table_number(t, c_str, "%.0f", x->stride);
        if (x->ppl_tokens >= 0) ec_table_number(t, c_tok, "%.0f", (double)x->ppl_tokens);
        ec_table_number(t, c_ppl, "%.4f", x->perplexity);
        ec_table_number(t, c_kl, "%.3e", x->kl_vs_f32);
        ec_table_number(t, c_top, "%.2f", x->top1_agreement_pct);
        ec_table_text(t, c_when, "%s", x->timestamp_utc);
    }
    ec_table_print(t, EC_FORMAT_TABLE, out);
    ec_table_free(t);
}

int ec_accuracy_write(FILE *out, ec_format fmt, const ec_accuracy_record *r, size_t n)
{
    if (fmt == EC_FORMAT_CSV)
        write_csv(out, r, n);
    else if (fmt == EC_FORMAT_JSON) {
        if (write_json(out, r, n) != 0) return -1;
    } else
        write_table(out, r, n);
    if (fflush(out) != 0 || ferror(out)) return ec_set_error("write failed: %s", strerror(errno));
    return 0;
}

/* ---- reading ---- */

static const ec_column *find_column(const char *name)
{
    size_t nc;
    const ec_column *c = ec_accuracy_columns(&nc);
    for (size_t j = 0; j < nc; j++)
        if (!strcmp(c[j].name, name)) return &c[j];
    return NULL;
}

static ec_accuracy_record *alloc_rows(size_t n)
{
    ec_accuracy_record *v = malloc((n ? n : 1) * sizeof *v);
    for (size_t i = 0; v && i < n; i++)
        ec_accuracy_record_init(&v[i]);
    return v;
}

/* 1: not an accuracy export; 0 read; -1 malformed. */
static int parse_json(const char *name, const cJSON *o, ec_accuracy_record **out, size_t *n)
{
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(o, "ecocompute_export");
    if (!cJSON_IsString(kind) || strcmp(kind->valuestring, EXPORT_KIND) != 0) return 1;
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(o, "schema_version");
    if (!cJSON_IsNumber(ver) || ver->valuedouble > EC_STORE_SCHEMA_VERSION)
        return ec_set_error("%s: export schema version %s is newer than this ecocompute's (%d)",
                            name, cJSON_IsNumber(ver) ? "given" : "missing",
                            EC_STORE_SCHEMA_VERSION);
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(o, "rows");
    if (!cJSON_IsArray(rows)) return ec_set_error("%s: no \"rows\" array", name);
    size_t nr = (size_t)cJSON_GetArraySize(rows), i = 0;
    ec_accuracy_record *v = alloc_rows(nr);
    if (!v) return ec_set_error("out of memory");
    const cJSON *row;
    cJSON_ArrayForEach(row, rows)
    {
        i++;
        if (!cJSON_IsObject(row)) {
            free(v);
            return ec_set_error("%s: row %zu is not an object", name, i);
        }
        const cJSON *x;
        cJSON_ArrayForEach(x, row)
        {
            const ec_column *c = find_column(x->string);
            if (!c) {
                free(v);
                return ec_set_error("%s: row %zu: unknown column '%.40s'", name, i, x->string);
            }
            if (ec_column_set_json(name, i, c, &v[i - 1], x) != 0) {
                free(v);
                return -1;
            }
        }
    }
    *out = v;
    *n = nr;
    return 0;
}

/* 1: not an accuracy export (the header is not the accuracy columns from the first on); 0 read;
 * -1 malformed. */
static int parse_csv(const char *name, const char *data, size_t len, ec_accuracy_record **out,
                     size_t *n)
{
    size_t nc;
    const ec_column *c = ec_accuracy_columns(&nc);
    /* Cheap refusal before parsing a large file of another kind: the header's first names. */
    char head[64];
    snprintf(head, sizeof head, "%s,%s,%s,", c[0].name, c[1].name, c[2].name);
    if (len < strlen(head) || memcmp(data, head, strlen(head)) != 0) return 1;
    ec_csv csv;
    if (ec_csv_parse(data, len, name, &csv) != 0) return -1;
    const ec_csv_row *h = &csv.rows[0];
    const ec_column **map = calloc(h->nfields ? h->nfields : 1, sizeof *map);
    ec_accuracy_record *v = alloc_rows(csv.nrows);
    int rc = map && v ? 0 : ec_set_error("out of memory");
    for (size_t j = 0; rc == 0 && j < h->nfields; j++) {
        map[j] = find_column(h->fields[j]);
        if (!map[j])
            rc = ec_set_error("%s: unknown column '%.40s' (docs/data-schema.md lists them)", name,
                              h->fields[j]);
        for (size_t k = 0; rc == 0 && k < j; k++)
            if (map[k] == map[j])
                rc = ec_set_error("%s: column '%s' appears twice", name, h->fields[j]);
    }
    for (size_t i = 1; rc == 0 && i < csv.nrows; i++) {
        if (csv.rows[i].nfields != h->nfields) {
            rc = ec_set_error("%s: row %zu: %zu fields, the header has %zu", name, i,
                              csv.rows[i].nfields, h->nfields);
            break;
        }
        for (size_t j = 0; rc == 0 && j < h->nfields; j++)
            rc = ec_column_set(name, i, map[j], &v[i - 1], csv.rows[i].fields[j]);
    }
    size_t rows = csv.nrows - 1;
    free(map);
    ec_csv_free(&csv);
    if (rc != 0) {
        free(v);
        return -1;
    }
    *out = v;
    *n = rows;
    return 0;
}

/* A value no evaluation can have is an error of the file, never a number to compare: numbers
 * finite, perplexity above 0, top-1 within 0..100, counts -1 (unknown) or more. */
static int check_row(const char *path, size_t row, const ec_accuracy_record *r)
{
    size_t nc;
    const ec_column *c = ec_accuracy_columns(&nc);
    for (size_t j = 0; j < nc; j++) {
        const void *p = (const char *)r + c[j].offset;
        double v = c[j].type == EC_COL_REAL   ? *(const double *)p
                   : c[j].type == EC_COL_INT  ? *(const int *)p
                   : c[j].type == EC_COL_LONG ? (double)*(const long *)p
                                              : 0.0;
        const char *rule = NULL;
        if (c[j].type == EC_COL_REAL && isinf(v)) rule = "must be finite";
        else if (c[j].type != EC_COL_REAL && c[j].type != EC_COL_TEXT && v < -1)
            rule = "must be -1 (unknown) or more";
        else if (!strcmp(c[j].name, "perplexity") && !(v > 0) && !isnan(v))
            rule = "must be above 0";
        else if (!strcmp(c[j].name, "top1_agreement_pct") && (v < 0 || v > 100))
            rule = "must be within 0..100";
        if (rule)
            return ec_set_error("%s: row %zu (%s %s): %s = %g: %s", path, row, r->model,
                                r->precision, c[j].name, v, rule);
    }
    return 0;
}

int ec_accuracy_read(const char *path, ec_accuracy_record **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    FILE *f = ec_fopen_regular(path);
    if (!f) return -1;
    char *data = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&data, &len);
    char chunk[65536];
    size_t got;
    while (m && (got = fread(chunk, 1, sizeof chunk, f)) > 0)
        fwrite(chunk, 1, got, m);
    int bad = ferror(f);
    fclose(f);
    if (!m || fclose(m) != 0) return ec_set_error("out of memory reading %s", path);
    if (bad) {
        free(data);
        return ec_set_error("reading %s: %s", path, strerror(errno));
    }
    size_t i = 0;
    while (i < len && strchr(" \t\r\n", data[i]))
        i++;
    int rc;
    if (i < len && data[i] == '{') {
        cJSON *o = cJSON_ParseWithLength(data, len);
        rc = o && cJSON_IsObject(o) ? parse_json(path, o, out, n) : 1;
        cJSON_Delete(o);
    } else {
        rc = parse_csv(path, data, len, out, n);
    }
    free(data);
    for (size_t k = 0; rc == 0 && k < *n; k++)
        if (check_row(path, k + 1, &(*out)[k]) != 0) {
            free(*out);
            *out = NULL;
            *n = 0;
            rc = -1;
        }
    return rc;
}
