/* engine.c — the backend-neutral generation loop: one prefill call over the whole prompt batch,
 * then the decode steps, one per new token, greedy, a fixed number of tokens (never stopping
 * early), each phase timed after the backend has synchronized. Knows nothing of the device. */
#include "ecocompute/engine.h"

#include <stdlib.h>

static void phase_hook(const ec_phase_hooks *hooks, ec_phase phase, int begin)
{
    if (hooks && hooks->on_phase) hooks->on_phase(hooks->ctx, phase, begin);
}

int ec_decode_stepwise(ec_backend *b, int *tokens, int ld, int batch, int pos, int steps)
{
    int *step = malloc((size_t)batch * sizeof *step), *next = malloc((size_t)batch * sizeof *next);
    int rc = step && next ? 0 : ec_set_error("decode: out of memory");
    for (int g = 0; rc == 0 && g < steps; g++) {
        for (int i = 0; i < batch; i++)
            step[i] = tokens[(size_t)i * ld + g];
        rc = b->ops->forward(b, step, batch, 1, pos + g, next, NULL);
        for (int i = 0; rc == 0 && i < batch; i++)
            tokens[(size_t)i * ld + g + 1] = next[i];
    }
    free(step);
    free(next);
    return rc;
}

/* The gen-1 decode steps: token g-1 of each sequence sits at position prompt_len + g - 1 and
 * predicts token g. */
static int decode_once(ec_backend *b, int *out, int gen, int batch, int prompt_len)
{
    return b->ops->decode ? b->ops->decode(b, out, gen, batch, prompt_len, gen - 1)
                          : ec_decode_stepwise(b, out, gen, batch, prompt_len, gen - 1);
}

int ec_generate(ec_backend *b, const int *prompts, int batch, int prompt_len, int gen, int *out,
                const ec_phase_hooks *hooks, ec_generate_stats *stats)
{
    return ec_generate_repeated(b, prompts, batch, prompt_len, gen, out, 1, 1, 0, hooks, stats);
}

int ec_generate_repeated(ec_backend *b, const int *prompts, int batch, int prompt_len, int gen,
                         int *out, int prefill_reps, int decode_reps, double min_window_s,
                         const ec_phase_hooks *hooks, ec_generate_stats *stats)
{
    if (batch < 1 || prompt_len < 1 || gen < 1)
        return ec_set_error("generate: batch (%d), prompt length (%d) and new tokens (%d) must "
                            "all be >= 1",
                            batch, prompt_len, gen);
    if (prefill_reps < 1 || decode_reps < 1)
        return ec_set_error("generate: repetitions (%d prefill, %d decode) must be >= 1",
                            prefill_reps, decode_reps);
    int *next = malloc((size_t)batch * sizeof *next);
    if (!next) return ec_set_error("generate: out of memory");
    /* One-time set-up (a GPU backend's decode graph) stays out of both timed phases. */
    int rc = b->ops->prepare ? b->ops->prepare(b, batch) : 0;
    if (rc != 0) {
        free(next);
        return rc;
    }
    phase_hook(hooks, EC_PHASE_PREFILL, 1);
    double t0 = ec_now_s();
    for (int r = 0; rc == 0 && r < prefill_reps; r++)
        rc = b->ops->forward(b, prompts, batch, prompt_len, 0, next, NULL);
    if (rc == 0) rc = b->ops->synchronize(b);
    /* Planned from a faster-running warm-up, the window can fall short: one more at a time. */
    while (rc == 0 && ec_now_s() - t0 < min_window_s) {
        rc = b->ops->forward(b, prompts, batch, prompt_len, 0, next, NULL);
        if (rc == 0) rc = b->ops->synchronize(b);
        prefill_reps++;
    }
    double prefill_s = ec_now_s() - t0;
    phase_hook(hooks, EC_PHASE_PREFILL, 0);
    for (int i = 0; rc == 0 && i < batch; i++)
        out[(size_t)i * gen] = next[i];
    free(next);

    if (rc == 0) {
        phase_hook(hooks, EC_PHASE_DECODE, 1);
        t0 = ec_now_s();
        for (int r = 0; rc == 0 && r < decode_reps; r++)
            rc = decode_once(b, out, gen, batch, prompt_len);
        if (rc == 0) rc = b->ops->synchronize(b);
        while (rc == 0 && gen > 1 && ec_now_s() - t0 < min_window_s) {
            rc = decode_once(b, out, gen, batch, prompt_len);
            if (rc == 0) rc = b->ops->synchronize(b);
            decode_reps++;
        }
        double decode_s = ec_now_s() - t0;
        phase_hook(hooks, EC_PHASE_DECODE, 0);
        if (rc == 0 && stats) {
            stats->prefill_reps = prefill_reps;
            stats->decode_reps = decode_reps;
            stats->prefill_window_s = prefill_s;
            stats->decode_window_s = decode_s;
            stats->prefill_s = prefill_s / prefill_reps;
            stats->decode_s = decode_s / decode_reps;
            stats->prefill_tokens = (long)batch * prompt_len;
            stats->decode_tokens = (long)batch * (gen - 1);
        }
    }
    return rc;
}
