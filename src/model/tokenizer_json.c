/* tokenizer_json.c — Hugging Face tokenizer.json (optionally gzip-compressed): added and special
 * tokens matched in the raw text first (longest at the leftmost position), each stretch between
 * them normalized, pre-tokenized and encoded by the BPE model, then the post-processor's ids;
 * decoding maps ids back to pieces and runs the decoders. BOS/EOS come from the
 * tokenizer_config.json beside the file when there is one. */
#include "bpe.h"
#include "ecocompute/common.h"
#include "tokenizer_internal.h"
#include "tokenizer_json_steps.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *content;
    size_t len;
    int id, special, lstrip, rstrip;
} added_token;

typedef struct {
    bpe_model *bpe;
    json_steps *steps;
    added_token *added; /* by content length, longest first */
    int n_added;
    unsigned char starts_added[256]; /* bytes some added token begins with */
    int vocab_size;
} json_tokenizer;

/* ---- reading ---- */

static int cmp_added(const void *x, const void *y)
{
    const added_token *a = x, *b = y;
    return (a->len < b->len) - (a->len > b->len);
}

static int load_added(json_tokenizer *j, const cJSON *list, const char *path)
{
    if (!list || cJSON_IsNull(list)) return 0;
    if (!cJSON_IsArray(list)) return ec_set_error("%s: added_tokens: not an array", path);
    int n = cJSON_GetArraySize(list), i = 0;
    j->added = calloc((size_t)n + 1, sizeof *j->added);
    if (!j->added) return ec_set_error("%s: out of memory", path);
    const cJSON *e;
    cJSON_ArrayForEach(e, list)
    {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(e, "content");
        if (!cJSON_IsNumber(id) || id->valuedouble < 0 || id->valuedouble >= (1 << 24) ||
            id->valuedouble != (int)id->valuedouble)
            return ec_set_error("%s: added_tokens[%d].id: missing or not a token id", path, i);
        if (!cJSON_IsString(content) || !content->valuestring[0])
            return ec_set_error("%s: added_tokens[%d].content: missing or empty", path, i);
        added_token *a = &j->added[j->n_added];
        if (!(a->content = strdup(content->valuestring))) return ec_set_error("%s: out of memory", path);
        j->n_added++;
        a->len = strlen(a->content);
        a->id = (int)id->valuedouble;
        a->special = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "special"));
        a->lstrip = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "lstrip"));
        a->rstrip = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "rstrip"));
        if (a->id >= j->vocab_size) j->vocab_size = a->id + 1;
        j->starts_added[(unsigned char)a->content[0]] = 1;
        i++;
    }
    qsort(j->added, (size_t)j->n_added, sizeof *j->added, cmp_added);
    return 0;
}

static const added_token *added_by_id(const json_tokenizer *j, int id)
{
    for (int i = 0; i < j->n_added; i++)
        if (j->added[i].id == id) return &j->added[i];
    return NULL;
}

static void json_free(json_tokenizer *j)
{
    if (!j) return;
    bpe_free(j->bpe);
    json_steps_free(j->steps);
    for (int i = 0; i < j->n_added; i++) free(j->added[i].content);
    free(j->added);
    free(j);
}

/* ---- encoding ---- */

/* The length of the whitespace character (Unicode White_Space, as Rust's char::is_whitespace,
 * which the reference's lstrip/rstrip use) starting at s[0..left), or 0. */
static size_t space_len(const unsigned char *s, size_t left)
{
    if (left && (s[0] == ' ' || (s[0] >= '\t' && s[0] <= '\r'))) return 1;
    if (left >= 2 && s[0] == 0xC2 && (s[1] == 0x85 || s[1] == 0xA0)) return 2;
    if (left < 3) return 0;
    unsigned cp = (unsigned)(s[0] & 0x0F) << 12 | (unsigned)(s[1] & 0x3F) << 6 | (s[2] & 0x3F);
    int three = (s[0] & 0xF0) == 0xE0 && (s[1] & 0xC0) == 0x80 && (s[2] & 0xC0) == 0x80;
    return three && (cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
                     cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000)
               ? 3
               : 0;
}

/* The length of the whitespace character that ends text[from..end), or 0. */
static size_t space_before(const char *text, size_t from, size_t end)
{
    size_t start = end;
    for (int k = 0; k < 3 && start > from; k++) {
        start--;
        if (((unsigned char)text[start] & 0xC0) != 0x80) break;
    }
    size_t n = space_len((const unsigned char *)text + start, end - start);
    return start + n == end ? n : 0;
}

/* The first added token in text[from..len): its entry, and the span it takes (with the
 * whitespace its lstrip/rstrip absorb); NULL when none. */
static const added_token *next_added(const json_tokenizer *j, const char *text, size_t from,
                                     size_t len, size_t *start, size_t *end)
{
    for (size_t p = from; p < len; p++)
        for (int i = 0; j->starts_added[(unsigned char)text[p]] && i < j->n_added; i++) {
            const added_token *a = &j->added[i];
            if (a->content[0] != text[p] || a->len > len - p || memcmp(text + p, a->content, a->len))
                continue;
            *start = p;
            *end = p + a->len;
            size_t n;
            while (a->lstrip && (n = space_before(text, from, *start)) > 0) *start -= n;
            while (a->rstrip && (n = space_len((const unsigned char *)text + *end, len - *end)) > 0)
                *end += n;
            return a;
        }
    return NULL;
}

/* One stretch of text between added tokens: normalize, pre-tokenize, BPE each word. */
static int encode_stretch(const json_tokenizer *j, const char *text, size_t len, int at_start, ec_ids *out)
{
    char *norm;
    size_t norm_len;
    piece_list words = {NULL, 0, 0};
    if (json_steps_normalize(j->steps, text, len, &norm, &norm_len)) return -1;
    int rc = json_steps_pre_tokenize(j->steps, norm, norm_len, at_start, &words);
    for (size_t i = 0; rc == 0 && i < words.n; i++) rc = bpe_encode_word(j->bpe, words.v[i].s, words.v[i].len, out);
    piece_list_free(&words);
    free(norm);
    return rc;
}

/* Offset of the first byte that does not belong to valid UTF-8, or len. */
static size_t utf8_invalid_at(const char *text, size_t len)
{
    char *copy = NULL;
    size_t n = 0, i = 0;
    if (ec_utf8_lossy_append(&copy, &n, (const unsigned char *)text, len)) return 0;
    while (i < len && i < n && copy[i] == text[i]) i++;
    free(copy);
    return i;
}

static int op_encode(const void *impl, const char *text, size_t len, int add_special, ec_ids *out)
{
    const json_tokenizer *j = impl;
    size_t bad = utf8_invalid_at(text, len);
    if (bad < len) return ec_set_error("tokenizer: the text is not valid UTF-8 (byte %zu)", bad);
    const ec_ids *prefix = json_steps_prefix(j->steps), *suffix = json_steps_suffix(j->steps);
    for (size_t i = 0; add_special && i < prefix->n; i++)
        if (ec_ids_push(out, prefix->v[i])) return -1;
    size_t pos = 0, start, end;
    while (pos < len) {
        const added_token *a = next_added(j, text, pos, len, &start, &end);
        size_t stop = a ? start : len;
        if (stop > pos && encode_stretch(j, text + pos, stop - pos, pos == 0, out)) return -1;
        if (!a) break;
        if (ec_ids_push(out, a->id)) return -1;
        pos = end;
    }
    for (size_t i = 0; add_special && i < suffix->n; i++)
        if (ec_ids_push(out, suffix->v[i])) return -1;
    return 0;
}

/* ---- the rest of the interface ---- */

static const char *op_piece(const void *impl, int id)
{
    const json_tokenizer *j = impl;
    const added_token *a = added_by_id(j, id);
    return a ? a->content : bpe_piece(j->bpe, id);
}

static char *op_decode(const void *impl, const int *ids, int n, int skip_special)
{
    const json_tokenizer *j = impl;
    const char **tokens = malloc(((size_t)n + 1) * sizeof *tokens);
    if (!tokens) return NULL;
    size_t k = 0;
    for (int i = 0; i < n; i++) {
        const added_token *a = added_by_id(j, ids[i]);
        if (skip_special && a && a->special) continue;
        tokens[k++] = op_piece(j, ids[i]);
    }
    char *text = json_steps_decode(j->steps, tokens, k);
    free(tokens);
    return text;
}

static int op_find(const void *impl, const char *piece)
{
    const json_tokenizer *j = impl;
    for (int i = 0; i < j->n_added; i++)
        if (!strcmp(j->added[i].content, piece)) return j->added[i].id;
    return bpe_find(j->bpe, piece, strlen(piece));
}

static int op_is_special(const void *impl, int id)
{
    const added_token *a = added_by_id(impl, id);
    return a && a->special;
}

static void op_destroy(void *impl) { json_free(impl); }

static const ec_tokenizer_ops json_ops = {op_encode, op_decode, op_piece, op_find, op_is_special, op_destroy};

/* A token named in tokenizer_config.json: "<s>" or {"content": "<s>", ...}. */
static int config_token(const ec_tokenizer *t, const cJSON *config, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(config, key);
    if (cJSON_IsObject(v)) v = cJSON_GetObjectItemCaseSensitive(v, "content");
    return cJSON_IsString(v) ? op_find(t->impl, v->valuestring) : -1;
}

/* The first of the usual names that is in the vocabulary. */
static int guess_token(const ec_tokenizer *t, const char *const *names)
{
    for (; *names; names++) {
        int id = op_find(t->impl, *names);
        if (id >= 0) return id;
    }
    return -1;
}

/* BOS/EOS: tokenizer_config.json beside the file, else the usual names. */
static void find_bos_eos(ec_tokenizer *t, const char *path)
{
    static const char *const bos_names[] = {"<s>", "<|begin_of_text|>", NULL};
    static const char *const eos_names[] = {"</s>", "<|end_of_text|>", "<|endoftext|>", NULL};
    const char *slash = strrchr(path, '/');
    size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
    char *config_path = malloc(dir_len + sizeof "tokenizer_config.json");
    cJSON *config = NULL;
    if (config_path) {
        memcpy(config_path, path, dir_len);
        strcpy(config_path + dir_len, "tokenizer_config.json");
        size_t len;
        char *text = ec_read_whole_file(config_path, &len);
        config = text ? cJSON_ParseWithLength(text, len) : NULL;
        free(text);
        free(config_path);
    }
    /* A config naming no token (Qwen's "bos_token": null) means none; one without the key, the
     * usual names. */
    t->bos = cJSON_GetObjectItemCaseSensitive(config, "bos_token") ? config_token(t, config, "bos_token")
                                                                   : guess_token(t, bos_names);
    t->eos = cJSON_GetObjectItemCaseSensitive(config, "eos_token") ? config_token(t, config, "eos_token")
                                                                   : guess_token(t, eos_names);
    cJSON_Delete(config);
    ec_set_error("%s", ""); /* a missing config is no error */
}

int ec_tokenizer_json_parse(ec_tokenizer *t, const char *text, size_t len, const char *path)
{
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root) {
        const char *err = cJSON_GetErrorPtr();
        return ec_set_error("%s: not valid JSON (near byte %zu)", path,
                            err && err >= text && err <= text + len ? (size_t)(err - text) : len);
    }
    json_tokenizer *j = calloc(1, sizeof *j);
    int rc = j ? 0 : ec_set_error("%s: out of memory", path);
    if (rc == 0 && !cJSON_IsObject(root)) rc = ec_set_error("%s: not a JSON object", path);
    if (rc == 0) rc = bpe_load(&j->bpe, cJSON_GetObjectItemCaseSensitive(root, "model"), path);
    if (rc == 0) {
        j->vocab_size = bpe_size(j->bpe);
        rc = load_added(j, cJSON_GetObjectItemCaseSensitive(root, "added_tokens"), path);
    }
    if (rc == 0) rc = json_steps_load(&j->steps, root, path);
    cJSON_Delete(root);
    if (rc == 0) {
        const ec_ids *pre = json_steps_prefix(j->steps), *suf = json_steps_suffix(j->steps);
        for (size_t i = 0; rc == 0 && i < pre->n + suf->n; i++) {
            int id = i < pre->n ? pre->v[i] : suf->v[i - pre->n];
            if (!op_piece(j, id)) rc = ec_set_error("%s: post_processor: id %d is not in the vocabulary", path, id);
        }
    }
    if (rc != 0) {
        json_free(j);
        return -1;
    }
    t->ops = &json_ops;
    t->impl = j;
    t->vocab_size = j->vocab_size;
    return 0;
}

int ec_tokenizer_json_open(ec_tokenizer *t, const char *path)
{
    size_t len;
    char *text = ec_read_whole_file(path, &len);
    if (!text) return -1;
    int rc = ec_tokenizer_json_parse(t, text, len, path);
    free(text);
    if (rc == 0) find_bos_eos(t, path);
    return rc;
}
