/* cmd_advise_estimate.c — `ecocompute advise estimate`: kWh (GPU and facility), dollars and kgCO2
 * of a workload given in natural quantities, for one configuration, each figure with its unit,
 * basis, method and source. */
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "advise_args.h"

#define CMD "advise estimate"

static void usage(void)
{
    printf(
        "usage: ecocompute advise estimate --model M --gpu G --precision P --batch B [--stack S]\n"
        "         [--prompt N] [--gen N] WORKLOAD [--per day|month|year] [--pue X]\n"
        "         [--price USD_PER_KWH] [--intensity G_PER_KWH] [--region R]\n"
        "         [--format table|json|csv] [--data-dir DIR] [--db PATH]\n\n"
        "The energy, cost and CO2 of a workload. J/1k tokens come from your --db runs or the\n"
        "reference dataset (measured / interpolated) or the physical model (modelled), with\n"
        "their ±; kWh = tokens x J/1k / 1000 / 3.6e6; facility kWh = kWh x PUE; cost = facility\n"
        "kWh x price; kgCO2 = facility kWh x intensity / 1000.\n\n"
        "WORKLOAD, one of (each per --per period, default month):\n"
        "  (N: 1000000, 1,000,000, 1e6, 1M, 2.5k, 3B, 100\u4e07, 1\u4ebf)\n"
        "  --tokens N                    generated tokens\n"
        "  --requests N [--tokens-per-request T]   T defaults to --gen (256)\n"
        "  --chars N --lang en|zh [--tokenizer NAME]   characters of output text; the ratio\n"
        "                                and its source are printed (data/chars_per_token.csv)\n"
        "  --users N --requests-per-user N [--tokens-per-request T]\n"
        "  --hours-per-day H             the GPU busy at full throughput H hours a day\n\n"
        "  --stack S       fused | reference (ecocompute's kernels) | hf-bnb (transformers +\n"
        "                  bitsandbytes, the seeds' stack; default)\n"
        "  --prompt N, --gen N   prompt and generated tokens per request (default 128, 256)\n"
        "  --pue X         facility overhead (default 1.0: GPU energy only)\n"
        "  --price P       USD per kWh; --intensity G  gCO2e per kWh; --region R  both from\n"
        "                  data/regions.csv (us, cn, eu, fr, gcp-us-east4, ...). Without an\n"
        "                  intensity the world average is used (and said); without a price no\n"
        "                  cost is given\n"
        "  --format F      table (default), json or csv\n\n"
        "examples:\n"
        "  ecocompute advise estimate --model Mistral-7B --gpu A800 --precision fp16 --batch 8 \\\n"
        "      --requests 1000000 --per month --region cn --pue 1.1\n"
        "  ecocompute advise estimate --model Qwen2.5-7B --gpu RTX-4090D --precision nf4 \\\n"
        "      --batch 1 --chars 100\u4e07 --lang zh --region cn\n"
        "  ecocompute advise estimate --model Llama-2-7B --gpu H100 --precision fp16 --batch 64 "
        "\\\n"
        "      --stack fused --hours-per-day 8 --per year --price 0.12 --intensity 369\n");
}

/* The table format keeps rows within 120 columns: basis and source become numbered notes
 * printed under the table; json and csv carry them in every row. */
typedef struct {
    ec_table *t;
    int q, v, u, pm, m, b, s;
    int notes_inline;
    char notes[16][768];
    int nnotes;
} rows;

/* pm: ± in %, NaN when unknown (one run), negative when not applicable. */
static void row(rows *r, const char *what, const char *fmt, double value, const char *unit,
                double pm, const char *method, const char *basis, const char *source)
{
    ec_table_row(r->t);
    ec_table_text(r->t, r->q, "%s", what);
    ec_table_number(r->t, r->v, fmt, value);
    ec_table_text(r->t, r->u, "%s", unit);
    if (isnan(pm))
        ec_table_text(r->t, r->pm, "unknown");
    else if (pm >= 0)
        ec_table_number(r->t, r->pm, "%.1f", pm);
    ec_table_text(r->t, r->m, "%s", method);
    if (r->notes_inline) {
        ec_table_text(r->t, r->b, "%s", basis);
        ec_table_text(r->t, r->s, "%s", source);
        return;
    }
    char note[768];
    snprintf(note, sizeof note, "%s; source: %s", basis, source);
    int k = 0;
    while (k < r->nnotes && strcmp(r->notes[k], note))
        k++;
    if (k == r->nnotes && k < 16) memcpy(r->notes[r->nnotes++], note, sizeof note);
    ec_table_text(r->t, r->b, "[%d]", k + 1);
}

/* --tokens, --requests, --chars, --users take counts as people write them (1M, 100万). */
static int count(const char *flag, const char *text, double *out)
{
    if (ec_parse_quantity(text, out) == 0) return 0;
    cli_usage_error(CMD, "%s: %s", flag, ec_last_error());
    return -1;
}

int cmd_advise_estimate(int argc, char **argv)
{
    advise_ctx c = {.cmd = CMD};
    advise_config_args cfg;
    advise_config_defaults(&cfg);
    ec_workload_input in = {NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, EC_PER_MONTH};
    const char *lang = NULL, *tokenizer = NULL, *region = NULL;
    double pue = 1.0, price = NAN, intensity = NAN;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v = NULL;
        int r = advise_next_arg(&c, &cfg, argc, argv, &i, usage, &v);
        if (r == ADVISE_ARG_HELP) return EXIT_OK;
        if (r == ADVISE_ARG_ERROR) return EXIT_USAGE;
        if (r == ADVISE_ARG_TAKEN) continue;
        int bad = 0;
        if (!strcmp(f, "--tokens"))
            bad = count(f, v, &in.tokens);
        else if (!strcmp(f, "--requests"))
            bad = count(f, v, &in.requests);
        else if (!strcmp(f, "--tokens-per-request"))
            bad = cli_parse_double(CMD, f, v, 1, 1e7, &in.tokens_per_request);
        else if (!strcmp(f, "--chars"))
            bad = count(f, v, &in.chars);
        else if (!strcmp(f, "--users"))
            bad = count(f, v, &in.users);
        else if (!strcmp(f, "--requests-per-user"))
            bad = cli_parse_double(CMD, f, v, 0, 1e9, &in.requests_per_user);
        else if (!strcmp(f, "--hours-per-day"))
            bad = cli_parse_double(CMD, f, v, 0, 24, &in.hours_per_day);
        else if (!strcmp(f, "--per")) {
            if (ec_period_parse(v, &in.period)) return cli_usage_error(CMD, "%s", ec_last_error());
        } else if (!strcmp(f, "--lang"))
            lang = v;
        else if (!strcmp(f, "--tokenizer"))
            tokenizer = v;
        else if (!strcmp(f, "--region"))
            region = v;
        else if (!strcmp(f, "--pue"))
            bad = cli_parse_double(CMD, f, v, 1.0, 5.0, &pue);
        else if (!strcmp(f, "--price"))
            bad = cli_parse_double(CMD, f, v, 0, 100, &price);
        else if (!strcmp(f, "--intensity"))
            bad = cli_parse_double(CMD, f, v, 0, 5000, &intensity);
        else
            return cli_usage_error(CMD, "unknown option '%s'", f);
        if (bad) return EXIT_USAGE;
    }
    if (!isnan(in.chars) && !lang) return cli_usage_error(CMD, "--chars needs --lang (en, zh)");
    if (!isnan(in.users) && isnan(in.requests_per_user))
        return cli_usage_error(CMD, "--users needs --requests-per-user");
    if (isnan(in.tokens_per_request)) in.tokens_per_request = (double)cfg.gen;
    if (advise_load(&c)) return EXIT_FAIL;
    int rc = EXIT_USAGE;
    ec_query q;
    const ec_region *reg = NULL;
    const ec_chars_per_token *cpt = NULL;
    if (advise_config_query(&c, &cfg, "mgpb", &q) || (region && advise_region(&c, region, &reg)))
        goto done;
    if (lang) {
        cpt = ec_advise_find_cpt(&c.data, lang, tokenizer);
        if (!cpt) {
            cli_usage_error(CMD,
                            "no characters-per-token ratio for language '%s'%s%s (see %s/"
                            "chars_per_token.csv)",
                            lang, tokenizer ? " and tokenizer " : "", tokenizer ? tokenizer : "",
                            c.data.dir);
            goto done;
        }
        in.chars_per_token = cpt->chars_per_token;
    }
    ec_answer a;
    rc = EXIT_FAIL;
    if (ec_advise_answer(&c.advisor, &q, &a)) {
        cli_fail(CMD, "%s", ec_last_error());
        goto done;
    }
    char label[160];
    advise_config_label(&q, label, sizeof label);
    if (a.method == EC_ANSWER_NONE) {
        cli_fail(CMD, "cannot estimate %s: %s", label, a.reason);
        goto done;
    }
    in.tok_s = a.tok_s;
    ec_workload w;
    if (ec_workload_tokens(&in, &w)) {
        rc = cli_usage_error(CMD, "%s", ec_last_error());
        goto done;
    }
    const ec_region *world = ec_advise_find_region(&c.data, "world");
    double usd = isfinite(price) ? price : reg ? reg->usd_per_kwh : NAN;
    double g = isfinite(intensity) ? intensity : reg ? reg->g_co2_per_kwh : world->g_co2_per_kwh;
    ec_footprint fp;
    ec_footprint_of(w.tokens, a.j_per_1k, a.tok_s, pue, usd, g, &fp);

    const char *per = ec_period_name(in.period);
    const char *method = ec_answer_method_name(a.method);
    const char *def = ec_energy_definition_name(a.def);
    char unit[128], basis[512], src[640];
    static rows r;
    memset(&r, 0, sizeof r);
    r.t = ec_table_new();
    r.notes_inline = c.format != EC_FORMAT_TABLE;
    r.q = ec_table_column(r.t, "quantity", "Quantity");
    r.v = ec_table_column(r.t, "value", "Value");
    r.u = ec_table_column(r.t, "unit", "Unit");
    r.pm = ec_table_column(r.t, "plus_minus_pct", "± (%)");
    r.m = ec_table_column(r.t, "method", "Method");
    r.b = ec_table_column(r.t, "basis", r.notes_inline ? "Basis" : "Note");
    if (r.notes_inline) r.s = ec_table_column(r.t, "source", "Source");
    snprintf(unit, sizeof unit, "tokens/%s", per);
    row(&r, "generated tokens", "%.4g", w.tokens, unit, -1, "workload", w.how,
        cpt ? cpt->source : "command line");
    if (cpt) {
        snprintf(basis, sizeof basis, "%s, tokenizer %s, confidence %s", cpt->lang, cpt->tokenizer,
                 cpt->confidence);
        row(&r, "characters per token", "%.3g", cpt->chars_per_token, "chars/token", -1, "table",
            basis, cpt->source);
    }
    row(&r, "throughput", "%.4g", a.tok_s, "tok/s (decode)", a.pm_tok_pct, method, a.basis,
        a.sources);
    snprintf(unit, sizeof unit, "J/1k tokens (%s)", def);
    row(&r, "energy per 1000 tokens", "%.4g", a.j_per_1k, unit, a.pm_energy_pct, method, a.basis,
        a.sources);
    snprintf(unit, sizeof unit, "kWh/%s (%s)", per, def);
    row(&r, "GPU energy", "%.4g", fp.gpu_kwh, unit, a.pm_energy_pct, method,
        "tokens x J/1k / 1000 / 3.6e6", label);
    snprintf(basis, sizeof basis, "GPU kWh x PUE %.2f%s", pue,
             pue == 1.0 ? " (default: no facility overhead counted)" : " (given)");
    row(&r, "facility energy", "%.4g", fp.facility_kwh, unit, a.pm_energy_pct, method, basis,
        "command line");
    snprintf(unit, sizeof unit, "GPU-hours/%s", per);
    row(&r, "busy GPU time", "%.4g", fp.gpu_hours, unit, -1, method, "tokens / tok/s / 3600",
        label);
    if (isfinite(fp.cost_usd)) {
        if (isfinite(price)) {
            snprintf(basis, sizeof basis, "facility kWh x %.4g USD/kWh", price);
            snprintf(src, sizeof src, "--price");
        } else {
            snprintf(basis, sizeof basis, "facility kWh x %.4g USD/kWh (%s, %s %d)", usd, reg->name,
                     reg->price_basis, reg->price_year);
            snprintf(src, sizeof src, "%s", reg->price_source);
        }
        snprintf(unit, sizeof unit, "USD/%s", per);
        row(&r, "electricity cost", "%.4g", fp.cost_usd, unit, a.pm_energy_pct, method, basis, src);
    }
    if (isfinite(intensity)) {
        snprintf(basis, sizeof basis, "facility kWh x %.4g gCO2e/kWh / 1000", intensity);
        snprintf(src, sizeof src, "--intensity");
    } else {
        const ec_region *used = reg ? reg : world;
        snprintf(basis, sizeof basis, "facility kWh x %.4g gCO2e/kWh / 1000 (%s, %s, %d%s)",
                 used->g_co2_per_kwh, used->name, used->intensity_basis, used->intensity_year,
                 reg ? "" : "; no --region or --intensity: world average");
        snprintf(src, sizeof src, "%s", used->intensity_source);
    }
    snprintf(unit, sizeof unit, "kgCO2e/%s", per);
    row(&r, "CO2", "%.4g", fp.kg_co2, unit, a.pm_energy_pct, method, basis, src);
    static const char *const eq_keys[] = {"car_km", "phone_charge", "us_home_day"};
    for (size_t k = 0; k < 3; k++) {
        const ec_equivalent *e = ec_advise_find_equivalent(&c.data, eq_keys[k]);
        if (!e) continue;
        int per_co2 = strstr(e->unit, "CO2") != NULL;
        double v = per_co2 ? fp.kg_co2 / e->value : fp.facility_kwh / e->value;
        snprintf(basis, sizeof basis, "%s / %.4g %s (%s; %s)", per_co2 ? "kgCO2e" : "facility kWh",
                 e->value, e->unit, e->basis, e->year);
        snprintf(unit, sizeof unit, "%s", e->what);
        row(&r, "equivalent", "%.4g", v, unit, -1, "equivalent", basis, e->source);
    }
    if (c.format == EC_FORMAT_TABLE) printf("%s\n", label);
    ec_table_print(r.t, c.format, stdout);
    ec_table_free(r.t);
    for (int k = 0; k < r.nnotes; k++) {
        char lead[16];
        snprintf(lead, sizeof lead, "[%d] ", k + 1);
        cli_wrapped(stdout, lead, "%s", r.notes[k]);
    }
    if (a.reason[0]) fprintf(stderr, "note: %s\n", a.reason);
    if (!a.fits)
        fprintf(stderr, "note: weights + KV cache need %.1f GB; %s has %.0f GB\n", a.vram_gb,
                q.gpu->name, q.gpu->memory_gb);
    if (isnan(fp.cost_usd))
        fprintf(stderr, "note: no cost: give --price USD/kWh or a --region with a sourced price\n");
    rc = EXIT_OK;
done:
    advise_ctx_free(&c);
    return rc;
}
