/* tokenizer.c — the format-neutral tokenizer interface: picks the format from a file name or the
 * files of a model directory, checks ids against the model's vocabulary, and adds what every
 * format shares (BOS/EOS written in the text for the formats that do not find them). */
#include "ecocompute/common.h"
#include "tokenizer_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *ec_tokenizer_format_name(ec_tokenizer_format f)
{
    switch (f) {
    case EC_TOKENIZER_HF_JSON: return "tokenizer.json";
    case EC_TOKENIZER_SENTENCEPIECE: return "sentencepiece";
    case EC_TOKENIZER_LLAMA2C: return "llama2.c";
    }
    return "?";
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The tokenizer file of a model directory: the first of the formats that is there. */
static char *file_in_dir(const char *dir)
{
    static const char *const names[] = {"tokenizer.json", "tokenizer.json.gz", "tokenizer.model",
                                        "tokenizer.bin"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        size_t n = strlen(dir) + strlen(names[i]) + 2;
        char *p = malloc(n);
        if (!p) return NULL;
        snprintf(p, n, "%s/%s", dir, names[i]);
        struct stat st;
        if (stat(p, &st) == 0) return p;
        free(p);
    }
    ec_set_error("%s: no tokenizer.json, tokenizer.model or tokenizer.bin in this directory", dir);
    return NULL;
}

void ec_tokenizer_free(ec_tokenizer *t)
{
    if (!t) return;
    if (t->ops) t->ops->destroy(t->impl);
    free(t->path);
    free(t);
}

/* Checks that every id the tokenizer can produce is a row of the model's embedding. */
static int check_vocab(const ec_tokenizer *t, int model_vocab)
{
    if (model_vocab > 0 && t->vocab_size > model_vocab)
        return ec_set_error("%s: the tokenizer has ids up to %d but the model's vocab_size is %d; "
                            "is it the model's own tokenizer?",
                            t->path, t->vocab_size - 1, model_vocab);
    return 0;
}

int ec_tokenizer_open(ec_tokenizer **out, const char *path, int model_vocab)
{
    *out = NULL;
    ec_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return ec_set_error("%s: out of memory", path);
    t->bos = t->eos = -1;
    t->path = is_dir(path) ? file_in_dir(path) : strdup(path);
    if (!t->path) {
        free(t);
        return -1;
    }
    int rc;
    if (ends_with(t->path, ".json") || ends_with(t->path, ".json.gz")) {
        t->format = EC_TOKENIZER_HF_JSON;
        rc = ec_tokenizer_json_open(t, t->path);
    } else if (ends_with(t->path, ".model")) {
        t->format = EC_TOKENIZER_SENTENCEPIECE;
        rc = ec_tokenizer_sentencepiece_open(t, t->path);
    } else {
        t->format = EC_TOKENIZER_LLAMA2C;
        rc = ec_tokenizer_llama2c_open(t, t->path, model_vocab);
    }
    if (rc == 0) rc = check_vocab(t, model_vocab);
    if (rc != 0) {
        ec_tokenizer_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

ec_tokenizer_format ec_tokenizer_format_of(const ec_tokenizer *t) { return t->format; }
const char *ec_tokenizer_path(const ec_tokenizer *t) { return t->path; }
int ec_tokenizer_vocab_size(const ec_tokenizer *t) { return t->vocab_size; }
int ec_tokenizer_bos(const ec_tokenizer *t) { return t->bos; }
int ec_tokenizer_eos(const ec_tokenizer *t) { return t->eos; }

const char *ec_tokenizer_piece(const ec_tokenizer *t, int id)
{
    return id >= 0 && id < t->vocab_size ? t->ops->piece(t->impl, id) : NULL;
}

int ec_tokenizer_find(const ec_tokenizer *t, const char *piece)
{
    return t->ops->find(t->impl, piece);
}

int ec_tokenizer_is_special(const ec_tokenizer *t, int id)
{
    return id >= 0 && id < t->vocab_size && t->ops->is_special(t->impl, id);
}

/* The BOS or EOS written in text at position p, as "<s>" / "</s>"; its id, or -1. */
static int special_at(const ec_tokenizer *t, const char *p, size_t *len)
{
    static const char bos_text[] = "<s>", eos_text[] = "</s>";
    if (t->bos >= 0 && !strncmp(p, bos_text, sizeof bos_text - 1)) {
        *len = sizeof bos_text - 1;
        return t->bos;
    }
    if (t->eos >= 0 && !strncmp(p, eos_text, sizeof eos_text - 1)) {
        *len = sizeof eos_text - 1;
        return t->eos;
    }
    return -1;
}

/* Formats without their own special-token matching: BOS (add_special), then the text split at
 * every "<s>" / "</s>", each piece encoded on its own as the reference libraries do. */
static int encode_splitting_specials(const ec_tokenizer *t, const char *text, int add_special,
                                     ec_ids *out)
{
    if (add_special && t->bos >= 0 && ec_ids_push(out, t->bos)) return -1;
    const char *start = text;
    for (const char *p = text;; p++) {
        size_t len = 0;
        int id = *p ? special_at(t, p, &len) : -1;
        if (!*p || id >= 0) {
            if (p > start && t->ops->encode(t->impl, start, (size_t)(p - start), 0, out)) return -1;
            if (!*p) return 0;
            if (ec_ids_push(out, id)) return -1;
            p += len - 1;
            start = p + 1;
        }
    }
}

int ec_tokenizer_encode(const ec_tokenizer *t, const char *text, int add_special, int **ids)
{
    *ids = NULL;
    if (!text) return ec_set_error("%s: no text to encode", t->path);
    ec_ids out = {NULL, 0, 0};
    int rc = t->split_specials ? encode_splitting_specials(t, text, add_special, &out)
                               : t->ops->encode(t->impl, text, strlen(text), add_special, &out);
    /* An empty result still gets a block, so a caller tells it from a failure by the count. */
    if (rc == 0 && !out.v && ec_ids_push(&out, 0) == 0) out.n = 0;
    if (rc != 0 || !out.v) {
        free(out.v);
        return -1;
    }
    *ids = out.v;
    return (int)out.n;
}

char *ec_tokenizer_decode(const ec_tokenizer *t, const int *ids, int n, int skip_special)
{
    for (int i = 0; i < n; i++)
        if (!ec_tokenizer_piece(t, ids[i])) {
            ec_set_error("%s: token id %d is not in the vocabulary (0..%d)", t->path, ids[i],
                         t->vocab_size - 1);
            return NULL;
        }
    char *s = t->ops->decode(t->impl, ids, n, skip_special);
    if (!s) ec_set_error("%s: out of memory decoding %d tokens", t->path, n);
    return s;
}
