/* metrics.c — accuracy metrics over next-token logits: greedy argmax, KL divergence between
 * two distributions, negative log-likelihood. Sums run in double so that a KL of 1e-7 nats is
 * still resolved at a vocabulary of 128K. */
#include "ecocompute/engine.h"

#include <math.h>

int ec_argmax(const float *x, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* log of the softmax normaliser: max + log(sum exp(x - max)). */
static double log_sum_exp(const float *x, int n)
{
    double max = x[ec_argmax(x, n)], sum = 0.0;
    for (int i = 0; i < n; i++)
        sum += exp((double)x[i] - max);
    return max + log(sum);
}

double ec_logits_kl(const float *ref, const float *other, int n)
{
    double lse_p = log_sum_exp(ref, n), lse_q = log_sum_exp(other, n), kl = 0.0;
    for (int i = 0; i < n; i++) {
        double logp = ref[i] - lse_p, logq = other[i] - lse_q;
        kl += exp(logp) * (logp - logq);
    }
    /* Rounding can leave a hair below zero for identical distributions. */
    return kl > 0.0 ? kl : 0.0;
}

double ec_logits_nll(const float *logits, int n, int target)
{
    return log_sum_exp(logits, n) - logits[target];
}
