/* pytokens.c — a Python tokenizer for the audit: names, numbers, strings (every prefix, triple
 * quotes, escapes) and operators with their line and the indentation of their logical line;
 * comments dropped; newlines inside brackets and after a backslash joined, as Python does. So a
 * rule never fires on text inside a comment, a string or a docstring. */
#include "ecocompute/advise.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "ecocompute/common.h"

typedef struct {
    ec_pytoken *v;
    size_t n, cap;
} token_list;

static int push(token_list *l, ec_pyt_kind kind, int line, int indent, const char *text, size_t len)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 256;
        ec_pytoken *v = realloc(l->v, cap * sizeof *v);
        if (!v) return ec_set_error("out of memory");
        l->v = v;
        l->cap = cap;
    }
    char *t = malloc(len + 1);
    if (!t) return ec_set_error("out of memory");
    memcpy(t, text, len);
    t[len] = 0;
    l->v[l->n++] = (ec_pytoken){kind, line, indent, t};
    return 0;
}

static int is_name_start(unsigned char c)
{
    return isalpha(c) || c == '_' || c >= 0x80;
}

static int is_name_char(unsigned char c)
{
    return isalnum(c) || c == '_' || c >= 0x80;
}

/* Length of a string prefix (r, b, u, f, rb, br, fr, rf in any case) followed by a quote, else 0.
 */
static size_t string_prefix(const char *s, size_t left)
{
    size_t k = 0;
    while (k < 2 && k < left && strchr("rRbBuUfF", s[k]))
        k++;
    for (;; k--) {
        if (k < left && (s[k] == '\'' || s[k] == '"')) return k + 1;
        if (!k) return 0;
    }
}

int ec_py_tokenize(const char *src, size_t len, ec_pytoken **out, size_t *nout)
{
    static const char *const ops3[] = {"**=", "//=", ">>=", "<<=", "...", NULL};
    static const char *const ops2[] = {"**", "//", "==", "!=", "<=", ">=", "->", ":=", "<<", ">>",
                                       "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "@=", NULL};
    token_list l = {0};
    size_t i = 0;
    int line = 1, depth = 0, indent = 0, at_line_start = 1, line_has_tokens = 0;
    while (i < len) {
        unsigned char c = (unsigned char)src[i];
        if (at_line_start) {
            /* Indentation of a new logical line: tabs to the next multiple of 8, as Python. */
            int col = 0;
            while (i < len && (src[i] == ' ' || src[i] == '\t' || src[i] == '\f')) {
                col = src[i] == '\t' ? (col / 8 + 1) * 8 : col + 1;
                i++;
            }
            indent = col;
            at_line_start = 0;
            continue;
        }
        if (c == '\n') {
            if (depth == 0 && line_has_tokens) {
                if (push(&l, EC_PYT_NEWLINE, line, indent, "\n", 1)) goto fail;
                line_has_tokens = 0;
            }
            line++;
            i++;
            if (depth == 0) at_line_start = 1;
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\f' || c == '\r') {
            i++;
            continue;
        }
        if (c == '#') {
            while (i < len && src[i] != '\n')
                i++;
            continue;
        }
        if (c == '\\' && i + 1 < len && (src[i + 1] == '\n' || src[i + 1] == '\r')) {
            i += src[i + 1] == '\r' && i + 2 < len && src[i + 2] == '\n' ? 3 : 2;
            line++;
            continue;
        }
        size_t pre = string_prefix(src + i, len - i);
        if (pre && (pre == 1 || is_name_start(c))) {
            int start_line = line;
            char q = src[i + pre - 1];
            size_t j = i + pre;
            int triple = j + 1 < len && src[j] == q && src[j + 1] == q;
            if (triple) j += 2;
            size_t body = j;
            for (;;) {
                if (j >= len) {
                    ec_set_error("line %d: unterminated string", start_line);
                    goto fail;
                }
                if (src[j] == '\\' && j + 1 < len) {
                    if (src[j + 1] == '\n') line++;
                    j += 2;
                    continue;
                }
                if (src[j] == '\n') {
                    if (!triple) {
                        ec_set_error("line %d: unterminated string", start_line);
                        goto fail;
                    }
                    line++;
                }
                if (src[j] == q && (!triple || (j + 2 < len && src[j + 1] == q && src[j + 2] == q)))
                    break;
                j++;
            }
            if (push(&l, EC_PYT_STRING, start_line, indent, src + body, j - body)) goto fail;
            i = j + (triple ? 3 : 1);
            line_has_tokens = 1;
            continue;
        }
        if (is_name_start(c)) {
            size_t j = i;
            while (j < len && is_name_char((unsigned char)src[j]))
                j++;
            if (push(&l, EC_PYT_NAME, line, indent, src + i, j - i)) goto fail;
            i = j;
            line_has_tokens = 1;
            continue;
        }
        if (isdigit(c) || (c == '.' && i + 1 < len && isdigit((unsigned char)src[i + 1]))) {
            size_t j = i;
            while (j < len &&
                   (isalnum((unsigned char)src[j]) || src[j] == '_' || src[j] == '.' ||
                    ((src[j] == '+' || src[j] == '-') && j > i &&
                     (src[j - 1] == 'e' || src[j - 1] == 'E') &&
                     !(src[i] == '0' && j > i + 1 && (src[i + 1] == 'x' || src[i + 1] == 'X')))))
                j++;
            if (push(&l, EC_PYT_NUMBER, line, indent, src + i, j - i)) goto fail;
            i = j;
            line_has_tokens = 1;
            continue;
        }
        size_t oplen = 1;
        for (const char *const *o = ops3; *o && oplen == 1; o++)
            if (i + 3 <= len && !strncmp(src + i, *o, 3)) oplen = 3;
        for (const char *const *o = ops2; *o && oplen == 1; o++)
            if (i + 2 <= len && !strncmp(src + i, *o, 2)) oplen = 2;
        if (oplen == 1) {
            if (strchr("([{", c))
                depth++;
            else if (strchr(")]}", c) && depth > 0)
                depth--;
        }
        if (push(&l, EC_PYT_OP, line, indent, src + i, oplen)) goto fail;
        i += oplen;
        line_has_tokens = 1;
    }
    if (line_has_tokens && push(&l, EC_PYT_NEWLINE, line, indent, "\n", 1)) goto fail;
    *out = l.v;
    *nout = l.n;
    return 0;
fail:
    ec_py_tokens_free(l.v, l.n);
    *out = NULL;
    *nout = 0;
    return -1;
}

void ec_py_tokens_free(ec_pytoken *t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(t[i].text);
    free(t);
}
