/* table.c — one table model rendered three ways (aligned text, CSV, JSON), so every command
 * offers --format table|json|csv with the same columns; a text table is fitted to the process's
 * text width by leaving out its least important columns and shortening long text. */
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
    int priority; /* 0: always shown; otherwise left out of narrow text tables, highest first */
    int wrap;     /* long text continues on the next lines instead of being shortened */
} column;

/* The width text tables are fitted to, in characters; 0: no limit. */
static int text_width;

void ec_table_set_text_width(int columns)
{
    text_width = columns > 0 ? columns : 0;
}

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
    for (size_t i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i].text);
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
    t->cols[t->ncols].priority = 0;
    t->cols[t->ncols].wrap = 0;
    return (int)t->ncols++;
}

void ec_table_priority(ec_table *t, int col, int priority)
{
    if (col < 0 || (size_t)col >= t->ncols) abort();
    t->cols[col].priority = priority > 0 ? priority : 0;
}

void ec_table_wrap(ec_table *t, int col)
{
    if (col < 0 || (size_t)col >= t->ncols) abort();
    t->cols[col].wrap = 1;
}

void ec_table_row(ec_table *t)
{
    t->cells = xrealloc(t->cells, (t->nrows + 1) * t->ncols * sizeof *t->cells);
    memset(t->cells + t->nrows * t->ncols, 0, t->ncols * sizeof *t->cells);
    t->nrows++;
}

size_t ec_table_rows(const ec_table *t)
{
    return t->nrows;
}

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
            cJSON *v = !x->text       ? cJSON_CreateNull()
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

/* Writes s in at most w display columns: text wider than w keeps its start and end around an
 * ellipsis (file names and paths differ at their ends). */
static void put_fitted(FILE *out, const char *s, size_t w)
{
    size_t sw = display_width(s);
    if (sw <= w) {
        fputs(s, out);
        return;
    }
    size_t head = (w - 1) / 2, tail = w - 1 - head, i = 0;
    const char *p = s;
    for (; *p && i < head; p++) {
        fputc(*p, out);
        while ((((unsigned char)p[1]) & 0xC0) == 0x80)
            fputc(*++p, out);
        i++;
    }
    fputs("…", out);
    /* skip to the code point that starts the last `tail` ones */
    size_t skip = sw - tail;
    for (p = s, i = 0; *p; p++)
        if (((unsigned char)*p & 0xC0) != 0x80 && i++ == skip) break;
    fputs(p, out);
}

/* The bytes of s's first line in w display columns: up to the last blank that fits, or w code
 * points when one word is longer; *next is where the following line starts (blanks skipped). */
static size_t wrap_line(const char *s, size_t w, const char **next)
{
    size_t cols = 0, cut = 0;
    const char *p = s;
    while (*p && cols < w) {
        if (*p == ' ') cut = (size_t)(p - s);
        p++;
        while (((unsigned char)*p & 0xC0) == 0x80)
            p++;
        cols++;
    }
    size_t len = !*p || *p == ' ' || !cut ? (size_t)(p - s) : cut;
    for (*next = s + len; **next == ' ';)
        (*next)++;
    return len;
}

/* Narrowest a shortened text column gets (enough to tell most names apart), and a wrapped one;
 * text up to SHORT_TEXT wide (a precision, "12.3 ± 0.4") is never shortened: only names, paths
 * and sentences are. */
enum { MIN_FITTED = 16, MIN_WRAPPED = 32, SHORT_TEXT = 24 };

static void print_text(const ec_table *t, FILE *out)
{
    size_t *w = xrealloc(NULL, t->ncols * sizeof *w);
    int *numeric = xrealloc(NULL, t->ncols * sizeof *numeric);
    int *shown = xrealloc(NULL, t->ncols * sizeof *shown);
    int *long_text = xrealloc(NULL, t->ncols * sizeof *long_text);
    const char **rest = xrealloc(NULL, t->ncols * sizeof *rest); /* wrapped text still to print */
    for (size_t c = 0; c < t->ncols; c++) {
        w[c] = display_width(t->cols[c].label);
        numeric[c] = 0;
        shown[c] = 1;
        long_text[c] = 0;
        for (size_t r = 0; r < t->nrows; r++) {
            const cell *x = &t->cells[r * t->ncols + c];
            size_t cw = x->text ? display_width(x->text) : 1;
            if (cw > w[c]) w[c] = cw;
            numeric[c] |= x->is_number;
            long_text[c] |= cw > SHORT_TEXT;
        }
    }
    size_t total = 0, nshown = t->ncols, hidden = 0;
    for (size_t c = 0; c < t->ncols; c++)
        total += w[c] + (c ? 2 : 0);
    /* Too wide: leave out optional columns, the least important (highest priority number,
     * then rightmost) first; then narrow wrapped columns; then shorten the widest text. */
    while (text_width && total > (size_t)text_width) {
        size_t drop = t->ncols;
        for (size_t c = 0; c < t->ncols; c++)
            if (shown[c] && t->cols[c].priority &&
                (drop == t->ncols || t->cols[c].priority >= t->cols[drop].priority))
                drop = c;
        if (drop == t->ncols || nshown == 1) break;
        shown[drop] = 0;
        nshown--;
        hidden++;
        total -= w[drop] + 2;
    }
    for (size_t c = 0; c < t->ncols && text_width && total > (size_t)text_width; c++) {
        if (!shown[c] || !t->cols[c].wrap || w[c] <= MIN_WRAPPED) continue;
        size_t cut = total - (size_t)text_width;
        if (cut > w[c] - MIN_WRAPPED) cut = w[c] - MIN_WRAPPED;
        w[c] -= cut;
        total -= cut;
    }
    while (text_width && total > (size_t)text_width) {
        size_t widest = t->ncols;
        for (size_t c = 0; c < t->ncols; c++)
            if (shown[c] && long_text[c] && !numeric[c] && !t->cols[c].wrap && w[c] > MIN_FITTED &&
                (widest == t->ncols || w[c] > w[widest]))
                widest = c;
        if (widest == t->ncols) break;
        w[widest]--;
        total--;
    }
    size_t last = t->ncols;
    while (last > 0 && !shown[last - 1])
        last--;
    for (size_t r = 0; r <= t->nrows; r++) {
        for (size_t c = 0; c < t->ncols; c++) {
            const cell *x = r ? &t->cells[(r - 1) * t->ncols + c] : NULL;
            rest[c] = !x ? t->cols[c].label : x->text ? x->text : "-";
        }
        /* A row is one line, or several while wrapped text remains. */
        for (int line = 0, more = 1; more; line++) {
            more = 0;
            for (size_t c = 0; c < t->ncols; c++) {
                if (!shown[c]) continue;
                int is_last = c + 1 == last;
                const char *s = rest[c];
                size_t sw;
                if (t->cols[c].wrap) {
                    size_t len = wrap_line(s, w[c], &rest[c]);
                    fwrite(s, 1, len, out);
                    more |= *rest[c] != '\0';
                    sw = 0;
                    for (size_t b = 0; b < len; b++)
                        sw += ((unsigned char)s[b] & 0xC0) != 0x80;
                } else {
                    sw = line ? 0 : display_width(s);
                    if (line) s = "";
                    /* Columns of figures are right-aligned so they line up by digit. */
                    if (numeric[c] && sw < w[c]) fprintf(out, "%*s", (int)(w[c] - sw), "");
                    put_fitted(out, s, w[c]);
                    rest[c] = "";
                    if (numeric[c]) sw = w[c];
                }
                if (is_last) break;
                fprintf(out, "%*s  ", sw < w[c] ? (int)(w[c] - sw) : 0, "");
            }
            fputc('\n', out);
        }
    }
    if (hidden) {
        fflush(out); /* the note follows the table, also when both go to one file */
        fprintf(stderr, "(%zu of %zu columns left out to fit %d characters:", hidden, t->ncols,
                text_width);
        for (size_t c = 0, k = 0; c < t->ncols; c++)
            if (!shown[c]) fprintf(stderr, "%s %s", k++ ? "," : "", t->cols[c].label);
        fprintf(stderr, "; --wide shows every column)\n");
    }
    free(rest);
    free(long_text);
    free(shown);
    free(numeric);
    free(w);
}

void ec_table_print(const ec_table *t, ec_format fmt, FILE *out)
{
    switch (fmt) {
    case EC_FORMAT_CSV:
        print_csv(t, out);
        break;
    case EC_FORMAT_JSON:
        print_json(t, out);
        break;
    case EC_FORMAT_TABLE:
        print_text(t, out);
        break;
    }
}

int ec_format_parse(const char *text, ec_format *out)
{
    if (!strcmp(text, "table"))
        *out = EC_FORMAT_TABLE;
    else if (!strcmp(text, "json"))
        *out = EC_FORMAT_JSON;
    else if (!strcmp(text, "csv"))
        *out = EC_FORMAT_CSV;
    else
        return ec_set_error("unknown format '%s' (expected table, json or csv)", text);
    return 0;
}
