/* cmd_advise_diagnose.c — `ecocompute advise diagnose`: a configuration described on the command
 * line, a stored run (--run ID from --db) or a `meter --format json` output, examined for known
 * traps, its distance to the roofline, its idle share, and the one-line fix with its impact. */
#include "cli.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advise_args.h"
#include "ecocompute/analysis.h"

#define CMD "advise diagnose"

static void usage(void)
{
    printf(
        "usage: ecocompute advise diagnose --model M --gpu G --precision P --batch B [--stack S]\n"
        "       ecocompute advise diagnose --db PATH --run ID\n"
        "       ecocompute advise diagnose --meter FILE.json --model M --precision P --batch B\n"
        "         [--stack S] [--prompt N] [--gen N] [--format table|json|csv] [--data-dir DIR]\n\n"
        "Which known traps the configuration hits (LLM.int8() default, NF4 below the crossover,\n"
        "FP8 in eager mode, batch 1, an idle-dominated energy budget), how far it is from the\n"
        "memory-bandwidth roofline, what share of its energy is idle power, and the greenest\n"
        "alternative on the same GPU and model with its saving — each figure measured,\n"
        "interpolated or modelled, with its source rows.\n\n"
        "  --run ID       a run of your results database (--db): its configuration and its\n"
        "                 measured tok/s and gross J/1k\n"
        "  --meter FILE   the output of `ecocompute meter --tokens N --format json`: its GPU,\n"
        "                 gross J/1k and tok/s; give the model, precision and batch\n\n"
        "examples:\n"
        "  ecocompute advise diagnose --model Mistral-7B --gpu A800 --precision int8-mixed "
        "--batch 1\n"
        "  ecocompute advise diagnose --db results.db --run 42\n");
}

/* GPU name, gross J/1k and tok/s of a meter JSON output. */
static int read_meter(const char *path, char *gpu, size_t cap, double *j1k, double *tok_s)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return cli_fail(CMD, "%s: cannot open", path), -1;
    char *buf = malloc(1 << 20);
    size_t n = buf ? fread(buf, 1, (1 << 20) - 1, fp) : 0;
    fclose(fp);
    if (!buf) return cli_fail(CMD, "out of memory"), -1;
    buf[n] = 0;
    cJSON *o = cJSON_Parse(buf);
    free(buf);
    cJSON *g = o ? cJSON_GetObjectItem(o, "gpus") : NULL;
    cJSON *g0 = g ? cJSON_GetArrayItem(g, 0) : NULL;
    cJSON *name = g0 ? cJSON_GetObjectItem(g0, "name") : NULL;
    cJSON *e = o ? cJSON_GetObjectItem(o, "gpu_j_per_1k_tokens_gross") : NULL;
    cJSON *tok = o ? cJSON_GetObjectItem(o, "tokens") : NULL;
    cJSON *dur = o ? cJSON_GetObjectItem(o, "duration_s") : NULL;
    if (!cJSON_IsString(name) || !cJSON_IsNumber(e)) {
        cJSON_Delete(o);
        cli_fail(CMD,
                 "%s: not a `meter --tokens N --format json` output (needs gpus[0].name and "
                 "gpu_j_per_1k_tokens_gross)",
                 path);
        return -1;
    }
    snprintf(gpu, cap, "%s", name->valuestring);
    *j1k = e->valuedouble;
    *tok_s = cJSON_IsNumber(tok) && cJSON_IsNumber(dur) && dur->valuedouble > 0
                 ? tok->valuedouble / dur->valuedouble
                 : NAN;
    cJSON_Delete(o);
    return 0;
}

int cmd_advise_diagnose(int argc, char **argv)
{
    advise_ctx c = {.cmd = CMD};
    advise_config_args cfg;
    advise_config_defaults(&cfg);
    long run_id = -1;
    const char *meter = NULL;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v = NULL;
        int r = advise_next_arg(&c, &cfg, argc, argv, &i, usage, &v);
        if (r == ADVISE_ARG_HELP) return EXIT_OK;
        if (r == ADVISE_ARG_ERROR) return EXIT_USAGE;
        if (r == ADVISE_ARG_TAKEN) continue;
        if (!strcmp(f, "--run")) {
            if (cli_parse_long(CMD, f, v, 0, 1L << 40, &run_id)) return EXIT_USAGE;
        } else if (!strcmp(f, "--meter")) {
            meter = v;
        } else {
            return cli_usage_error(CMD, "unknown option '%s'", f);
        }
    }
    if (run_id >= 0 && !c.db) return cli_usage_error(CMD, "--run needs --db PATH");
    if (run_id >= 0 && meter) return cli_usage_error(CMD, "give --run or --meter, not both");
    if (advise_load(&c)) return EXIT_FAIL;
    int rc = EXIT_USAGE;
    double m_tok = NAN, m_j = NAN;
    char gpu_buf[96], model_buf[64], prec_buf[16];
    if (run_id >= 0) {
        const ec_run_record *r = NULL;
        for (size_t i = c.data.nreference; i < c.data.nrecords && !r; i++)
            if (c.data.records[i].run_id == run_id) r = &c.data.records[i];
        if (!r) {
            rc = cli_fail(CMD, "no run %ld in %s", run_id, c.db);
            goto done;
        }
        snprintf(gpu_buf, sizeof gpu_buf, "%s", r->gpu_name);
        snprintf(model_buf, sizeof model_buf, "%s", r->model);
        snprintf(prec_buf, sizeof prec_buf, "%s", r->precision);
        cfg.gpu = gpu_buf;
        cfg.model = model_buf;
        cfg.precision = prec_buf;
        cfg.batch = r->batch;
        cfg.stack = ec_record_stack(r);
        if (r->prompt_len >= 0) cfg.prompt = r->prompt_len;
        if (r->gen_len > 0) cfg.gen = r->gen_len;
        m_tok = r->tok_s;
        m_j = r->j_per_1k_gross;
    } else if (meter) {
        if (read_meter(meter, gpu_buf, sizeof gpu_buf, &m_j, &m_tok)) {
            rc = EXIT_FAIL;
            goto done;
        }
        if (!cfg.gpu) cfg.gpu = gpu_buf;
    }
    ec_query q;
    if (advise_config_query(&c, &cfg, "mgpb", &q)) goto done;
    ec_diagnosis d;
    if (ec_diagnose(&c.advisor, &q, m_tok, m_j, &d)) {
        rc = cli_fail(CMD, "%s", ec_last_error());
        goto done;
    }
    char label[160];
    advise_config_label(&q, label, sizeof label);
    if (d.answer.method == EC_ANSWER_NONE) {
        rc = cli_fail(CMD, "cannot diagnose %s: %s", label, d.answer.reason);
        goto done;
    }
    ec_table *t = ec_table_new();
    int ck = ec_table_column(t, "kind", "Kind"), ci = ec_table_column(t, "item", "Item");
    int cs = ec_table_column(t, "severity", "Severity"), cv = ec_table_column(t, "value", "Value");
    int cu = ec_table_column(t, "unit", "Unit"), cm = ec_table_column(t, "detail", "Detail");
    ec_table_wrap(t, cm); /* a sentence: read whole, on more lines in a narrow table */
    char detail[4][96];
    snprintf(detail[0], sizeof detail[0], "%s", ec_answer_method_name(d.answer.method));
    snprintf(detail[1], sizeof detail[1], "%s", detail[0]);
    snprintf(detail[2], sizeof detail[2], "bound %.4g tok/s at %.0f GB/s (datasheet)",
             d.roofline_tok_s, q.gpu->bandwidth_gbs);
    snprintf(detail[3], sizeof detail[3], "idle %.0f W x time per token",
             ec_gpu_idle_w(q.gpu, NULL));
    const struct {
        const char *item, *fmt, *unit;
        double value;
    } figures[4] = {{"throughput", "%.4g", "tok/s", d.answer.tok_s},
                    {"energy", "%.4g", "J/1k tokens gross", d.answer.j_per_1k_gross},
                    {"roofline", "%.3g", "% of BW bound", d.roofline_pct},
                    {"idle share", "%.3g", "% of gross J", d.idle_share_pct}};
    for (size_t k = 0; k < 4; k++) {
        ec_table_row(t);
        ec_table_text(t, ck, "figure");
        ec_table_text(t, ci, "%s", figures[k].item);
        ec_table_number(t, cv, figures[k].fmt, figures[k].value);
        ec_table_text(t, cu, "%s", figures[k].unit);
        ec_table_text(t, cm, "%s", detail[k]);
    }
    for (size_t i = 0; i < d.ntraps; i++) {
        ec_table_row(t);
        ec_table_text(t, ck, "trap");
        ec_table_text(t, ci, "%s", d.traps[i].id);
        ec_table_text(t, cs, "%s", ec_audit_severity_name(d.traps[i].severity));
        if (c.format == EC_FORMAT_TABLE)
            ec_table_text(t, cm, "%.54s", d.traps[i].message);
        else
            ec_table_text(t, cm, "%s; fix: %s; impact: %s", d.traps[i].message, d.traps[i].fix,
                          d.traps[i].impact);
    }
    if (isfinite(d.best_saving_pct)) {
        ec_table_row(t);
        ec_table_text(t, ck, "fix");
        ec_table_text(t, ci, "%s %s b%d", d.best_stack, d.best_precision, d.best.batch);
        ec_table_number(t, cv, "%.3g", d.best_saving_pct);
        ec_table_text(t, cu, "%% less energy");
        ec_table_text(t, cm, "%.4g J/1k gross, %s", d.best_answer.j_per_1k_gross,
                      ec_answer_method_name(d.best_answer.method));
    }
    if (c.format == EC_FORMAT_TABLE) printf("%s\n", label);
    ec_table_print(t, c.format, stdout);
    ec_table_free(t);
    if (c.format == EC_FORMAT_TABLE) {
        printf("\n");
        cli_wrapped(stdout, "Sources: ", "%s (± basis: %s)", d.answer.sources, d.answer.basis);
        for (size_t i = 0; i < d.ntraps; i++) {
            char lead[64];
            snprintf(lead, sizeof lead, "%s: ", d.traps[i].id);
            cli_wrapped(stdout, lead, "%s", d.traps[i].message);
            cli_wrapped(stdout, "  fix: ", "%s", d.traps[i].fix);
            cli_wrapped(stdout, "  impact: ", "%s", d.traps[i].impact);
        }
        if (isfinite(d.best_saving_pct))
            cli_wrapped(stdout, "Fix from: ", "%s", d.best_answer.sources);
        if (d.answer.reason[0]) cli_wrapped(stdout, "Note: ", "%s", d.answer.reason);
    }
    rc = EXIT_OK;
done:
    advise_ctx_free(&c);
    return rc;
}
