/* diagnose.c — one configuration examined: the known traps it hits (each with the fix and its
 * measured impact), its distance to the memory-bandwidth roofline, the idle share of its energy,
 * and the greenest alternative on the same GPU and model with the saving. */
#include "ecocompute/advise.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ecocompute/analysis.h"
#include "ecocompute/common.h"
#include "ecocompute/model.h"

static void trap(ec_diagnosis *d, const char *id, ec_audit_severity sev, const char *message,
                 const char *fix, const char *impact)
{
    if (d->ntraps >= sizeof d->traps / sizeof *d->traps) return;
    ec_trap *t = &d->traps[d->ntraps++];
    snprintf(t->id, sizeof t->id, "%s", id);
    t->severity = sev;
    snprintf(t->message, sizeof t->message, "%s", message);
    snprintf(t->fix, sizeof t->fix, "%s", fix);
    snprintf(t->impact, sizeof t->impact, "%s", impact);
}

int ec_diagnose(const ec_advisor *a, const ec_query *q, double measured_tok_s,
                double measured_j_gross, ec_diagnosis *out)
{
    memset(out, 0, sizeof *out);
    out->best_saving_pct = NAN;
    if (ec_advise_answer(a, q, &out->answer)) return -1;
    ec_answer *an = &out->answer;
    if (isfinite(measured_tok_s) || isfinite(measured_j_gross)) {
        an->method = EC_ANSWER_MEASURED;
        if (isfinite(measured_tok_s)) an->tok_s = measured_tok_s;
        if (isfinite(measured_j_gross)) an->j_per_1k = an->j_per_1k_gross = measured_j_gross;
        an->def = EC_ENERGY_GROSS;
        an->pm_tok_pct = an->pm_energy_pct = NAN;
        snprintf(an->basis, sizeof an->basis, "your measurement");
        snprintf(an->sources, sizeof an->sources, "your measurement");
    }
    /* Roofline at the GPU's datasheet bandwidth (the table's, so any GPU of data/gpus.csv). */
    ec_precision prec;
    out->roofline_tok_s = out->roofline_pct = out->idle_share_pct = NAN;
    if (!ec_precision_parse(q->precision, &prec)) {
        const ec_model_config *m = ec_catalog_find(q->model);
        if (!m) m = ec_catalog_match(q->model);
        ec_roofline r;
        int ctx = (q->prompt_len > 0 ? q->prompt_len : 0) + (q->gen_len > 0 ? q->gen_len : 256) / 2;
        if (ec_roofline_decode(m, q->params_b, prec, q->batch, ctx, q->gpu->bandwidth_gbs * 1e9,
                               &r) == 0) {
            out->roofline_tok_s = r.max_tok_s;
            if (an->tok_s > 0) out->roofline_pct = 100.0 * an->tok_s / r.max_tok_s;
        }
    }
    if (an->tok_s > 0 && an->j_per_1k_gross > 0)
        out->idle_share_pct =
            100.0 * ec_gpu_idle_w(q->gpu, NULL) * 1000.0 / an->tok_s / an->j_per_1k_gross;

    char msg[256], impact[768];
    double med;
    int hf = !strcmp(q->stack, "hf-bnb") || !strcmp(q->stack, "reference");
    if (!strcmp(q->precision, "int8-mixed") && hf) {
        ec_measured_delta(a, q->stack, "int8-mixed", 1e9, 0, &med, impact, sizeof impact);
        trap(out, "int8-default", EC_AUDIT_RED,
             "LLM.int8() decomposition (bitsandbytes' threshold 6.0)",
             "llm_int8_threshold=0.0 (pure INT8) after checking accuracy, or fp16/bf16", impact);
    }
    if (!strncmp(q->precision, "nf4", 3) && q->params_b > 0 && q->params_b < 5.0 && hf) {
        ec_measured_delta(a, q->stack, q->precision, 5.0, 0, &med, impact, sizeof impact);
        snprintf(msg, sizeof msg, "4-bit on a %.2g B model, below the ~5 B crossover", q->params_b);
        trap(out, "nf4-small-model", EC_AUDIT_ORANGE, msg, "fp16/bf16", impact);
    }
    if (!strcmp(q->precision, "fp8") && hf) {
        ec_measured_delta(a, "reference", "fp8", 1e9, 0, &med, impact, sizeof impact);
        trap(out, "fp8-eager", EC_AUDIT_ORANGE,
             "FP8 in eager mode: whole weight dequantized per call",
             "torch.compile the quantized model, or fp16/bf16", impact);
    }
    if (q->batch == 1) {
        ec_candidate *c8 = NULL;
        size_t n8 = 0;
        int b8 = 8;
        const char *stack = q->stack;
        ec_query base = *q;
        if (ec_candidates(a, &base, &stack, 1, &b8, 1, &c8, &n8) == 0) {
            for (size_t i = 0; i < n8; i++)
                if (!strcmp(c8[i].precision, q->precision) && c8[i].a.method != EC_ANSWER_NONE &&
                    an->j_per_1k_gross > 0) {
                    snprintf(impact, sizeof impact,
                             "batch 8: %.0f J/1k gross (%s) vs %.0f: %+.0f%% energy per token",
                             c8[i].a.j_per_1k_gross, ec_answer_method_name(c8[i].a.method),
                             an->j_per_1k_gross,
                             100.0 * (c8[i].a.j_per_1k_gross / an->j_per_1k_gross - 1));
                    trap(out, "batch1", EC_AUDIT_YELLOW,
                         "batch 1: all weights read for every token",
                         "batch requests (8 or more) or serve with continuous batching", impact);
                }
            free(c8);
        }
    }
    if (isfinite(out->idle_share_pct) && out->idle_share_pct > 50)
        trap(out, "idle-dominated", EC_AUDIT_YELLOW,
             "over half the energy is idle power (host-bound)",
             "larger batches, CUDA graphs / a compiled or fused stack", "see the idle share");

    /* The greenest alternative on the same GPU and model: any precision, this batch or 8, this
     * stack or ecocompute's fused kernels. */
    const char *stacks[2] = {q->stack, "fused"};
    int batches[2] = {q->batch, q->batch < 8 ? 8 : q->batch};
    ec_candidate *c = NULL;
    size_t n = 0;
    ec_query base = *q;
    if (ec_candidates(a, &base, stacks, strcmp(q->stack, "fused") ? 2 : 1, batches,
                      batches[0] == batches[1] ? 1 : 2, &c, &n))
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (c[i].a.method == EC_ANSWER_NONE || !c[i].a.fits) continue;
        if (an->j_per_1k_gross > 0 && c[i].a.j_per_1k_gross < an->j_per_1k_gross) {
            out->best = c[i].q;
            snprintf(out->best_precision, sizeof out->best_precision, "%s", c[i].precision);
            snprintf(out->best_stack, sizeof out->best_stack, "%s", c[i].stack);
            out->best.precision = out->best_precision;
            out->best.stack = out->best_stack;
            out->best_answer = c[i].a;
            out->best_saving_pct = 100.0 * (1 - c[i].a.j_per_1k_gross / an->j_per_1k_gross);
        }
        break;
    }
    free(c);
    return 0;
}
