/* bpe.c — byte-pair encoding as Hugging Face's `tokenizers` BPE model does it: a word starts as
 * one symbol per character (characters missing from the vocabulary become their <0xNN> byte
 * tokens with byte_fallback, else the unknown token), then the adjacent pair with the lowest
 * merge rank is merged, leftmost first on ties, until no ranked pair is left. With
 * ignore_merges a word that is itself in the vocabulary is taken whole (Llama-3). */
#include "bpe.h"
#include "merge_heap.h"

#include "ecocompute/common.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_ID = 1 << 24 }; /* far above any real vocabulary; bounds what a file can allocate */

typedef struct {
    const char *str;
    size_t len;
    int id;
} vocab_entry;

typedef struct {
    uint64_t pair; /* left id << 32 | right id */
    int rank, new_id;
} merge_rule;

struct bpe_model {
    char **pieces;       /* [size] by id; NULL for unused ids */
    int size;
    vocab_entry *sorted; /* [n_sorted] by bytes, for lookups */
    int n_sorted;
    merge_rule *merges;  /* [n_merges] by pair */
    int n_merges;
    int unk_id;          /* -1 when none */
    int byte_fallback, fuse_unk, ignore_merges;
    int byte_id[256];    /* <0xNN> tokens, -1 when absent */
};

static int cmp_bytes(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    return c ? c : (alen > blen) - (alen < blen);
}

static int cmp_entry(const void *x, const void *y)
{
    const vocab_entry *a = x, *b = y;
    return cmp_bytes(a->str, a->len, b->str, b->len);
}

static int cmp_merge(const void *x, const void *y)
{
    const merge_rule *a = x, *b = y;
    if (a->pair != b->pair) return a->pair < b->pair ? -1 : 1;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

int bpe_find(const bpe_model *m, const char *piece, size_t len)
{
    vocab_entry key = {piece, len, 0};
    const vocab_entry *e = bsearch(&key, m->sorted, (size_t)m->n_sorted, sizeof key, cmp_entry);
    return e ? e->id : -1;
}

static const merge_rule *find_merge(const bpe_model *m, int left, int right)
{
    if (!m->n_merges) return NULL;
    merge_rule key = {(uint64_t)(uint32_t)left << 32 | (uint32_t)right, 0, 0};
    const merge_rule *lo = m->merges, *hi = m->merges + m->n_merges;
    while (lo < hi) { /* bsearch on the pair alone */
        const merge_rule *mid = lo + (hi - lo) / 2;
        if (mid->pair < key.pair)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m->merges + m->n_merges && lo->pair == key.pair ? lo : NULL;
}

const char *bpe_piece(const bpe_model *m, int id)
{
    return id >= 0 && id < m->size ? m->pieces[id] : NULL;
}

int bpe_size(const bpe_model *m) { return m->size; }

void bpe_free(bpe_model *m)
{
    if (!m) return;
    if (m->pieces)
        for (int i = 0; i < m->size; i++) free(m->pieces[i]);
    free(m->pieces);
    free(m->sorted);
    free(m->merges);
    free(m);
}

static int load_vocab(bpe_model *m, const cJSON *vocab, const char *path)
{
    if (!cJSON_IsObject(vocab))
        return ec_set_error("%s: model.vocab: missing or not an object of piece: id", path);
    int n = 0, max_id = -1;
    const cJSON *e;
    cJSON_ArrayForEach(e, vocab)
    {
        double v = cJSON_IsNumber(e) ? e->valuedouble : -1;
        if (!(v >= 0 && v < MAX_ID && v == (int)v))
            return ec_set_error("%s: model.vocab: \"%.40s\": id is not an integer in 0..%d", path,
                                e->string, MAX_ID - 1);
        if ((int)v > max_id) max_id = (int)v;
        n++;
    }
    if (n == 0) return ec_set_error("%s: model.vocab: empty", path);
    m->size = max_id + 1;
    m->pieces = calloc((size_t)m->size, sizeof *m->pieces);
    m->sorted = malloc((size_t)n * sizeof *m->sorted);
    if (!m->pieces || !m->sorted) return ec_set_error("%s: out of memory", path);
    cJSON_ArrayForEach(e, vocab)
    {
        int id = (int)e->valuedouble;
        if (m->pieces[id])
            return ec_set_error("%s: model.vocab: \"%.40s\" and \"%.40s\" share id %d", path,
                                m->pieces[id], e->string, id);
        if (!(m->pieces[id] = strdup(e->string))) return ec_set_error("%s: out of memory", path);
        m->sorted[m->n_sorted++] = (vocab_entry){m->pieces[id], strlen(e->string), id};
    }
    qsort(m->sorted, (size_t)m->n_sorted, sizeof *m->sorted, cmp_entry);
    for (int i = 1; i < m->n_sorted; i++)
        if (!cmp_entry(&m->sorted[i - 1], &m->sorted[i]))
            return ec_set_error("%s: model.vocab: \"%.40s\" appears twice", path, m->sorted[i].str);
    return 0;
}

/* One merge: "left right" (the older format) or ["left", "right"]. */
static int load_merge(bpe_model *m, const cJSON *e, int rank, const char *path)
{
    const char *left = NULL, *right = NULL;
    size_t left_len = 0;
    if (cJSON_IsString(e)) {
        const char *space = strchr(e->valuestring, ' ');
        if (space) {
            left = e->valuestring;
            left_len = (size_t)(space - left);
            right = space + 1;
        }
    } else if (cJSON_IsArray(e) && cJSON_GetArraySize(e) == 2 &&
               cJSON_IsString(cJSON_GetArrayItem(e, 0)) &&
               cJSON_IsString(cJSON_GetArrayItem(e, 1))) {
        left = cJSON_GetArrayItem(e, 0)->valuestring;
        left_len = strlen(left);
        right = cJSON_GetArrayItem(e, 1)->valuestring;
    }
    if (!left) return ec_set_error("%s: model.merges[%d]: not \"left right\" or [left, right]", path, rank);
    size_t right_len = strlen(right);
    char *joined = malloc(left_len + right_len + 1);
    if (!joined) return ec_set_error("%s: out of memory", path);
    memcpy(joined, left, left_len);
    memcpy(joined + left_len, right, right_len + 1);
    int a = bpe_find(m, left, left_len), b = bpe_find(m, right, right_len);
    int c = bpe_find(m, joined, left_len + right_len);
    if (a < 0 || b < 0 || c < 0)
        ec_set_error("%s: model.merges[%d]: \"%.40s\" is not in model.vocab", path, rank,
                     a < 0 ? left : b < 0 ? right : joined);
    free(joined);
    if (a < 0 || b < 0 || c < 0) return -1;
    m->merges[m->n_merges++] = (merge_rule){(uint64_t)(uint32_t)a << 32 | (uint32_t)b, rank, c};
    return 0;
}

static int load_merges(bpe_model *m, const cJSON *merges, const char *path)
{
    if (!merges || cJSON_IsNull(merges)) return 0;
    if (!cJSON_IsArray(merges)) return ec_set_error("%s: model.merges: not an array", path);
    int n = cJSON_GetArraySize(merges), rank = 0;
    m->merges = malloc(((size_t)n + 1) * sizeof *m->merges);
    if (!m->merges) return ec_set_error("%s: out of memory", path);
    const cJSON *e;
    cJSON_ArrayForEach(e, merges)
    {
        if (load_merge(m, e, rank++, path)) return -1;
    }
    /* A pair listed twice keeps its last rank, as the reference's hash map does. */
    qsort(m->merges, (size_t)m->n_merges, sizeof *m->merges, cmp_merge);
    int w = 0;
    for (int i = 0; i < m->n_merges; i++) {
        if (w && m->merges[w - 1].pair == m->merges[i].pair) w--;
        m->merges[w++] = m->merges[i];
    }
    m->n_merges = w;
    return 0;
}

/* The empty/null affixes are the only ones supported: Llama, Mistral, Qwen and GPT-2 use none. */
static int check_unsupported(const cJSON *model, const char *path)
{
    static const char *const empty_only[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (size_t i = 0; i < 2; i++) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(model, empty_only[i]);
        if (f && !cJSON_IsNull(f) && !(cJSON_IsString(f) && !f->valuestring[0]))
            return ec_set_error("%s: model.%s: only an empty value is supported", path,
                                empty_only[i]);
    }
    const cJSON *dropout = cJSON_GetObjectItemCaseSensitive(model, "dropout");
    if (dropout && !cJSON_IsNull(dropout) && !(cJSON_IsNumber(dropout) && dropout->valuedouble == 0))
        return ec_set_error("%s: model.dropout: BPE dropout is random; only null is supported", path);
    return 0;
}

int bpe_load(bpe_model **out, const cJSON *model, const char *path)
{
    *out = NULL;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(model, "type");
    if (!cJSON_IsObject(model)) return ec_set_error("%s: model: missing or not an object", path);
    if (type && !(cJSON_IsString(type) && !strcmp(type->valuestring, "BPE")))
        return ec_set_error("%s: model.type: '%.40s' is not supported (BPE only)", path,
                            cJSON_IsString(type) ? type->valuestring : "?");
    if (check_unsupported(model, path)) return -1;
    bpe_model *m = calloc(1, sizeof *m);
    if (!m) return ec_set_error("%s: out of memory", path);
    m->unk_id = -1;
    if (load_vocab(m, cJSON_GetObjectItemCaseSensitive(model, "vocab"), path) ||
        load_merges(m, cJSON_GetObjectItemCaseSensitive(model, "merges"), path)) {
        bpe_free(m);
        return -1;
    }
    const cJSON *unk = cJSON_GetObjectItemCaseSensitive(model, "unk_token");
    if (cJSON_IsString(unk) && (m->unk_id = bpe_find(m, unk->valuestring, strlen(unk->valuestring))) < 0) {
        ec_set_error("%s: model.unk_token: \"%.40s\" is not in model.vocab", path, unk->valuestring);
        bpe_free(m);
        return -1;
    }
    m->byte_fallback = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(model, "byte_fallback"));
    m->fuse_unk = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(model, "fuse_unk"));
    m->ignore_merges = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(model, "ignore_merges"));
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        m->byte_id[b] = bpe_find(m, name, 6);
    }
    *out = m;
    return 0;
}

/* ---- merging one word ---- */

static size_t utf8_char_len(const char *s, size_t left)
{
    unsigned char c = (unsigned char)s[0];
    size_t n = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return n <= left ? n : left;
}

/* The word's first symbols: one per character, byte tokens or the unknown token for the rest. */
static int initial_symbols(const bpe_model *m, const char *word, size_t len, ec_ids *sym)
{
    int last_unk = 0;
    for (size_t i = 0; i < len;) {
        size_t n = utf8_char_len(word + i, len - i);
        int id = bpe_find(m, word + i, n), bytes_ok = m->byte_fallback;
        for (size_t k = 0; id < 0 && bytes_ok && k < n; k++)
            bytes_ok = m->byte_id[(unsigned char)word[i + k]] >= 0;
        if (id >= 0) {
            if (ec_ids_push(sym, id)) return -1;
            last_unk = 0;
        } else if (bytes_ok) {
            for (size_t k = 0; k < n; k++)
                if (ec_ids_push(sym, m->byte_id[(unsigned char)word[i + k]])) return -1;
            last_unk = 0;
        } else if (m->unk_id >= 0 && !(m->fuse_unk && last_unk)) {
            if (ec_ids_push(sym, m->unk_id)) return -1;
            last_unk = 1;
        }
        i += n;
    }
    return 0;
}

static void consider(const bpe_model *m, merge_heap *h, const int *id, int left, int right)
{
    if (left < 0 || right < 0) return;
    const merge_rule *r = find_merge(m, id[left], id[right]);
    if (r) merge_heap_push(h, (merge_cand){r->rank, left, right, r->new_id, 0, 0});
}

int bpe_encode_word(const bpe_model *m, const char *word, size_t len, ec_ids *out)
{
    if (len == 0) return 0;
    int whole = m->ignore_merges ? bpe_find(m, word, len) : -1;
    if (whole >= 0) return ec_ids_push(out, whole);
    ec_ids sym = {NULL, 0, 0};
    if (initial_symbols(m, word, len, &sym)) {
        free(sym.v);
        return -1;
    }
    int n = (int)sym.n, rc = 0;
    int *next = malloc(((size_t)n + 1) * sizeof *next), *prev = malloc(((size_t)n + 1) * sizeof *prev);
    char *dead = calloc((size_t)n + 1, 1);
    /* Each merge adds at most two candidates to the n - 1 initial ones. */
    merge_heap h = {malloc(3 * ((size_t)n + 1) * sizeof *h.a), 0};
    if (!next || !prev || !dead || !h.a) {
        rc = ec_set_error("tokenizer: out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        prev[i] = i - 1;
        next[i] = i + 1 < n ? i + 1 : -1;
    }
    for (int i = 0; i + 1 < n; i++) consider(m, &h, sym.v, i, i + 1);
    while (h.n) {
        merge_cand c = merge_heap_pop(&h);
        /* Stale when the left symbol is gone or its pair no longer merges into the same token
         * (the reference's test, which ignores the right symbol the candidate was made with). */
        if (dead[c.left] || next[c.left] < 0) continue;
        int right = next[c.left];
        const merge_rule *r = find_merge(m, sym.v[c.left], sym.v[right]);
        if (!r || r->new_id != c.id) continue;
        sym.v[c.left] = c.id;
        dead[right] = 1;
        next[c.left] = next[right];
        if (next[right] >= 0) prev[next[right]] = c.left;
        consider(m, &h, sym.v, prev[c.left], c.left);
        consider(m, &h, sym.v, c.left, next[c.left]);
    }
    for (int i = n ? 0 : -1; rc == 0 && i >= 0; i = next[i]) rc = ec_ids_push(out, sym.v[i]);
done:
    free(next);
    free(prev);
    free(dead);
    free(h.a);
    free(sym.v);
    return rc;
}
