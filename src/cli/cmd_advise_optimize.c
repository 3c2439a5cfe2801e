/* cmd_advise_optimize.c — `ecocompute advise optimize`: precision × batch × stack for a model on a
 * GPU, ranked by gross energy per token, with the VRAM check and the user's constraints; the
 * greenest that meets them, its saving against --current per month, and a bar chart. */
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advise_args.h"
#include "ecocompute/analysis.h"
#include "ecocompute/model.h"

#define CMD "advise optimize"

static void usage(void)
{
    char precs[128];
    size_t n = 0;
    precs[0] = '\0';
    for (int p = 0; p < EC_PREC_COUNT; p++)
        if (ec_advise_ranks_precision((ec_precision)p) && n < sizeof precs)
            n += (size_t)snprintf(precs + n, sizeof precs - n, "%s%s", n ? ", " : "",
                                  ec_precision_name((ec_precision)p));
    printf(
        "usage: ecocompute advise optimize --model M --gpu G [--stack S] [--max-batch B]\n"
        "         [--min-tok-s N] [--max-ppl-increase PCT] [--current PREC[:BATCH]]\n"
        "         [--tokens N] [--price USD_PER_KWH] [--prompt N] [--gen N]\n"
        "         [--format table|json|csv] [--data-dir DIR] [--db PATH]\n\n"
        "Ranks %s x batch 1..max x stack (fused, reference,\n"
        "hf-bnb, or only --stack) by gross J per 1000 tokens. Each row says measured,\n"
        "interpolated or modelled and its ±; a configuration whose weights + KV cache exceed the\n"
        "GPU's memory is marked and never recommended; one nobody can answer is counted, not\n"
        "guessed.\n\n"
        "  --max-batch B          largest batch to consider (default 64; powers of 2 up to it)\n"
        "  --min-tok-s N          keep configurations with at least N tok/s in total\n"
        "  --max-ppl-increase P   keep precisions whose measured perplexity is at most P %% above\n"
        "                         fp16's for this model (precisions without a measurement drop)\n"
        "  --current PREC[:B]     your configuration (on --stack, default hf-bnb: transformers +\n"
        "                         bitsandbytes); savings per month are against it\n"
        "  --tokens N             generated tokens per month for the savings (default 1e8)\n"
        "  --price P              USD per kWh for the savings in dollars\n\n"
        "examples:\n"
        "  ecocompute advise optimize --model Mistral-7B --gpu A800 --current int8-mixed:1\n"
        "  ecocompute advise optimize --model Llama-3.1-8B --gpu H100 --stack fused --format "
        "json\n",
        precs);
}

/* Median perplexity increase (%) of a precision vs fp16 over the records that carry perplexities
 * for this model; NaN without both. */
static double ppl_increase(const advise_ctx *c, const char *model, const char *precision)
{
    char want[96], have[96];
    ec_model_family_key(model, want, sizeof want);
    double sp = 0, sf = 0;
    int np = 0, nf = 0;
    for (size_t i = 0; i < c->data.nrecords; i++) {
        const ec_run_record *r = &c->data.records[i];
        if (!isfinite(r->perplexity)) continue;
        ec_model_family_key(r->model, have, sizeof have);
        if (strcmp(want, have)) continue;
        if (!strcmp(r->precision, precision)) sp += r->perplexity, np++;
        if (!strcmp(r->precision, "fp16")) sf += r->perplexity, nf++;
    }
    if (!strcmp(precision, "fp16")) return 0;
    if (!np || !nf) return NAN;
    return 100.0 * (sp / np / (sf / nf) - 1);
}

int cmd_advise_optimize(int argc, char **argv)
{
    advise_ctx c = {.cmd = CMD};
    advise_config_args cfg;
    advise_config_defaults(&cfg);
    cfg.stack = NULL;
    const char *current = NULL;
    double min_tok_s = 0, max_ppl = NAN, tokens = 1e8, price = NAN;
    long max_batch = 64;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v = NULL;
        int r = advise_next_arg(&c, &cfg, argc, argv, &i, usage, &v);
        if (r == ADVISE_ARG_HELP) return EXIT_OK;
        if (r == ADVISE_ARG_ERROR) return EXIT_USAGE;
        if (r == ADVISE_ARG_TAKEN) continue;
        int bad = 0;
        if (!strcmp(f, "--max-batch"))
            bad = cli_parse_long(CMD, f, v, 1, 4096, &max_batch);
        else if (!strcmp(f, "--min-tok-s"))
            bad = cli_parse_double(CMD, f, v, 0, 1e9, &min_tok_s);
        else if (!strcmp(f, "--max-ppl-increase"))
            bad = cli_parse_double(CMD, f, v, 0, 1000, &max_ppl);
        else if (!strcmp(f, "--current"))
            current = v;
        else if (!strcmp(f, "--tokens"))
            bad = cli_parse_double(CMD, f, v, 0, 1e18, &tokens);
        else if (!strcmp(f, "--price"))
            bad = cli_parse_double(CMD, f, v, 0, 100, &price);
        else
            return cli_usage_error(CMD, "unknown option '%s'", f);
        if (bad) return EXIT_USAGE;
    }
    if (cfg.precision || cfg.batch > 0)
        return cli_usage_error(CMD, "optimize chooses precision and batch; give --current for "
                                    "yours");
    if (advise_load(&c)) return EXIT_FAIL;
    int rc = EXIT_USAGE;
    ec_candidate *cand = NULL;
    size_t n = 0;
    ec_query base;
    const char *stack_arg = cfg.stack;
    cfg.stack = stack_arg ? stack_arg : "hf-bnb";
    if (advise_config_query(&c, &cfg, "mg", &base)) goto done;
    char cur_prec[16] = "";
    long cur_batch = 1;
    if (current) {
        const char *colon = strchr(current, ':');
        snprintf(cur_prec, sizeof cur_prec, "%.*s", colon ? (int)(colon - current) : 15, current);
        if (advise_precision(&c, cur_prec) ||
            (colon && cli_parse_long(CMD, "--current batch", colon + 1, 1, 4096, &cur_batch)))
            goto done;
    }
    const char *all[] = {"fused", "reference", "hf-bnb"};
    const char *const *stacks = stack_arg ? &stack_arg : all;
    size_t nstacks = stack_arg ? 1 : 3;
    int batches[16], nb = 0;
    for (long b = 1; b <= max_batch && nb < 16; b *= 2)
        batches[nb++] = (int)b;
    rc = EXIT_FAIL;
    if (ec_candidates(&c.advisor, &base, stacks, nstacks, batches, (size_t)nb, &cand, &n)) {
        cli_fail(CMD, "%s", ec_last_error());
        goto done;
    }
    const ec_candidate *cur = NULL, *best = NULL;
    size_t unanswered = 0;
    for (size_t i = 0; i < n; i++) {
        ec_candidate *x = &cand[i];
        if (x->a.method == EC_ANSWER_NONE) {
            unanswered++;
            continue;
        }
        if (current && !strcmp(x->precision, cur_prec) && x->q.batch == cur_batch &&
            (!cur || !strcmp(x->stack, cfg.stack)))
            cur = x;
    }
    ec_table *t = ec_table_new();
    int ck = ec_table_column(t, "rank", "#"), cs = ec_table_column(t, "stack", "Stack");
    int cp = ec_table_column(t, "precision", "Precision"),
        cb = ec_table_column(t, "batch", "Batch");
    int ct = ec_table_column(t, "tok_s", "tok/s"),
        ce = ec_table_column(t, "j_per_1k_gross", "J/1k gross");
    int cpm = ec_table_column(t, "plus_minus_pct", "± (%)"),
        cm = ec_table_column(t, "method", "Method");
    int cv = ec_table_column(t, "vram_gb", "VRAM GB"),
        cq = ec_table_column(t, "ppl_increase_pct", "PPL +%");
    int cok = ec_table_column(t, "meets_constraints", "OK"),
        csv_ = ec_table_column(t, "saving_kwh_per_month", "kWh/mo saved");
    int csrc = c.format == EC_FORMAT_TABLE ? -1 : ec_table_column(t, "sources", "Sources");
    const char *labels[12];
    double values[12];
    char label_buf[12][64];
    size_t nbars = 0, rank = 0;
    for (size_t i = 0; i < n; i++) {
        ec_candidate *x = &cand[i];
        if (x->a.method == EC_ANSWER_NONE) continue;
        double ppl = ppl_increase(&c, base.model, x->precision);
        const char *why = "yes";
        if (!x->a.fits)
            why = "no: VRAM";
        else if (x->a.tok_s < min_tok_s)
            why = "no: tok/s";
        else if (isfinite(max_ppl) && !(ppl <= max_ppl))
            why = isnan(ppl) ? "no: PPL unknown" : "no: PPL";
        if (!strcmp(why, "yes") && !best) best = x;
        /* The table format shows the 25 greenest; json and csv list every answer. */
        if (c.format == EC_FORMAT_TABLE && rank >= 25) {
            rank++;
            continue;
        }
        ec_table_row(t);
        ec_table_number(t, ck, "%.0f", (double)++rank);
        ec_table_text(t, cs, "%s", x->stack);
        ec_table_text(t, cp, "%s", x->precision);
        ec_table_number(t, cb, "%.0f", x->q.batch);
        ec_table_number(t, ct, "%.4g", x->a.tok_s);
        ec_table_number(t, ce, "%.4g", x->a.j_per_1k_gross);
        if (isfinite(x->a.pm_energy_pct)) ec_table_number(t, cpm, "%.1f", x->a.pm_energy_pct);
        ec_table_text(t, cm, "%s", ec_answer_method_name(x->a.method));
        ec_table_number(t, cv, "%.1f", x->a.vram_gb);
        if (isfinite(ppl)) ec_table_number(t, cq, "%.1f", ppl);
        ec_table_text(t, cok, "%s", why);
        if (cur)
            ec_table_number(t, csv_, "%.4g",
                            tokens * (cur->a.j_per_1k_gross - x->a.j_per_1k_gross) / 1000.0 /
                                3.6e6);
        if (csrc >= 0) ec_table_text(t, csrc, "%s", x->a.sources);
        if (nbars < 12 && x->a.fits) {
            snprintf(label_buf[nbars], sizeof label_buf[nbars], "%s %s b%d", x->stack, x->precision,
                     x->q.batch);
            labels[nbars] = label_buf[nbars];
            values[nbars++] = x->a.j_per_1k_gross;
        }
    }
    if (c.format == EC_FORMAT_TABLE)
        printf("%s on %s (%.0f GB, %.0f GB/s): configurations ranked by gross J/1k tokens\n",
               base.model, base.gpu->name, base.gpu->memory_gb, base.gpu->bandwidth_gbs);
    ec_table_print(t, c.format, stdout);
    ec_table_free(t);
    if (c.format == EC_FORMAT_TABLE) {
        if (rank > 25) printf("(%zu more: --format csv lists them all)\n", rank - 25);
        printf("\n");
        ec_ascii_bars(stdout,
                      "Gross J per 1000 tokens (lower is greener; the 12 greenest that fit)",
                      labels, values, nbars, "J/1k", 60);
        if (best) {
            printf("\nRecommended: %s %s batch %d — %.4g J/1k gross (%s%s), %.4g tok/s\n",
                   best->stack, best->precision, best->q.batch, best->a.j_per_1k_gross,
                   ec_answer_method_name(best->a.method),
                   isfinite(best->a.pm_energy_pct) ? "" : ", ± unknown", best->a.tok_s);
            cli_wrapped(stdout, "  from: ", "%s", best->a.sources);
            if (best->a.reason[0]) cli_wrapped(stdout, "  note: ", "%s", best->a.reason);
            if (cur) {
                double kwh =
                    tokens * (cur->a.j_per_1k_gross - best->a.j_per_1k_gross) / 1000.0 / 3.6e6;
                printf(
                    "  against your %s %s batch %ld (%.4g J/1k): %.0f%% less energy, %.4g kWh per "
                    "month at %.3g tokens/month",
                    cur->stack, cur->precision, cur_batch, cur->a.j_per_1k_gross,
                    100.0 * (1 - best->a.j_per_1k_gross / cur->a.j_per_1k_gross), kwh, tokens);
                if (isfinite(price)) printf(", %.4g USD at %.3g USD/kWh", kwh * price, price);
                printf("\n");
            }
        } else {
            printf("\nNo configuration meets the constraints.\n");
        }
    }
    if (current && !cur)
        fprintf(stderr,
                "note: your current %s batch %ld has no answer (no measurement, no model)\n",
                cur_prec, cur_batch);
    if (unanswered)
        fprintf(stderr,
                "note: %zu configurations have no measurement and no fitted model (not "
                "listed)\n",
                unanswered);
    rc = EXIT_OK;
done:
    free(cand);
    advise_ctx_free(&c);
    return rc;
}
