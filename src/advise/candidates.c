/* candidates.c — the precisions the advisor ranks, and every one × batch × stack of one model on
 * one GPU, answered and ranked by gross energy per token: what `advise optimize` lists and
 * `advise diagnose` picks its fix from. */
#include "ecocompute/advise.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ecocompute/common.h"

int ec_advise_ranks_precision(ec_precision p)
{
    const ec_qformat *f = ec_qformat_of(p);
    return f && (f->backends & EC_QFORMAT_CUDA) && p != EC_PREC_BF16;
}

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
    size_t np = 0;
    for (int p = 0; p < EC_PREC_COUNT; p++)
        np += (size_t)ec_advise_ranks_precision((ec_precision)p);
    size_t total = np * nstacks * nbatches;
    ec_candidate *c = calloc(total ? total : 1, sizeof *c);
    if (!c) return ec_set_error("out of memory");
    size_t k = 0;
    for (size_t s = 0; s < nstacks; s++)
        for (int p = 0; p < EC_PREC_COUNT; p++) {
            if (!ec_advise_ranks_precision((ec_precision)p)) continue;
            for (size_t b = 0; b < nbatches; b++) {
                ec_candidate *x = &c[k++];
                x->q = *base;
                snprintf(x->precision, sizeof x->precision, "%s",
                         ec_precision_name((ec_precision)p));
                snprintf(x->stack, sizeof x->stack, "%s", stacks[s]);
                x->q.batch = batches[b];
                x->q.precision = x->precision;
                x->q.stack = x->stack;
                if (ec_advise_answer(a, &x->q, &x->a)) {
                    free(c);
                    return -1;
                }
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
