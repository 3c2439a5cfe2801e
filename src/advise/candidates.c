/* candidates.c — every precision × batch × stack of one model on one GPU, answered and ranked by
 * gross energy per token: what `advise optimize` lists and `advise diagnose` picks its fix from. */
#include "ecocompute/advise.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ecocompute/common.h"

static const char *const precisions[] = {"fp16", "int8", "int8-mixed", "nf4", "nf4-dq", "fp8"};

static int by_energy(const void *x, const void *y)
{
    const ec_candidate *a = x, *b = y;
    int na = a->a.method == EC_ANSWER_NONE || !isfinite(a->a.j_per_1k_gross);
    int nb = b->a.method == EC_ANSWER_NONE || !isfinite(b->a.j_per_1k_gross);
    if (na != nb) return na - nb;
    if (na) return 0;
    return (a->a.j_per_1k_gross > b->a.j_per_1k_gross) -
           (a->a.j_per_1k_gross < b->a.j_per_1k_gross);
}

int ec_candidates(const ec_advisor *a, const ec_query *base, const char *const *stacks,
                  size_t nstacks, const int *batches, size_t nbatches, ec_candidate **out,
                  size_t *n)
{
    size_t np = sizeof precisions / sizeof *precisions, total = np * nstacks * nbatches;
    ec_candidate *c = calloc(total ? total : 1, sizeof *c);
    if (!c) return ec_set_error("out of memory");
    size_t k = 0;
    for (size_t s = 0; s < nstacks; s++)
        for (size_t p = 0; p < np; p++)
            for (size_t b = 0; b < nbatches; b++) {
                ec_candidate *x = &c[k++];
                x->q = *base;
                snprintf(x->precision, sizeof x->precision, "%s", precisions[p]);
                snprintf(x->stack, sizeof x->stack, "%s", stacks[s]);
                x->q.batch = batches[b];
                x->q.precision = x->precision;
                x->q.stack = x->stack;
                if (ec_advise_answer(a, &x->q, &x->a)) {
                    free(c);
                    return -1;
                }
            }
    qsort(c, k, sizeof *c, by_energy);
    /* The pointers into each candidate's own fields are set after sorting moved them. */
    for (size_t i = 0; i < k; i++) {
        c[i].q.precision = c[i].precision;
        c[i].q.stack = c[i].stack;
    }
    *out = c;
    *n = k;
    return 0;
}
