/* tokenizer_json_steps.c — the normalizers, pre-tokenizers, post-processor and decoders of
 * Hugging Face tokenizer.json files that the Llama, Mistral, Yi, Qwen and GPT-2 families use.
 * Unicode categories (\p{L}, \p{N}) come from PCRE2 in UTF + UCP mode and normalization forms
 * from ICU, so no Unicode tables live here. */
#include "tokenizer_json_steps.h"

#include "ecocompute/common.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unicode/unorm2.h>
#include <unicode/ustring.h>

/* GPT-2's pre-tokenizer regex, which ByteLevel applies when use_regex is true. */
static const char gpt2_pattern[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

typedef enum { NORM_NFC, NORM_NFD, NORM_NFKC, NORM_NFKD, NORM_PREPEND, NORM_REPLACE } norm_kind;
typedef struct {
    norm_kind kind;
    char *a, *b; /* Prepend: a; Replace: a -> b */
} norm_step;

typedef enum { SPLIT_ISOLATED, SPLIT_REMOVED, SPLIT_WITH_PREVIOUS, SPLIT_WITH_NEXT } split_mode;
typedef enum { PREPEND_NEVER, PREPEND_ALWAYS, PREPEND_FIRST } prepend_scheme;
typedef enum { PRE_SPLIT, PRE_BYTE_LEVEL, PRE_METASPACE } pre_kind;
typedef struct {
    pre_kind kind;
    pcre2_code *re;         /* Split; ByteLevel with use_regex */
    split_mode mode;        /* Split */
    int add_prefix_space;   /* ByteLevel */
    char *replacement;      /* Metaspace */
    prepend_scheme prepend; /* Metaspace */
    int split;              /* Metaspace */
} pre_step;

typedef enum { DEC_BYTE_LEVEL, DEC_REPLACE, DEC_BYTE_FALLBACK, DEC_FUSE, DEC_STRIP, DEC_METASPACE } dec_kind;
typedef struct {
    dec_kind kind;
    char *a, *b;            /* Replace: a -> b; Strip: a = content; Metaspace: a = replacement */
    int start, stop;        /* Strip */
    prepend_scheme prepend; /* Metaspace */
} dec_step;

struct json_steps {
    norm_step norm[16];
    int n_norm;
    pre_step pre[16];
    int n_pre;
    dec_step dec[16];
    int n_dec, has_decoder;
    ec_ids prefix, suffix;
};

enum { MAX_STEPS = 16 };

/* ---- byte-level alphabet: GPT-2's bytes_to_unicode ---- */

static int byte_char[256];  /* byte -> code point */
static int char_byte[324];  /* code point -> byte, -1 for none */

static void byte_level_init(void)
{
    if (byte_char['!']) return; /* '!' maps to itself, so nonzero once built */
    int n = 0;
    for (int b = 0; b < 256; b++) {
        int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        byte_char[b] = printable ? b : 256 + n++;
    }
    for (int c = 0; c < 324; c++) char_byte[c] = -1;
    for (int b = 0; b < 256; b++) char_byte[byte_char[b]] = b;
}

static size_t put_utf8(char *out, int cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2; /* the alphabet stays below U+0800 */
}

/* ---- lists and buffers ---- */

int piece_list_push(piece_list *l, const char *s, size_t len, int at_start)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        text_piece *v = realloc(l->v, cap * sizeof *v);
        if (!v) return ec_set_error("tokenizer: out of memory");
        l->v = v;
        l->cap = cap;
    }
    char *copy = malloc(len + 1);
    if (!copy) return ec_set_error("tokenizer: out of memory");
    memcpy(copy, s, len);
    copy[len] = '\0';
    l->v[l->n++] = (text_piece){copy, len, at_start};
    return 0;
}

void piece_list_free(piece_list *l)
{
    for (size_t i = 0; i < l->n; i++) free(l->v[i].s);
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

/* text with every occurrence of `from` replaced by `to`, malloc'd. */
static char *replace_all(const char *text, size_t len, const char *from, const char *to, size_t *out_len)
{
    size_t fl = strlen(from), tl = strlen(to), count = 0;
    for (size_t i = 0; fl && i + fl <= len; i++)
        if (!memcmp(text + i, from, fl)) {
            count++;
            i += fl - 1;
        }
    size_t n = len - count * fl + count * tl;
    char *out = malloc(n + 1), *w = out;
    if (!out) return NULL;
    for (size_t i = 0; i < len;) {
        if (fl && i + fl <= len && !memcmp(text + i, from, fl)) {
            memcpy(w, to, tl);
            w += tl;
            i += fl;
        } else {
            *w++ = text[i++];
        }
    }
    *w = '\0';
    *out_len = n;
    return out;
}

static char *concat(const char *a, size_t alen, const char *b, size_t blen)
{
    char *out = malloc(alen + blen + 1);
    if (!out) return NULL;
    memcpy(out, a, alen);
    memcpy(out + alen, b, blen);
    out[alen + blen] = '\0';
    return out;
}

/* ---- reading the steps ---- */

static const char *type_of(const cJSON *o)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "type");
    return cJSON_IsString(t) ? t->valuestring : NULL;
}

static const char *string_field(const cJSON *o, const char *key)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(f) ? f->valuestring : NULL;
}

/* A Replace pattern: {"String": "..."} (regex patterns are not supported). */
static const char *replace_pattern(const cJSON *o, const char *path, const char *field)
{
    const char *s = string_field(cJSON_GetObjectItemCaseSensitive(o, "pattern"), "String");
    if (!s || !s[0])
        ec_set_error("%s: %s.pattern: only a non-empty {\"String\": ...} pattern is supported", path, field);
    return s && s[0] ? s : NULL;
}

static int dup2(char **a, const char *sa, char **b, const char *sb, const char *path)
{
    *a = sa ? strdup(sa) : NULL;
    *b = sb ? strdup(sb) : NULL;
    if ((sa && !*a) || (sb && !*b)) return ec_set_error("%s: out of memory", path);
    return 0;
}

/* The list of steps of a Sequence ("normalizers", "pretokenizers", "decoders") or the step. */
typedef int (*step_reader)(json_steps *s, const cJSON *o, const char *path, const char *field);

static int read_steps(json_steps *s, const cJSON *o, const char *path, const char *field,
                      const char *list_key, step_reader read_one)
{
    if (!o || cJSON_IsNull(o)) return 0;
    if (!cJSON_IsObject(o)) return ec_set_error("%s: %s: not an object", path, field);
    const char *type = type_of(o);
    if (!type) return ec_set_error("%s: %s.type: missing", path, field);
    if (strcmp(type, "Sequence")) return read_one(s, o, path, field);
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(o, list_key), *e;
    if (!cJSON_IsArray(list)) return ec_set_error("%s: %s.%s: missing or not an array", path, field, list_key);
    int i = 0;
    cJSON_ArrayForEach(e, list)
    {
        char sub[128];
        if (snprintf(sub, sizeof sub, "%s.%s[%d]", field, list_key, i++) >= (int)sizeof sub)
            return ec_set_error("%s: %s: sequences nested too deeply", path, field);
        if (read_steps(s, e, path, sub, list_key, read_one)) return -1;
    }
    return 0;
}

static int read_normalizer(json_steps *s, const cJSON *o, const char *path, const char *field)
{
    if (s->n_norm == MAX_STEPS) return ec_set_error("%s: %s: more than %d steps", path, field, MAX_STEPS);
    const char *type = type_of(o);
    norm_step *n = &s->norm[s->n_norm];
    memset(n, 0, sizeof *n);
    static const char *const forms[] = {"NFC", "NFD", "NFKC", "NFKD"};
    for (int f = 0; f < 4; f++)
        if (!strcmp(type, forms[f])) {
            n->kind = (norm_kind)f;
            s->n_norm++;
            return 0;
        }
    if (!strcmp(type, "Prepend")) {
        const char *p = string_field(o, "prepend");
        if (!p) return ec_set_error("%s: %s.prepend: missing or not a string", path, field);
        n->kind = NORM_PREPEND;
        if (dup2(&n->a, p, &n->b, NULL, path)) return -1;
    } else if (!strcmp(type, "Replace")) {
        const char *from = replace_pattern(o, path, field), *to = string_field(o, "content");
        if (!from) return -1;
        if (!to) return ec_set_error("%s: %s.content: missing or not a string", path, field);
        n->kind = NORM_REPLACE;
        if (dup2(&n->a, from, &n->b, to, path)) return -1;
    } else {
        return ec_set_error("%s: %s.type: normalizer '%.40s' is not supported (NFC, NFD, NFKC, "
                            "NFKD, Prepend, Replace, Sequence)", path, field, type);
    }
    s->n_norm++;
    return 0;
}

static int compile(pcre2_code **re, const char *pattern, int literal, const char *path, const char *field)
{
    int err;
    PCRE2_SIZE at;
    *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
                        PCRE2_UTF | PCRE2_UCP | (literal ? PCRE2_LITERAL : 0), &err, &at, NULL);
    if (!*re) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(err, msg, sizeof msg);
        return ec_set_error("%s: %s.pattern: bad regex at offset %zu: %s", path, field, (size_t)at,
                            (const char *)msg);
    }
    return 0;
}

static prepend_scheme read_prepend(const cJSON *o)
{
    const char *scheme = string_field(o, "prepend_scheme");
    if (scheme) return !strcmp(scheme, "always") ? PREPEND_ALWAYS : !strcmp(scheme, "first") ? PREPEND_FIRST : PREPEND_NEVER;
    const cJSON *add = cJSON_GetObjectItemCaseSensitive(o, "add_prefix_space");
    return add && !cJSON_IsFalse(add) ? PREPEND_ALWAYS : PREPEND_NEVER;
}

static int read_split(pre_step *p, const cJSON *o, const char *path, const char *field)
{
    const cJSON *pattern = cJSON_GetObjectItemCaseSensitive(o, "pattern");
    const char *regex = string_field(pattern, "Regex"), *literal = string_field(pattern, "String");
    if (!regex && !literal)
        return ec_set_error("%s: %s.pattern: needs {\"Regex\": ...} or {\"String\": ...}", path, field);
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "invert")))
        return ec_set_error("%s: %s.invert: true is not supported", path, field);
    const char *behavior = string_field(o, "behavior");
    static const char *const modes[] = {"Isolated", "Removed", "MergedWithPrevious", "MergedWithNext"};
    int mode = -1;
    for (int m = 0; behavior && m < 4; m++)
        if (!strcmp(behavior, modes[m])) mode = m;
    if (mode < 0)
        return ec_set_error("%s: %s.behavior: '%.40s' is not supported (Isolated, Removed, "
                            "MergedWithPrevious, MergedWithNext)", path, field, behavior ? behavior : "missing");
    p->mode = (split_mode)mode;
    return compile(&p->re, regex ? regex : literal, !regex, path, field);
}

static int read_pre_tokenizer(json_steps *s, const cJSON *o, const char *path, const char *field)
{
    if (s->n_pre == MAX_STEPS) return ec_set_error("%s: %s: more than %d steps", path, field, MAX_STEPS);
    const char *type = type_of(o);
    pre_step *p = &s->pre[s->n_pre];
    memset(p, 0, sizeof *p);
    if (!strcmp(type, "Split")) {
        p->kind = PRE_SPLIT;
        if (read_split(p, o, path, field)) return -1;
    } else if (!strcmp(type, "ByteLevel")) {
        p->kind = PRE_BYTE_LEVEL;
        p->add_prefix_space = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "add_prefix_space"));
        const cJSON *use_regex = cJSON_GetObjectItemCaseSensitive(o, "use_regex");
        p->mode = SPLIT_ISOLATED;
        if ((!use_regex || cJSON_IsTrue(use_regex)) && compile(&p->re, gpt2_pattern, 0, path, field)) return -1;
    } else if (!strcmp(type, "Metaspace")) {
        const char *r = string_field(o, "replacement");
        if (!r || !r[0]) return ec_set_error("%s: %s.replacement: missing or empty", path, field);
        p->kind = PRE_METASPACE;
        p->prepend = read_prepend(o);
        const cJSON *split = cJSON_GetObjectItemCaseSensitive(o, "split");
        p->split = !split || cJSON_IsTrue(split);
        if (!(p->replacement = strdup(r))) return ec_set_error("%s: out of memory", path);
    } else {
        return ec_set_error("%s: %s.type: pre-tokenizer '%.40s' is not supported (Split, "
                            "ByteLevel, Metaspace, Sequence)", path, field, type);
    }
    s->n_pre++;
    return 0;
}

static int read_decoder(json_steps *s, const cJSON *o, const char *path, const char *field)
{
    if (s->n_dec == MAX_STEPS) return ec_set_error("%s: %s: more than %d steps", path, field, MAX_STEPS);
    const char *type = type_of(o);
    dec_step *d = &s->dec[s->n_dec];
    memset(d, 0, sizeof *d);
    if (!strcmp(type, "ByteLevel")) {
        d->kind = DEC_BYTE_LEVEL;
    } else if (!strcmp(type, "ByteFallback")) {
        d->kind = DEC_BYTE_FALLBACK;
    } else if (!strcmp(type, "Fuse")) {
        d->kind = DEC_FUSE;
    } else if (!strcmp(type, "Replace")) {
        const char *from = replace_pattern(o, path, field), *to = string_field(o, "content");
        if (!from) return -1;
        if (!to) return ec_set_error("%s: %s.content: missing or not a string", path, field);
        d->kind = DEC_REPLACE;
        if (dup2(&d->a, from, &d->b, to, path)) return -1;
    } else if (!strcmp(type, "Strip")) {
        const char *content = string_field(o, "content");
        const cJSON *start = cJSON_GetObjectItemCaseSensitive(o, "start");
        const cJSON *stop = cJSON_GetObjectItemCaseSensitive(o, "stop");
        if (!content || !cJSON_IsNumber(start) || !cJSON_IsNumber(stop) || start->valuedouble < 0 ||
            stop->valuedouble < 0 || start->valuedouble > 1e6 || stop->valuedouble > 1e6)
            return ec_set_error("%s: %s: Strip needs content (string), start and stop (counts)", path, field);
        d->kind = DEC_STRIP;
        d->start = (int)start->valuedouble;
        d->stop = (int)stop->valuedouble;
        if (dup2(&d->a, content, &d->b, NULL, path)) return -1;
    } else if (!strcmp(type, "Metaspace")) {
        const char *r = string_field(o, "replacement");
        if (!r || !r[0]) return ec_set_error("%s: %s.replacement: missing or empty", path, field);
        d->kind = DEC_METASPACE;
        d->prepend = read_prepend(o);
        if (dup2(&d->a, r, &d->b, NULL, path)) return -1;
    } else {
        return ec_set_error("%s: %s.type: decoder '%.40s' is not supported (ByteLevel, Replace, "
                            "ByteFallback, Fuse, Strip, Metaspace, Sequence)", path, field, type);
    }
    s->n_dec++;
    return 0;
}

/* The ids of special_tokens[name] of a TemplateProcessing. */
static int template_ids(const cJSON *o, const char *name, ec_ids *to, const char *path, const char *field)
{
    const cJSON *tok = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "special_tokens"), name);
    const cJSON *ids = cJSON_GetObjectItemCaseSensitive(tok, "ids"), *e;
    if (!cJSON_IsArray(ids))
        return ec_set_error("%s: %s.special_tokens: \"%.40s\" missing or without ids", path, field, name);
    cJSON_ArrayForEach(e, ids)
    {
        if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble >= (1 << 24))
            return ec_set_error("%s: %s.special_tokens.%.40s.ids: not a token id", path, field, name);
        if (ec_ids_push(to, (int)e->valuedouble)) return -1;
    }
    return 0;
}

/* A [token, id] pair of RobertaProcessing / BertProcessing. */
static int pair_id(const cJSON *o, const char *key, ec_ids *to, const char *path, const char *field)
{
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, key);
    const cJSON *id = cJSON_GetArrayItem(p, 1);
    if (!cJSON_IsArray(p) || !cJSON_IsNumber(id) || id->valuedouble < 0 || id->valuedouble >= (1 << 24))
        return ec_set_error("%s: %s.%s: not a [token, id] pair", path, field, key);
    return ec_ids_push(to, (int)id->valuedouble);
}

static int read_post_processor(json_steps *s, const cJSON *o, const char *path, const char *field)
{
    const char *type = type_of(o);
    if (!strcmp(type, "ByteLevel")) return 0; /* changes offsets only, never ids */
    if (!strcmp(type, "RobertaProcessing") || !strcmp(type, "BertProcessing"))
        return pair_id(o, "cls", &s->prefix, path, field) || pair_id(o, "sep", &s->suffix, path, field) ? -1 : 0;
    if (strcmp(type, "TemplateProcessing"))
        return ec_set_error("%s: %s.type: post-processor '%.40s' is not supported "
                            "(TemplateProcessing, ByteLevel, RobertaProcessing, BertProcessing, Sequence)",
                            path, field, type);
    const cJSON *single = cJSON_GetObjectItemCaseSensitive(o, "single"), *e;
    if (!cJSON_IsArray(single)) return ec_set_error("%s: %s.single: missing or not an array", path, field);
    int seen_sequence = 0;
    cJSON_ArrayForEach(e, single)
    {
        const cJSON *special = cJSON_GetObjectItemCaseSensitive(e, "SpecialToken");
        if (cJSON_GetObjectItemCaseSensitive(e, "Sequence")) {
            seen_sequence = 1;
            continue;
        }
        const char *name = string_field(special, "id");
        if (!name) return ec_set_error("%s: %s.single: an item is neither SpecialToken nor Sequence", path, field);
        if (template_ids(o, name, seen_sequence ? &s->suffix : &s->prefix, path, field)) return -1;
    }
    return 0;
}

void json_steps_free(json_steps *s)
{
    if (!s) return;
    for (int i = 0; i < s->n_norm; i++) {
        free(s->norm[i].a);
        free(s->norm[i].b);
    }
    for (int i = 0; i < s->n_pre; i++) {
        pcre2_code_free(s->pre[i].re);
        free(s->pre[i].replacement);
    }
    for (int i = 0; i < s->n_dec; i++) {
        free(s->dec[i].a);
        free(s->dec[i].b);
    }
    free(s->prefix.v);
    free(s->suffix.v);
    free(s);
}

int json_steps_load(json_steps **out, const cJSON *root, const char *path)
{
    *out = NULL;
    json_steps *s = calloc(1, sizeof *s);
    if (!s) return ec_set_error("%s: out of memory", path);
    byte_level_init();
    const cJSON *decoder = cJSON_GetObjectItemCaseSensitive(root, "decoder");
    s->has_decoder = decoder && !cJSON_IsNull(decoder);
    int rc = read_steps(s, cJSON_GetObjectItemCaseSensitive(root, "normalizer"), path, "normalizer",
                        "normalizers", read_normalizer);
    if (rc == 0)
        rc = read_steps(s, cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"), path,
                        "pre_tokenizer", "pretokenizers", read_pre_tokenizer);
    if (rc == 0) rc = read_steps(s, decoder, path, "decoder", "decoders", read_decoder);
    if (rc == 0)
        rc = read_steps(s, cJSON_GetObjectItemCaseSensitive(root, "post_processor"), path,
                        "post_processor", "processors", read_post_processor);
    if (rc != 0) {
        json_steps_free(s);
        return -1;
    }
    *out = s;
    return 0;
}

const ec_ids *json_steps_prefix(const json_steps *s) { return &s->prefix; }
const ec_ids *json_steps_suffix(const json_steps *s) { return &s->suffix; }

/* ---- normalizing ---- */

static char *unicode_normalize(norm_kind kind, const char *text, size_t len, size_t *out_len)
{
    size_t i = 0;
    while (i < len && (unsigned char)text[i] < 0x80) i++;
    if (i == len) return concat(text, len, "", 0); /* ASCII is in every normal form */
    UErrorCode e = U_ZERO_ERROR;
    const UNormalizer2 *form = kind == NORM_NFC    ? unorm2_getNFCInstance(&e)
                               : kind == NORM_NFD  ? unorm2_getNFDInstance(&e)
                               : kind == NORM_NFKC ? unorm2_getNFKCInstance(&e)
                                                   : unorm2_getNFKDInstance(&e);
    if (U_FAILURE(e) || len > INT32_MAX / 8) return NULL;
    int32_t n16 = 0, cap = (int32_t)len * 4 + 16;
    UChar *src = malloc((size_t)len * sizeof *src + sizeof *src);
    UChar *dst = malloc((size_t)cap * sizeof *dst);
    char *out = NULL;
    if (src && dst) u_strFromUTF8(src, (int32_t)len + 1, &n16, text, (int32_t)len, &e);
    int32_t nn = src && dst && U_SUCCESS(e) ? unorm2_normalize(form, src, n16, dst, cap, &e) : 0;
    int32_t n8 = 0;
    if (src && dst && U_SUCCESS(e)) {
        out = malloc((size_t)nn * 3 + 1);
        if (out) u_strToUTF8(out, nn * 3 + 1, &n8, dst, nn, &e);
    }
    free(src);
    free(dst);
    if (!out || U_FAILURE(e)) {
        free(out);
        return NULL;
    }
    *out_len = (size_t)n8;
    return out;
}

int json_steps_normalize(const json_steps *s, const char *text, size_t len, char **out, size_t *out_len)
{
    char *cur = concat(text, len, "", 0);
    size_t n = len;
    for (int i = 0; cur && i < s->n_norm; i++) {
        const norm_step *st = &s->norm[i];
        char *next;
        size_t next_len = n;
        if (st->kind == NORM_PREPEND) {
            if (n == 0) continue; /* the reference prepends to non-empty text only */
            next = concat(st->a, strlen(st->a), cur, n);
            next_len = strlen(st->a) + n;
        } else if (st->kind == NORM_REPLACE) {
            next = replace_all(cur, n, st->a, st->b, &next_len);
        } else {
            next = unicode_normalize(st->kind, cur, n, &next_len);
        }
        free(cur);
        cur = next;
        n = next_len;
    }
    if (!cur) return ec_set_error("tokenizer: cannot normalize the text (out of memory or bad UTF-8)");
    *out = cur;
    *out_len = n;
    return 0;
}

/* ---- pre-tokenizing ---- */

/* Splits text at the matches of re, keeping what `mode` keeps, into out. */
static int regex_split(pcre2_match_data *match, const pcre2_code *re, split_mode mode, const char *text,
                       size_t len, int at_start, piece_list *out)
{
    size_t pos = 0, piece_start = 0;
    while (pos <= len) {
        int rc = pcre2_match(re, (PCRE2_SPTR)text, len, pos, pos ? PCRE2_NO_UTF_CHECK : 0, match, NULL);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(rc, msg, sizeof msg);
            return ec_set_error("tokenizer: pre-tokenizer regex: %s", (const char *)msg);
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(match);
        size_t m0 = ov[0], m1 = ov[1];
        if (m1 == m0) { /* empty match: no piece; step over one character */
            pos = m0 + 1;
            while (pos < len && ((unsigned char)text[pos] & 0xC0) == 0x80) pos++;
            if (m0 >= len) break;
            continue;
        }
        /* the gap before the match, then the match */
        if (mode == SPLIT_WITH_NEXT) {
            if (m0 > piece_start && piece_list_push(out, text + piece_start, m0 - piece_start, at_start && !piece_start)) return -1;
            piece_start = m0;
        } else if (mode == SPLIT_WITH_PREVIOUS) {
            if (piece_list_push(out, text + piece_start, m1 - piece_start, at_start && !piece_start)) return -1;
            piece_start = m1;
        } else {
            if (m0 > piece_start && piece_list_push(out, text + piece_start, m0 - piece_start, at_start && !piece_start)) return -1;
            if (mode == SPLIT_ISOLATED && piece_list_push(out, text + m0, m1 - m0, at_start && !m0)) return -1;
            piece_start = m1;
        }
        pos = m1;
    }
    if (piece_start < len && piece_list_push(out, text + piece_start, len - piece_start, at_start && !piece_start)) return -1;
    return 0;
}

/* The bytes of text written in the byte-level alphabet. */
static int byte_level_map(const text_piece *p, int add_prefix_space, piece_list *out)
{
    int prefix = add_prefix_space && !(p->len && p->s[0] == ' ');
    char *buf = malloc(2 * (p->len + 1) + 1), *w = buf;
    if (!buf) return ec_set_error("tokenizer: out of memory");
    if (prefix) w += put_utf8(w, byte_char[' ']);
    for (size_t i = 0; i < p->len; i++) w += put_utf8(w, byte_char[(unsigned char)p->s[i]]);
    int rc = piece_list_push(out, buf, (size_t)(w - buf), p->at_start);
    free(buf);
    return rc;
}

static int metaspace(const pre_step *st, const text_piece *p, piece_list *out)
{
    size_t n;
    char *replaced = replace_all(p->s, p->len, " ", st->replacement, &n);
    if (!replaced) return ec_set_error("tokenizer: out of memory");
    size_t rl = strlen(st->replacement);
    int prepend = (st->prepend == PREPEND_ALWAYS || (st->prepend == PREPEND_FIRST && p->at_start)) &&
                  !(n >= rl && !memcmp(replaced, st->replacement, rl));
    char *full = prepend ? concat(st->replacement, rl, replaced, n) : replaced;
    if (prepend) {
        free(replaced);
        n += rl;
    }
    if (!full) return ec_set_error("tokenizer: out of memory");
    int rc = 0;
    if (!st->split) {
        rc = piece_list_push(out, full, n, p->at_start);
    } else { /* each piece starts at a replacement character (MergedWithNext) */
        size_t start = 0;
        for (size_t i = 1; rc == 0 && i + rl <= n; i++)
            if (!memcmp(full + i, st->replacement, rl)) {
                rc = piece_list_push(out, full + start, i - start, p->at_start && !start);
                start = i;
            }
        if (rc == 0 && start < n) rc = piece_list_push(out, full + start, n - start, p->at_start && !start);
    }
    free(full);
    return rc;
}

int json_steps_pre_tokenize(const json_steps *s, const char *text, size_t len, int at_start, piece_list *words)
{
    piece_list cur = {NULL, 0, 0}, next = {NULL, 0, 0};
    /* Match data of this call alone (room for any pattern's groups), so encoding is reentrant. */
    pcre2_match_data *match = pcre2_match_data_create(64, NULL);
    int rc = match ? piece_list_push(&cur, text, len, at_start) : ec_set_error("tokenizer: out of memory");
    for (int i = 0; rc == 0 && i < s->n_pre; i++) {
        const pre_step *st = &s->pre[i];
        for (size_t k = 0; rc == 0 && k < cur.n; k++) {
            const text_piece *p = &cur.v[k];
            if (st->kind == PRE_SPLIT) {
                rc = regex_split(match, st->re, st->mode, p->s, p->len, p->at_start, &next);
            } else if (st->kind == PRE_METASPACE) {
                rc = metaspace(st, p, &next);
            } else if (!st->re) {
                rc = byte_level_map(p, st->add_prefix_space, &next);
            } else { /* ByteLevel with GPT-2's regex: prefix space, split, then map */
                piece_list split = {NULL, 0, 0};
                int prefix = st->add_prefix_space && !(p->len && p->s[0] == ' ');
                char *spaced = prefix ? concat(" ", 1, p->s, p->len) : NULL;
                rc = prefix && !spaced ? ec_set_error("tokenizer: out of memory")
                     : regex_split(match, st->re, SPLIT_ISOLATED, spaced ? spaced : p->s, p->len + (size_t)prefix,
                                   p->at_start, &split);
                for (size_t j = 0; rc == 0 && j < split.n; j++) rc = byte_level_map(&split.v[j], 0, &next);
                free(spaced);
                piece_list_free(&split);
            }
        }
        piece_list_free(&cur);
        cur = next;
        next = (piece_list){NULL, 0, 0};
    }
    for (size_t k = 0; rc == 0 && k < cur.n; k++)
        if (cur.v[k].len) rc = piece_list_push(words, cur.v[k].s, cur.v[k].len, cur.v[k].at_start);
    piece_list_free(&cur);
    piece_list_free(&next);
    pcre2_match_data_free(match);
    return rc;
}

/* ---- decoding ---- */

/* A token "<0xNN>": its byte, or -1. */
static int byte_token(const char *t)
{
    unsigned v;
    char hex[3] = {0};
    if (strlen(t) != 6 || strncmp(t, "<0x", 3) || t[5] != '>') return -1;
    memcpy(hex, t + 3, 2);
    for (int i = 0; i < 2; i++)
        if (!strchr("0123456789abcdefABCDEF", hex[i])) return -1;
    sscanf(hex, "%x", &v);
    return (int)v;
}

static int is_valid_utf8(const unsigned char *b, size_t n)
{
    char *tmp = NULL;
    size_t len = 0;
    if (ec_utf8_lossy_append(&tmp, &len, b, n)) return -1;
    int same = len == n && !memcmp(tmp, b, n);
    free(tmp);
    return same;
}

/* Consecutive <0xNN> tokens become their bytes when those form UTF-8, else one U+FFFD per byte. */
static int byte_fallback(piece_list *in, piece_list *out)
{
    unsigned char *bytes = malloc(in->n + 1);
    size_t nb = 0;
    int rc = bytes ? 0 : ec_set_error("tokenizer: out of memory");
    for (size_t i = 0; rc == 0 && i <= in->n; i++) {
        int b = i < in->n ? byte_token(in->v[i].s) : -1;
        if (b >= 0) {
            bytes[nb++] = (unsigned char)b;
            continue;
        }
        if (nb) {
            int valid = is_valid_utf8(bytes, nb);
            if (valid < 0) rc = -1;
            else if (valid) rc = piece_list_push(out, (char *)bytes, nb, 0);
            else
                for (size_t k = 0; rc == 0 && k < nb; k++) rc = piece_list_push(out, "\xEF\xBF\xBD", 3, 0);
            nb = 0;
        }
        if (rc == 0 && i < in->n) rc = piece_list_push(out, in->v[i].s, in->v[i].len, 0);
    }
    free(bytes);
    return rc;
}

/* Joins every token, one piece. */
static int fuse(piece_list *in, piece_list *out)
{
    size_t n = 0;
    for (size_t i = 0; i < in->n; i++) n += in->v[i].len;
    char *all = malloc(n + 1), *w = all;
    if (!all) return ec_set_error("tokenizer: out of memory");
    for (size_t i = 0; i < in->n; i++) {
        memcpy(w, in->v[i].s, in->v[i].len);
        w += in->v[i].len;
    }
    int rc = piece_list_push(out, all, n, 0);
    free(all);
    return rc;
}

/* Byte-level tokens back to bytes (a token with a character outside the alphabet keeps its
 * own bytes), all joined and made valid UTF-8. */
static int byte_level_decode(piece_list *in, piece_list *out)
{
    unsigned char *bytes = NULL;
    size_t nb = 0, total = 0;
    for (size_t i = 0; i < in->n; i++) total += in->v[i].len;
    if (!(bytes = malloc(total + 1))) return ec_set_error("tokenizer: out of memory");
    for (size_t i = 0; i < in->n; i++) {
        const unsigned char *t = (const unsigned char *)in->v[i].s;
        size_t start = nb, k = 0;
        int mapped = 1;
        while (k < in->v[i].len && mapped) {
            int cp = -1, len = 1;
            if (t[k] < 0x80) cp = t[k];
            else if ((t[k] & 0xE0) == 0xC0 && k + 1 < in->v[i].len) {
                cp = (t[k] & 0x1F) << 6 | (t[k + 1] & 0x3F);
                len = 2;
            }
            if (cp < 0 || cp >= 324 || char_byte[cp] < 0) mapped = 0;
            else bytes[nb++] = (unsigned char)char_byte[cp];
            k += (size_t)len;
        }
        if (!mapped) {
            nb = start;
            memcpy(bytes + nb, t, in->v[i].len);
            nb += in->v[i].len;
        }
    }
    char *text = NULL;
    size_t len = 0;
    int rc = ec_utf8_lossy_append(&text, &len, bytes, nb) ? ec_set_error("tokenizer: out of memory") : 0;
    if (rc == 0) rc = piece_list_push(out, text, len, 0);
    free(text);
    free(bytes);
    return rc;
}

static int strip(const dec_step *st, piece_list *in, piece_list *out)
{
    size_t cl = strlen(st->a);
    for (size_t i = 0; i < in->n; i++) {
        const char *s = in->v[i].s;
        size_t n = in->v[i].len;
        for (int k = 0; k < st->start && cl && n >= cl && !memcmp(s, st->a, cl); k++) {
            s += cl;
            n -= cl;
        }
        for (int k = 0; k < st->stop && cl && n >= cl && !memcmp(s + n - cl, st->a, cl); k++) n -= cl;
        if (piece_list_push(out, s, n, 0)) return -1;
    }
    return 0;
}

/* Replace-style steps token by token; Metaspace also drops the first token's leading space. */
static int per_token(const dec_step *st, piece_list *in, piece_list *out)
{
    for (size_t i = 0; i < in->n; i++) {
        size_t n;
        char *r = st->kind == DEC_REPLACE ? replace_all(in->v[i].s, in->v[i].len, st->a, st->b, &n)
                                          : replace_all(in->v[i].s, in->v[i].len, st->a, " ", &n);
        if (!r) return ec_set_error("tokenizer: out of memory");
        int drop = st->kind == DEC_METASPACE && st->prepend != PREPEND_NEVER && i == 0 && n && r[0] == ' ';
        int rc = piece_list_push(out, r + drop, n - (size_t)drop, 0);
        free(r);
        if (rc) return -1;
    }
    return 0;
}

char *json_steps_decode(const json_steps *s, const char *const *tokens, size_t n)
{
    piece_list cur = {NULL, 0, 0}, next = {NULL, 0, 0};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) rc = piece_list_push(&cur, tokens[i], strlen(tokens[i]), 0);
    for (int i = 0; rc == 0 && i < s->n_dec; i++) {
        const dec_step *st = &s->dec[i];
        switch (st->kind) {
        case DEC_BYTE_LEVEL: rc = byte_level_decode(&cur, &next); break;
        case DEC_BYTE_FALLBACK: rc = byte_fallback(&cur, &next); break;
        case DEC_FUSE: rc = fuse(&cur, &next); break;
        case DEC_STRIP: rc = strip(st, &cur, &next); break;
        case DEC_REPLACE:
        case DEC_METASPACE: rc = per_token(st, &cur, &next); break;
        }
        piece_list_free(&cur);
        cur = next;
        next = (piece_list){NULL, 0, 0};
    }
    /* Without a decoder the reference joins the tokens with spaces. */
    char *text = NULL;
    size_t len = 0;
    FILE *f = rc == 0 ? open_memstream(&text, &len) : NULL;
    for (size_t i = 0; f && i < cur.n; i++) {
        if (i && !s->has_decoder) fputc(' ', f);
        fwrite(cur.v[i].s, 1, cur.v[i].len, f);
    }
    if (f && fclose(f) != 0) {
        free(text);
        text = NULL;
    }
    piece_list_free(&cur);
    return text;
}
