/* merge_heap.h — the priority queue of candidate merges that both BPE encoders (llama2.c's
 * score-driven one and Hugging Face's rank-driven one) pop in order: lowest key first, the
 * leftmost pair on ties, which is the order their reference implementations merge in. */
#ifndef ECOCOMPUTE_MERGE_HEAP_H
#define ECOCOMPUTE_MERGE_HEAP_H

#include <stddef.h>

typedef struct {
    double key;             /* merge priority: lower pops first (a rank, or minus a score) */
    int left, right, id;    /* adjacent symbols and the token they merge into */
    unsigned vleft, vright; /* symbol versions when pushed (encoders that track staleness) */
} merge_cand;

typedef struct {
    merge_cand *a; /* capacity chosen by the caller: n - 1 initial pairs + 2 per merge */
    size_t n;
} merge_heap;

void merge_heap_push(merge_heap *h, merge_cand c);
merge_cand merge_heap_pop(merge_heap *h); /* h->n > 0 */

#endif
