/* cmd_advise_compare.c — `ecocompute advise compare`: 2 to 4 configurations (model, GPU,
 * precision, batch, stack) side by side with their method, ± and sources, and bar charts. */
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "advise_args.h"

#define CMD "advise compare"

static void usage(void)
{
    printf(
        "usage: ecocompute advise compare --config MODEL:GPU:PRECISION:BATCH[:STACK] (2 to 4 "
        "times)\n"
        "         [--prompt N] [--gen N] [--format table|json|csv] [--data-dir DIR] [--db PATH]\n\n"
        "Puts 2 to 4 configurations side by side: tok/s, J/1k tokens (gross, and the source's\n"
        "own definition), VRAM, method (measured / interpolated / modelled), ± and sources, and\n"
        "draws the energy and throughput as bars. STACK is fused, reference or hf-bnb "
        "(default).\n\n"
        "examples:\n"
        "  ecocompute advise compare --config Mistral-7B:A800:fp16:1 --config "
        "Mistral-7B:A800:int8-mixed:1\n"
        "  ecocompute advise compare --config Llama-2-7B:H100:fp16:8:fused \\\n"
        "      --config Llama-2-7B:H100:fp16:8:reference --config Llama-2-7B:A100:fp16:8:fused\n");
}

int cmd_advise_compare(int argc, char **argv)
{
    advise_ctx c = {.cmd = CMD};
    const char *specs[4];
    int nspec = 0;
    long prompt = 128, gen = 256;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v = NULL;
        int r = advise_next_arg(&c, NULL, argc, argv, &i, usage, &v);
        if (r == ADVISE_ARG_HELP) return EXIT_OK;
        if (r == ADVISE_ARG_ERROR) return EXIT_USAGE;
        if (r == ADVISE_ARG_TAKEN) continue;
        if (!strcmp(f, "--config")) {
            if (nspec == 4) return cli_usage_error(CMD, "at most 4 configurations");
            specs[nspec++] = v;
        } else if (!strcmp(f, "--prompt")) {
            if (cli_parse_long(CMD, f, v, 0, 1 << 20, &prompt)) return EXIT_USAGE;
        } else if (!strcmp(f, "--gen")) {
            if (cli_parse_long(CMD, f, v, 1, 1 << 20, &gen)) return EXIT_USAGE;
        } else {
            return cli_usage_error(CMD, "unknown option '%s'", f);
        }
    }
    if (nspec < 2) return cli_usage_error(CMD, "give 2 to 4 --config MODEL:GPU:PRECISION:BATCH");
    if (advise_load(&c)) return EXIT_FAIL;
    int rc = EXIT_USAGE;
    char parts[4][5][64];
    ec_query q[4];
    ec_answer a[4];
    for (int k = 0; k < nspec; k++) {
        int np = 0;
        const char *s = specs[k];
        while (np < 5) {
            const char *colon = strchr(s, ':');
            size_t l = colon ? (size_t)(colon - s) : strlen(s);
            snprintf(parts[k][np++], 64, "%.*s", (int)(l < 63 ? l : 63), s);
            if (!colon) break;
            s = colon + 1;
        }
        if (np < 4 || strchr(s, ':')) {
            cli_usage_error(CMD, "--config '%s': expected MODEL:GPU:PRECISION:BATCH[:STACK]",
                            specs[k]);
            goto done;
        }
        advise_config_args cfg;
        advise_config_defaults(&cfg);
        cfg.model = parts[k][0];
        cfg.gpu = parts[k][1];
        cfg.precision = parts[k][2];
        if (cli_parse_long(CMD, "--config batch", parts[k][3], 1, 65536, &cfg.batch)) goto done;
        if (np == 5) cfg.stack = parts[k][4];
        cfg.prompt = prompt;
        cfg.gen = gen;
        if (advise_config_query(&c, &cfg, "mgpb", &q[k])) goto done;
        if (ec_advise_answer(&c.advisor, &q[k], &a[k])) {
            rc = cli_fail(CMD, "%s", ec_last_error());
            goto done;
        }
    }
    ec_table *t = ec_table_new();
    int cl = ec_table_column(t, "config", "Configuration"),
        ct = ec_table_column(t, "tok_s", "tok/s");
    int cpt = ec_table_column(t, "tok_s_plus_minus_pct", "± (%)");
    int ce = ec_table_column(t, "j_per_1k_gross", "J/1k gross");
    int cpe = ec_table_column(t, "j_plus_minus_pct", "± (%)");
    int cs = ec_table_column(t, "j_per_1k_source", "J/1k source");
    int cd = ec_table_column(t, "basis", "Basis"), cm = ec_table_column(t, "method", "Method");
    int cv = ec_table_column(t, "vram_gb", "GB"), cf = ec_table_column(t, "fits", "Fits");
    int cn = c.format == EC_FORMAT_TABLE ? -1 : ec_table_column(t, "sources", "Sources");
    int cr = c.format == EC_FORMAT_TABLE ? -1 : ec_table_column(t, "note", "Note");
    char labels[4][160];
    const char *lp[4];
    double e[4], tk[4];
    for (int k = 0; k < nspec; k++) {
        advise_config_label(&q[k], labels[k], sizeof labels[k]);
        lp[k] = labels[k];
        int none = a[k].method == EC_ANSWER_NONE;
        e[k] = none ? NAN : a[k].j_per_1k_gross;
        tk[k] = none ? NAN : a[k].tok_s;
        ec_table_row(t);
        ec_table_text(t, cl, "%s", labels[k]);
        ec_table_text(t, cm, "%s", ec_answer_method_name(a[k].method));
        ec_table_number(t, cv, "%.1f", a[k].vram_gb);
        ec_table_text(t, cf, "%s", a[k].fits ? "yes" : "no");
        if (cr >= 0) ec_table_text(t, cr, "%s", a[k].reason);
        if (none) continue;
        ec_table_number(t, ct, "%.4g", a[k].tok_s);
        if (isfinite(a[k].pm_tok_pct)) ec_table_number(t, cpt, "%.1f", a[k].pm_tok_pct);
        ec_table_number(t, ce, "%.4g", a[k].j_per_1k_gross);
        if (isfinite(a[k].pm_energy_pct)) ec_table_number(t, cpe, "%.1f", a[k].pm_energy_pct);
        ec_table_number(t, cs, "%.4g", a[k].j_per_1k);
        ec_table_text(t, cd, "%s", ec_energy_definition_name(a[k].def));
        if (cn >= 0) ec_table_text(t, cn, "%s", a[k].sources);
    }
    ec_table_print(t, c.format, stdout);
    ec_table_free(t);
    if (c.format == EC_FORMAT_TABLE) {
        printf("\n");
        ec_ascii_bars(stdout, "Gross J per 1000 tokens (lower is greener)", lp, e, (size_t)nspec,
                      "J/1k", 50);
        printf("\n");
        ec_ascii_bars(stdout, "Throughput (decode tokens per second, all sequences)", lp, tk,
                      (size_t)nspec, "tok/s", 50);
        printf("\nSources:\n");
        for (int k = 0; k < nspec; k++) {
            char lead[16];
            snprintf(lead, sizeof lead, "  [%d] ", k + 1);
            if (a[k].method == EC_ANSWER_NONE)
                cli_wrapped(stdout, lead, "no answer: %s", a[k].reason);
            else
                cli_wrapped(stdout, lead, "%s: %s (± basis: %s)%s%s",
                            ec_answer_method_name(a[k].method), a[k].sources, a[k].basis,
                            a[k].reason[0] ? "; note: " : "", a[k].reason);
        }
    }
    rc = EXIT_OK;
done:
    advise_ctx_free(&c);
    return rc;
}
