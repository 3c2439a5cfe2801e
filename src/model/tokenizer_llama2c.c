/* tokenizer_llama2c.c — the llama2.c tokenizer format: loads tokenizer.bin-format vocabularies
 * (int32 max_token_length, then per token float32 score, int32 length, bytes), encodes with
 * run.c's score-driven BPE (dummy prefix space, UTF-8 code points, byte fallback to ids 3..258)
 * and decodes with run.c's rules. Encoding gives exactly run.c's tokens, but in O(n log n): run.c
 * rescans the whole sequence per merge, too slow for a 1.3 MB WikiText file. */
#include "ecocompute/common.h"
#include "merge_heap.h"
#include "model_internal.h"
#include "tokenizer_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BYTE_TOKEN0 3     /* ids 3..258 are <0x00>..<0xFF> */
enum { UNK_ID = 0, BOS_ID = 1, EOS_ID = 2 }; /* run.c's fixed ids */
#define NO_MERGE -1e10f   /* run.c's initial best score: pairs scoring at or below never merge */

typedef struct {
    const char *str;
    int id;
} vocab_entry;

typedef struct {
    int vocab_size;
    int max_len;                /* longest token in bytes */
    char **vocab;               /* [vocab_size] NUL-terminated pieces, pointing into `text` */
    float *scores;              /* [vocab_size] merge priority */
    vocab_entry *sorted;        /* [vocab_size] by strcmp, for lookups */
    char *text;                 /* all pieces, back to back */
    char byte_pieces[512];      /* byte b as a one-character string at [2b] */
} llama2c_vocab;

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const vocab_entry *)a)->str, ((const vocab_entry *)b)->str);
}

static int lookup(const llama2c_vocab *t, const char *s)
{
    vocab_entry key = {s, 0};
    const vocab_entry *e = bsearch(&key, t->sorted, (size_t)t->vocab_size, sizeof key, cmp_entry);
    return e ? e->id : -1;
}

static void vocab_free(llama2c_vocab *t)
{
    if (!t) return;
    free(t->vocab);
    free(t->scores);
    free(t->sorted);
    free(t->text);
    free(t);
}

/* The number of entries in the file: the format records no count, so the entries are walked
 * to the end (a file that does not end on an entry boundary gives 0, rejected below). */
static int count_entries(const ec_mapped_file *f)
{
    size_t pos = 4;
    int n = 0;
    while (f->size >= 8 && pos <= f->size - 8 && n < (1 << 24)) {
        int32_t len;
        memcpy(&len, f->data + pos + 4, 4);
        if (len < 0 || (size_t)len > f->size - pos - 8) return 0;
        pos += 8 + (size_t)len;
        n++;
    }
    return pos == f->size ? n : 0;
}

/* vocab_size 0: every entry of the file. */
static int vocab_load(llama2c_vocab **out, const char *path, int vocab_size)
{
    *out = NULL;
    ec_mapped_file f;
    if (ec_map_file(&f, path)) return -1;
    if (vocab_size == 0) vocab_size = count_entries(&f);
    if (vocab_size < BYTE_TOKEN0 + 256) {
        ec_unmap_file(&f);
        return ec_set_error("%s: vocab_size %d is too small for byte fallback (needs >= %d); is "
                            "it a llama2.c tokenizer file?",
                            path, vocab_size, BYTE_TOKEN0 + 256);
    }
    llama2c_vocab *t = calloc(1, sizeof *t);
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
    vocab_free(t);
    return -1;
}

/* Candidate merges of adjacent live nodes (left, right), best score first (the key is minus
 * the score), leftmost on ties as run.c. Stale candidates (a node merged away or its token
 * changed since) are recognised by the node versions and skipped. */
typedef struct {
    const llama2c_vocab *t;
    int *tok, *next, *prev;
    unsigned *version;
    char *buf; /* [2 * max_len + 1] */
    merge_heap heap;
} merge_state;

static void consider(merge_state *s, int left, int right)
{
    if (left < 0 || right < 0) return;
    strcpy(s->buf, s->t->vocab[s->tok[left]]);
    strcat(s->buf, s->t->vocab[s->tok[right]]);
    int id = lookup(s->t, s->buf);
    if (id < 0 || !(s->t->scores[id] > NO_MERGE)) return;
    merge_heap_push(&s->heap, (merge_cand){-(double)s->t->scores[id], left, right, id,
                                           s->version[left], s->version[right]});
}

/* Merges tokens[0..n) in place; returns the new count. */
static int merge_all(const llama2c_vocab *t, int *tokens, int n)
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
        merge_cand c = merge_heap_pop(&s.heap);
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

static int encode_text(const llama2c_vocab *t, const char *text, int bos, int *tokens)
{
    if (!text) return ec_set_error("tokenizer: no text to encode");
    int n = 0;
    if (bos) tokens[n++] = BOS_ID;
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

static const char *piece_after(const llama2c_vocab *t, int prev, int tok)
{
    if (tok < 0 || tok >= t->vocab_size) return "";
    const char *piece = t->vocab[tok];
    if (prev == BOS_ID && piece[0] == ' ') piece++;
    if (!strncmp(piece, "<0x", 3) && hexval(piece[3]) >= 0 && hexval(piece[4]) >= 0 &&
        piece[5] == '>' && !piece[6])
        return t->byte_pieces + 2 * (hexval(piece[3]) * 16 + hexval(piece[4]));
    return piece;
}

/* ---- the format's operations ---- */

static int op_encode(const void *impl, const char *text, size_t len, int add_special, ec_ids *out)
{
    const llama2c_vocab *t = impl;
    char *copy = malloc(len + 1);
    int *ids = malloc((len + 3) * sizeof *ids);
    int n = -1;
    if (copy && ids) {
        memcpy(copy, text, len);
        copy[len] = '\0';
        n = encode_text(t, copy, add_special, ids);
    } else {
        ec_set_error("tokenizer: out of memory");
    }
    for (int i = 0; i < n; i++)
        if (ec_ids_push(out, ids[i])) n = -1;
    free(copy);
    free(ids);
    return n < 0 ? -1 : 0;
}

/* run.c's text: each piece after its predecessor (the space after BOS dropped), lone ASCII
 * control bytes left out as its safe_printf does; bytes >= 0x80 are kept (run.c drops them too,
 * which loses every character made of byte tokens), then made valid UTF-8. */
static char *op_decode(const void *impl, const int *ids, int n, int skip_special)
{
    const llama2c_vocab *t = impl;
    char *raw = NULL, *text = NULL;
    size_t raw_len = 0, text_len = 0;
    FILE *f = open_memstream(&raw, &raw_len);
    if (!f) return NULL;
    for (int i = 0; i < n; i++) {
        if (skip_special && ids[i] <= EOS_ID) continue;
        const char *piece = piece_after(t, i ? ids[i - 1] : -1, ids[i]);
        unsigned char c = (unsigned char)piece[0];
        if (c && !piece[1] && c < 0x80 && !isprint(c) && !isspace(c))
            continue;
        fputs(piece, f);
    }
    if (fclose(f) != 0) return NULL;
    if (ec_utf8_lossy_append(&text, &text_len, (const unsigned char *)raw, raw_len)) text = NULL;
    free(raw);
    return text;
}

static const char *op_piece(const void *impl, int id)
{
    return ((const llama2c_vocab *)impl)->vocab[id];
}

static int op_find(const void *impl, const char *piece)
{
    return lookup(impl, piece);
}

static int op_is_special(const void *impl, int id)
{
    (void)impl;
    return id <= EOS_ID;
}

static void op_destroy(void *impl)
{
    vocab_free(impl);
}

static const ec_tokenizer_ops llama2c_ops = {op_encode, op_decode, op_piece,
                                             op_find,   op_is_special, op_destroy};

int ec_tokenizer_llama2c_open(ec_tokenizer *t, const char *path, int vocab_size)
{
    llama2c_vocab *v;
    if (vocab_load(&v, path, vocab_size)) return -1;
    t->ops = &llama2c_ops;
    t->impl = v;
    t->vocab_size = v->vocab_size;
    t->bos = BOS_ID;
    t->eos = EOS_ID;
    t->split_specials = 1;
    return 0;
}
