/* tokenizer_sentencepiece.c — SentencePiece tokenizer.model files through libsentencepiece (the
 * reference implementation itself, via sentencepiece_shim.cpp); without the library the format
 * is refused with a message saying so. */
#include "ecocompute/common.h"
#include "tokenizer_internal.h"

#ifdef ECOCOMPUTE_HAVE_SENTENCEPIECE
#include "sentencepiece_shim.h"

#include <stdlib.h>
#include <string.h>

static int op_encode(const void *impl, const char *text, size_t len, int add_special, ec_ids *out)
{
    (void)add_special; /* BOS is added by tokenizer.c for this format */
    int *ids, n = ec_sp_encode(impl, text, len, &ids);
    if (n < 0) return ec_set_error("sentencepiece: cannot encode the text");
    int rc = 0;
    for (int i = 0; rc == 0 && i < n; i++) rc = ec_ids_push(out, ids[i]);
    free(ids);
    return rc;
}

/* Control tokens decode to nothing in SentencePiece; with skip_special off their pieces are
 * written where they stand, so BOS/EOS stay visible. */
static char *op_decode(const void *impl, const int *ids, int n, int skip_special)
{
    if (skip_special) return ec_sp_decode(impl, ids, n);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return NULL;
    for (int start = 0, i = 0; i <= n; i++) {
        if (i < n && !ec_sp_is_control(impl, ids[i])) continue;
        char *part = ec_sp_decode(impl, ids + start, i - start);
        if (part) fputs(part, f);
        free(part);
        if (i < n) fputs(ec_sp_piece(impl, ids[i]), f);
        start = i + 1;
    }
    fclose(f);
    return text;
}

static const char *op_piece(const void *impl, int id) { return ec_sp_piece(impl, id); }
static int op_find(const void *impl, const char *piece) { return ec_sp_find(impl, piece); }
static int op_is_special(const void *impl, int id) { return ec_sp_is_control(impl, id); }
static void op_destroy(void *impl) { ec_sp_free(impl); }

static const ec_tokenizer_ops sp_ops = {op_encode, op_decode, op_piece, op_find, op_is_special, op_destroy};

int ec_tokenizer_sentencepiece_open(ec_tokenizer *t, const char *path)
{
    char err[256];
    ec_sp *sp = ec_sp_open(path, err, sizeof err);
    if (!sp) return ec_set_error("%s: not a SentencePiece model: %s", path, err);
    t->ops = &sp_ops;
    t->impl = sp;
    t->vocab_size = ec_sp_size(sp);
    t->bos = ec_sp_bos(sp);
    t->eos = ec_sp_eos(sp);
    t->split_specials = 1;
    return 0;
}

#else

int ec_tokenizer_sentencepiece_open(ec_tokenizer *t, const char *path)
{
    (void)t;
    return ec_set_error("%s: SentencePiece .model files need libsentencepiece, which this build "
                        "lacks (apt install libsentencepiece-dev, then rebuild); a tokenizer.json "
                        "of the same model works without it",
                        path);
}

#endif
