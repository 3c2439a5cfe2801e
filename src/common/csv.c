/* csv.c — RFC 4180 CSV reader; see csv.h. A single pass over the buffer with an explicit state
 * machine, so every byte is looked at once and no read goes past len. */
#include "common/csv.h"

#include <stdlib.h>
#include <string.h>

#include "ecocompute/common.h"

typedef struct {
    char *buf;
    size_t len, cap;
} strbuf;

static int sb_put(strbuf *s, char ch)
{
    if (s->len + 1 >= s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 32;
        char *p = realloc(s->buf, cap);
        if (!p) return -1;
        s->buf = p;
        s->cap = cap;
    }
    s->buf[s->len++] = ch;
    return 0;
}

static int row_add(ec_csv_row *r, size_t *cap, strbuf *field)
{
    if (r->nfields >= EC_CSV_MAX_FIELDS) return -1;
    if (r->nfields == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        char **p = realloc(r->fields, nc * sizeof *p);
        if (!p) return -1;
        r->fields = p;
        *cap = nc;
    }
    char *copy = malloc(field->len + 1);
    if (!copy) return -1;
    if (field->len) memcpy(copy, field->buf, field->len);
    copy[field->len] = '\0';
    r->fields[r->nfields++] = copy;
    field->len = 0;
    return 0;
}

static void row_free(ec_csv_row *r)
{
    for (size_t i = 0; i < r->nfields; i++) free(r->fields[i]);
    free(r->fields);
    r->fields = NULL;
    r->nfields = 0;
}

void ec_csv_free(ec_csv *c)
{
    if (!c) return;
    for (size_t i = 0; i < c->nrows; i++) row_free(&c->rows[i]);
    free(c->rows);
    c->rows = NULL;
    c->nrows = 0;
}

/* A row that is one empty field came from a blank line: dropped, as spreadsheets do. */
static int is_blank(const ec_csv_row *r)
{
    return r->nfields == 1 && r->fields[0][0] == '\0';
}

int ec_csv_parse(const char *text, size_t len, const char *name, ec_csv *out)
{
    enum { FIELD_START, UNQUOTED, QUOTED, QUOTE_IN_QUOTED } st = FIELD_START;
    memset(out, 0, sizeof *out);
    strbuf field = {0};
    ec_csv_row row = {0};
    size_t row_cap = 0, rows_cap = 0, line = 1, i = 0;
    const char *err = NULL;
    if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) i = 3; /* UTF-8 BOM */
    int row_open = 0; /* any byte of the current row seen */
    for (; i <= len && !err; i++) {
        int end = i == len;
        char ch = end ? '\n' : text[i];
        if (!end && ch == '\0') {
            err = "NUL byte";
            break;
        }
        if (end && !row_open && st == FIELD_START) break;
        if (end && st == QUOTED) {
            err = "unterminated quoted field";
            break;
        }
        int eol = 0;
        switch (st) {
        case FIELD_START:
            if (ch == '"') st = QUOTED;
            else if (ch == ',') { if (row_add(&row, &row_cap, &field)) err = "too many fields or out of memory"; }
            else if (ch == '\n' || ch == '\r') eol = 1;
            else { if (sb_put(&field, ch)) err = "out of memory"; st = UNQUOTED; }
            break;
        case UNQUOTED:
            if (ch == ',') { if (row_add(&row, &row_cap, &field)) err = "too many fields or out of memory"; st = FIELD_START; }
            else if (ch == '\n' || ch == '\r') eol = 1;
            else if (ch == '"') err = "quote inside an unquoted field";
            else if (sb_put(&field, ch)) err = "out of memory";
            break;
        case QUOTED:
            if (ch == '"') st = QUOTE_IN_QUOTED;
            else {
                if (ch == '\n') line++;
                if (sb_put(&field, ch)) err = "out of memory";
            }
            break;
        case QUOTE_IN_QUOTED:
            if (ch == '"') { if (sb_put(&field, '"')) err = "out of memory"; st = QUOTED; }
            else if (ch == ',') { if (row_add(&row, &row_cap, &field)) err = "too many fields or out of memory"; st = FIELD_START; }
            else if (ch == '\n' || ch == '\r') eol = 1;
            else err = "text after a closing quote";
            break;
        }
        if (err) break;
        if (!eol) {
            row_open = 1;
            continue;
        }
        /* End of a record: CRLF counts once. */
        if (ch == '\r' && i + 1 < len && text[i + 1] == '\n') i++;
        if (row_add(&row, &row_cap, &field)) {
            err = "too many fields or out of memory";
            break;
        }
        if (is_blank(&row)) {
            row_free(&row);
        } else {
            if (out->nrows >= EC_CSV_MAX_ROWS) {
                err = "too many rows";
                break;
            }
            if (out->nrows == rows_cap) {
                size_t nc = rows_cap ? rows_cap * 2 : 16;
                ec_csv_row *p = realloc(out->rows, nc * sizeof *p);
                if (!p) {
                    err = "out of memory";
                    break;
                }
                out->rows = p;
                rows_cap = nc;
            }
            out->rows[out->nrows++] = row;
            memset(&row, 0, sizeof row);
        }
        row_cap = 0;
        row_open = 0;
        st = FIELD_START;
        line++;
    }
    free(field.buf);
    row_free(&row);
    if (err) {
        ec_csv_free(out);
        return ec_set_error("%s:%zu: malformed CSV: %s", name, line, err);
    }
    return 0;
}

int ec_csv_read_file(const char *path, ec_csv *out)
{
    memset(out, 0, sizeof *out);
    FILE *f = ec_fopen_regular(path);
    if (!f) return -1;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            size_t nc = cap ? cap * 2 : 65536;
            if (nc > ((size_t)1 << 30)) {
                free(buf);
                fclose(f);
                return ec_set_error("%s: larger than 1 GiB", path);
            }
            char *p = realloc(buf, nc);
            if (!p) {
                free(buf);
                fclose(f);
                return ec_set_error("%s: out of memory", path);
            }
            buf = p;
            cap = nc;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return ec_set_error("%s: read error", path);
    }
    int rc = ec_csv_parse(buf ? buf : "", len, path, out);
    free(buf);
    return rc;
}

int ec_csv_column(const ec_csv *c, const char *name)
{
    if (!c->nrows) return -1;
    for (size_t i = 0; i < c->rows[0].nfields; i++)
        if (!strcmp(c->rows[0].fields[i], name)) return (int)i;
    return -1;
}
