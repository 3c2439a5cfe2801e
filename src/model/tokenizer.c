/* tokenizer.c — the llama2.c tokenizer: loads tokenizer.bin-format vocabularies (int32
 * max_token_length, then per token float32 score, int32 length, bytes), encodes with run.c's
 * score-driven BPE (dummy prefix space, UTF-8 code points, byte fallback to ids 3..258) and
 * decodes with run.c's rules. Encoding gives exactly run.c's tokens, but in O(n log n): run.c
 * rescans the whole sequence per merge, too slow for a 1.3 MB WikiText file. */
#include "ecocompute/common.h"
#include "model_internal.h"

#include <stdlib.h>
#include <string.h>

#define BYTE_TOKEN0 3     /* ids 3..258 are <0x00>..<0xFF> */
#define NO_MERGE -1e10f   /* run.c's initial best score: pairs scoring at or below never merge */

typedef struct {
    const char *str;
    int id;
} vocab_entry;

struct ec_tokenizer {
    int vocab_size;
    int max_len;                /* longest token in bytes */
    char **vocab;               /* [vocab_size] NUL-terminated pieces, pointing into `text` */
    float *scores;              /* [vocab_size] merge priority */
    vocab_entry *sorted;        /* [vocab_size] by strcmp, for lookups */
    char *text;                 /* all pieces, back to back */
    char byte_pieces[512];      /* byte b as a one-character string at [2b] */
};

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const vocab_entry *)a)->str, ((const vocab_entry *)b)->str);
}

static int lookup(const ec_tokenizer *t, const char *s)
{
    vocab_entry key = {s, 0};
    const vocab_entry *e = bsearch(&key, t->sorted, (size_t)t->vocab_size, sizeof key, cmp_entry);
    return e ? e->id : -1;
}

void ec_tokenizer_free(ec_tokenizer *t)
{
    if (!t) return;
    free(t->vocab);
    free(t->scores);
    free(t->sorted);
    free(t->text);
    free(t);
}

int ec_tokenizer_load(ec_tokenizer **out, const char *path, int vocab_size)
{
    *out = NULL;
    if (vocab_size < BYTE_TOKEN0 + 256)
        return ec_set_error("%s: vocab_size %d is too small for byte fallback (needs >= %d)", path,
                            vocab_size, BYTE_TOKEN0 + 256);
    ec_mapped_file f;
    if (ec_map_file(&f, path)) return -1;
    ec_tokenizer *t = calloc(1, sizeof *t);
    if (!t) goto oom;
    t->vocab_size = vocab_size;
    t->vocab = calloc((size_t)vocab_size, sizeof *t->vocab);
    t->scores = calloc((size_t)vocab_size, sizeof *t->scores);
    t->sorted = calloc((size_t)vocab_size, sizeof *t->sorted);
    /* Pieces take at most the file's bytes plus one terminator each. */
    t->text = malloc(f.size + (size_t)vocab_size);
    if (!t->vocab || !t->scores || !t->sorted || !t->text) goto oom;
    if (f.size < 4) {
        ec_set_error("%s: truncated: no max_token_length header", path);
        goto fail;
    }
    size_t pos = 4, used = 0;
    for (int i = 0; i < vocab_size; i++) {
        if (f.size - pos < 8) {
            ec_set_error("%s: truncated: token %d of %d has no score/length", path, i, vocab_size);
            goto fail;
        }
        int32_t len;
        memcpy(&t->scores[i], f.data + pos, 4);
        memcpy(&len, f.data + pos + 4, 4);
        pos += 8;
        if (len < 0 || (size_t)len > f.size - pos) {
            ec_set_error("%s: token %d: length %d is negative or past the end of the file", path,
                         i, len);
            goto fail;
        }
        t->vocab[i] = t->text + used;
        memcpy(t->text + used, f.data + pos, (size_t)len);
        t->text[used + (size_t)len] = '\0';
        used += (size_t)len + 1;
        pos += (size_t)len;
        if (len > t->max_len) t->max_len = len;
        t->sorted[i] = (vocab_entry){t->vocab[i], i};
    }
    if (pos != f.size) {
        ec_set_error("%s: %zu bytes after token %d; is vocab_size %d right?", path, f.size - pos,
                     vocab_size - 1, vocab_size);
        goto fail;
    }
    qsort(t->sorted, (size_t)vocab_size, sizeof *t->sorted, cmp_entry);
    for (int b = 0; b < 256; b++) {
        t->byte_pieces[2 * b] = (char)b;
        t->byte_pieces[2 * b + 1] = '\0';
    }
    ec_unmap_file(&f);
    *out = t;
    return 0;
oom:
    ec_set_error("%s: out of memory", path);
fail:
    ec_unmap_file(&f);
    ec_tokenizer_free(t);
    return -1;
}

/* A candidate merge of adjacent live nodes (left, right). Stale candidates (a node merged away
 * or its token changed since) are recognised by the node versions and skipped. */
typedef struct {
    float score;
    int left, right, id;
    unsigned vleft, vright;
} merge_cand;

typedef struct {
    merge_cand *a;
    size_t n;
} cand_heap;

/* run.c takes the best score, and on ties the leftmost pair: order by score, then position. */
static int better(const merge_cand *x, const merge_cand *y)
{
    return x->score > y->score || (x->score == y->score && x->left < y->left);
}

static void heap_push(cand_heap *h, merge_cand c)
{
    size_t i = h->n++;
    while (i > 0 && better(&c, &h->a[(i - 1) / 2])) {
        h->a[i] = h->a[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->a[i] = c;
}

static merge_cand heap_pop(cand_heap *h)
{
    merge_cand top = h->a[0], last = h->a[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && better(&h->a[c + 1], &h->a[c])) c++;
        if (!better(&h->a[c], &last)) break;
        h->a[i] = h->a[c];
        i = c;
    }
    h->a[i] = last;
    return top;
}

typedef struct {
    const ec_tokenizer *t;
    int *tok, *next, *prev;
    unsigned *version;
    char *buf; /* [2 * max_len + 1] */
    cand_heap heap;
} merge_state;

static void consider(merge_state *s, int left, int right)
{
    if (left < 0 || right < 0) return;
    strcpy(s->buf, s->t->vocab[s->tok[left]]);
    strcat(s->buf, s->t->vocab[s->tok[right]]);
    int id = lookup(s->t, s->buf);
    if (id < 0 || !(s->t->scores[id] > NO_MERGE)) return;
    heap_push(&s->heap, (merge_cand){s->t->scores[id], left, right, id, s->version[left],
                                     s->version[right]});
}

/* Merges tokens[0..n) in place; returns the new count. */
static int merge_all(const ec_tokenizer *t, int *tokens, int n)
{
    if (n < 2) return n;
    merge_state s = {t, tokens, NULL, NULL, NULL, NULL, {NULL, 0}};
    s.next = malloc((size_t)n * sizeof *s.next);
    s.prev = malloc((size_t)n * sizeof *s.prev);
    s.version = calloc((size_t)n, sizeof *s.version);
    s.buf = malloc(2 * (size_t)t->max_len + 1);
    /* Each merge adds at most two candidates to the n - 1 initial ones. */
    s.heap.a = malloc(3 * (size_t)n * sizeof *s.heap.a);
    int count = n;
    if (!s.next || !s.prev || !s.version || !s.buf || !s.heap.a) {
        count = -1;
        goto done;
    }
    for (int i = 0; i < n; i++) {
        s.prev[i] = i - 1;
        s.next[i] = i + 1 < n ? i + 1 : -1;
    }
    for (int i = 0; i + 1 < n; i++) consider(&s, i, i + 1);
    while (s.heap.n) {
        merge_cand c = heap_pop(&s.heap);
        if (s.next[c.left] != c.right || s.version[c.left] != c.vleft ||
            s.version[c.right] != c.vright)
            continue;
        tokens[c.left] = c.id;
        s.version[c.left]++;
        s.version[c.right]++; /* dead: every candidate naming it is now stale */
        s.next[c.left] = s.next[c.right];
        if (s.next[c.right] >= 0) s.prev[s.next[c.right]] = c.left;
        count--;
        consider(&s, s.prev[c.left], c.left);
        consider(&s, c.left, s.next[c.left]);
    }
    int w = 0;
    for (int i = 0; i >= 0; i = s.next[i]) tokens[w++] = tokens[i];
done:
    free(s.next);
    free(s.prev);
    free(s.version);
    free(s.buf);
    free(s.heap.a);
    return count;
}

int ec_tokenizer_encode(const ec_tokenizer *t, const char *text, int bos, int *tokens)
{
    if (!text) return ec_set_error("tokenizer: no text to encode");
    int n = 0;
    if (bos) tokens[n++] = 1;
    if (text[0]) {
        int space = lookup(t, " ");
        if (space >= 0) tokens[n++] = space;
    }
    /* One token per UTF-8 code point when the vocabulary has it, else one per byte. */
    char cp[5];
    size_t len = 0;
    for (const char *c = text; *c; c++) {
        if ((*c & 0xC0) != 0x80) len = 0;
        cp[len++] = *c;
        cp[len] = '\0';
        if ((c[1] & 0xC0) == 0x80 && len < 4) continue;
        int id = lookup(t, cp);
        if (id >= 0)
            tokens[n++] = id;
        else
            for (size_t i = 0; i < len; i++) tokens[n++] = (unsigned char)cp[i] + BYTE_TOKEN0;
        len = 0;
    }
    int merged = merge_all(t, tokens, n);
    if (merged < 0) return ec_set_error("tokenizer: out of memory encoding %zu bytes", strlen(text));
    return merged;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

const char *ec_tokenizer_decode(const ec_tokenizer *t, int prev, int tok)
{
    if (tok < 0 || tok >= t->vocab_size) return "";
    const char *piece = t->vocab[tok];
    if (prev == 1 && piece[0] == ' ') piece++;
    if (!strncmp(piece, "<0x", 3) && hexval(piece[3]) >= 0 && hexval(piece[4]) >= 0 &&
        piece[5] == '>' && !piece[6])
        return t->byte_pieces + 2 * (hexval(piece[3]) * 16 + hexval(piece[4]));
    return piece;
}
