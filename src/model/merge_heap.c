/* merge_heap.c — a binary min-heap of candidate merges ordered by key, then leftmost position. */
#include "merge_heap.h"

static int before(const merge_cand *x, const merge_cand *y)
{
    return x->key < y->key || (x->key == y->key && x->left < y->left);
}

void merge_heap_push(merge_heap *h, merge_cand c)
{
    size_t i = h->n++;
    while (i > 0 && before(&c, &h->a[(i - 1) / 2])) {
        h->a[i] = h->a[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->a[i] = c;
}

merge_cand merge_heap_pop(merge_heap *h)
{
    merge_cand top = h->a[0], last = h->a[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && before(&h->a[c + 1], &h->a[c])) c++;
        if (!before(&h->a[c], &last)) break;
        h->a[i] = h->a[c];
        i = c;
    }
    h->a[i] = last;
    return top;
}
