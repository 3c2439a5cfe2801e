/* table.c — one table model rendered three ways (aligned text, CSV, JSON), so every command
 * offers --format table|json|csv with the same columns. */
#include "ecocompute/common.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *text;    /* what table/CSV print; NULL when the cell is empty */
    double number; /* the value JSON gets when is_number */
    int is_number;
} cell;

typedef struct {
    char *key;
    char *label;
} column;

struct ec_table {
    column *cols; /* [ncols] */
    size_t ncols;
    cell *cells; /* [nrows * ncols], row-major */
    size_t nrows;
};

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fprintf(stderr, "ecocompute: out of memory (%zu bytes)\n", n);
        abort();
    }
    return q;
}

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(xrealloc(NULL, n), s, n);
}

ec_table *ec_table_new(void)
{
    ec_table *t = xrealloc(NULL, sizeof *t);
    memset(t, 0, sizeof *t);
    return t;
}

void ec_table_free(ec_table *t)
{
    if (!t) return;
    for (size_t i = 0; i < t->nrows * t->ncols; i++) free(t->cells[i].text);
    for (size_t c = 0; c < t->ncols; c++) {
        free(t->cols[c].key);
        free(t->cols[c].label);
    }
    free(t->cells);
    free(t->cols);
    free(t);
}

int ec_table_column(ec_table *t, const char *key, const char *label)
{
    /* Columns are declared before rows; adding one later would reshape every row. */
    if (t->nrows) abort();
    t->cols = xrealloc(t->cols, (t->ncols + 1) * sizeof *t->cols);
    t->cols[t->ncols].key = xstrdup(key);
    t->cols[t->ncols].label = xstrdup(label);
    return (int)t->ncols++;
}

void ec_table_row(ec_table *t)
{
    t->cells = xrealloc(t->cells, (t->nrows + 1) * t->ncols * sizeof *t->cells);
    memset(t->cells + t->nrows * t->ncols, 0, t->ncols * sizeof *t->cells);
    t->nrows++;
}

size_t ec_table_rows(const ec_table *t) { return t->nrows; }

static cell *current(ec_table *t, int col)
{
    if (!t->nrows || col < 0 || (size_t)col >= t->ncols) abort();
    cell *c = &t->cells[(t->nrows - 1) * t->ncols + (size_t)col];
    free(c->text);
    c->text = NULL;
    return c;
}

void ec_table_text(ec_table *t, int col, const char *fmt, ...)
{
    cell *c = current(t, col);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    c->text = xrealloc(NULL, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(c->text, (size_t)n + 1, fmt, ap);
    va_end(ap);
    c->is_number = 0;
}

void ec_table_number(ec_table *t, int col, const char *fmt, double value)
{
    if (!isfinite(value)) {
        current(t, col)->is_number = 0; /* empty: NaN/inf are not data */
        return;
    }
    ec_table_text(t, col, fmt, value);
    cell *c = &t->cells[(t->nrows - 1) * t->ncols + (size_t)col];
    c->is_number = 1;
    c->number = value;
}

void ec_csv_field(FILE *out, const char *text)
{
    if (!strpbrk(text, ",\"\r\n")) {
        fputs(text, out);
        return;
    }
    fputc('"', out);
    for (const char *p = text; *p; p++) {
        if (*p == '"') fputc('"', out);
        fputc(*p, out);
    }
    fputc('"', out);
}

static void print_csv(const ec_table *t, FILE *out)
{
    for (size_t c = 0; c < t->ncols; c++) {
        if (c) fputc(',', out);
        ec_csv_field(out, t->cols[c].key);
    }
    fputs("\r\n", out);
    for (size_t r = 0; r < t->nrows; r++) {
        for (size_t c = 0; c < t->ncols; c++) {
            if (c) fputc(',', out);
            const cell *x = &t->cells[r * t->ncols + c];
            if (x->text) ec_csv_field(out, x->text);
        }
        fputs("\r\n", out);
    }
}

static void print_json(const ec_table *t, FILE *out)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t r = 0; r < t->nrows; r++) {
        cJSON *obj = cJSON_CreateObject();
        for (size_t c = 0; c < t->ncols; c++) {
            const cell *x = &t->cells[r * t->ncols + c];
            cJSON *v = !x->text      ? cJSON_CreateNull()
                       : x->is_number ? cJSON_CreateNumber(x->number)
                                      : cJSON_CreateString(x->text);
            cJSON_AddItemToObject(obj, t->cols[c].key, v);
        }
        cJSON_AddItemToArray(arr, obj);
    }
    char *s = cJSON_Print(arr);
    fprintf(out, "%s\n", s);
    free(s);
    cJSON_Delete(arr);
}

/* Display width of UTF-8 text: counts code points, which is right for the labels we use. */
static size_t display_width(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80) n++;
    return n;
}

static void print_text(const ec_table *t, FILE *out)
{
    size_t *w = xrealloc(NULL, t->ncols * sizeof *w);
    int *numeric = xrealloc(NULL, t->ncols * sizeof *numeric);
    for (size_t c = 0; c < t->ncols; c++) {
        w[c] = display_width(t->cols[c].label);
        numeric[c] = 0;
        for (size_t r = 0; r < t->nrows; r++) {
            const cell *x = &t->cells[r * t->ncols + c];
            size_t cw = x->text ? display_width(x->text) : 1;
            if (cw > w[c]) w[c] = cw;
            numeric[c] |= x->is_number;
        }
    }
    for (size_t r = 0; r <= t->nrows; r++) {
        for (size_t c = 0; c < t->ncols; c++) {
            const cell *x = r ? &t->cells[(r - 1) * t->ncols + c] : NULL;
            const char *s = !x ? t->cols[c].label : x->text ? x->text : "-";
            int pad = (int)(w[c] - display_width(s));
            int last = c + 1 == t->ncols;
            /* Columns of figures are right-aligned so they line up by digit. */
            if (numeric[c])
                fprintf(out, "%*s%s", pad, "", s);
            else
                fprintf(out, "%s%*s", s, last ? 0 : pad, "");
            if (!last) fputs("  ", out);
        }
        fputc('\n', out);
    }
    free(numeric);
    free(w);
}

void ec_table_print(const ec_table *t, ec_format fmt, FILE *out)
{
    switch (fmt) {
    case EC_FORMAT_CSV: print_csv(t, out); break;
    case EC_FORMAT_JSON: print_json(t, out); break;
    case EC_FORMAT_TABLE: print_text(t, out); break;
    }
}

int ec_format_parse(const char *text, ec_format *out)
{
    if (!strcmp(text, "table")) *out = EC_FORMAT_TABLE;
    else if (!strcmp(text, "json")) *out = EC_FORMAT_JSON;
    else if (!strcmp(text, "csv")) *out = EC_FORMAT_CSV;
    else return ec_set_error("unknown format '%s' (expected table, json or csv)", text);
    return 0;
}
