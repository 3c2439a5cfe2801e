/* fuzz_tokenizer_json.c — libFuzzer target: the input is a whole tokenizer.json image, parsed
 * from memory. Valid or not, loading must never crash, hang or leak; an accepted tokenizer must
 * encode a fixed set of texts and the input's own bytes (when UTF-8) into ids inside its
 * vocabulary, and decode those ids without failing. */
#include "tokenizer_internal.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static void exercise(const ec_tokenizer *t, const char *text, size_t len)
{
    ec_ids ids = {NULL, 0, 0};
    for (int special = 0; special < 2; special++) {
        ids.n = 0;
        if (t->ops->encode(t->impl, text, len, special, &ids) != 0) continue;
        for (size_t i = 0; i < ids.n; i++)
            if (ids.v[i] < 0 || ids.v[i] >= t->vocab_size || !t->ops->piece(t->impl, ids.v[i]))
                abort();
        char *back = t->ops->decode(t->impl, ids.v, (int)ids.n, !special);
        if (!back) abort();
        free(back);
    }
    free(ids.v);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    /* A private copy, exactly sized, so ASan flags any read past the end. */
    char *buf = malloc(size ? size : 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    ec_tokenizer t;
    memset(&t, 0, sizeof t);
    if (ec_tokenizer_json_parse(&t, buf, size, "fuzz.json") == 0) {
        static const char *const texts[] = {"Hello world", "  a\n\nb\t", "caf\xc3\xa9 \xe4\xbd\xa0",
                                            "<s>x</s><|im_start|>", ""};
        for (size_t i = 0; i < sizeof texts / sizeof *texts; i++)
            exercise(&t, texts[i], strlen(texts[i]));
        exercise(&t, buf, size < 256 ? size : 256); /* refused unless valid UTF-8 */
        t.ops->destroy(t.impl);
    }
    free(buf);
    return 0;
}
