/* token_ids.c — the growable list of token ids the tokenizer formats append to. */
#include "ecocompute/common.h"
#include "tokenizer_internal.h"

#include <stdlib.h>

int ec_ids_push(ec_ids *l, int id)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        int *v = realloc(l->v, cap * sizeof *v);
        if (!v) return ec_set_error("tokenizer: out of memory");
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = id;
    return 0;
}
