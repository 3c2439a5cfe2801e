/* cmd_advise_audit.c — `ecocompute advise audit FILE|DIR...`: the static audit of Python inference
 * code and requirements for energy traps, as a report, JSON, CSV or SARIF 2.1.0, exiting 1 when a
 * finding reaches --fail-on. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advise_args.h"

#define CMD "advise audit"

static void usage(void)
{
    size_t n;
    const ec_audit_rule *r = ec_audit_rules(&n);
    printf(
        "usage: ecocompute advise audit [--format table|json|csv|sarif] [--fail-on SEVERITY]\n"
        "                               [--data-dir DIR] FILE|DIR...\n\n"
        "Reads Python files (*.py) as Python — comments, strings and docstrings never trigger a\n"
        "finding; keyword arguments count across lines and inside dicts passed as **kwargs —\n"
        "and requirements*.txt / pyproject.toml. Folders are walked recursively. Each finding\n"
        "has a severity (red, orange, yellow, green = informational, gray = cannot tell),\n"
        "file:line, the fix, and the measured impact with its source rows from the reference\n"
        "dataset (data/reference).\n\nrules:\n");
    for (size_t i = 0; i < n; i++)
        printf("  %-18s %-6s %s\n", r[i].id, ec_audit_severity_name(r[i].severity), r[i].title);
    printf(
        "\n  --format F        table (default), json, csv, or sarif (SARIF 2.1.0 for code "
        "scanning)\n"
        "  --fail-on S       exit 1 when a finding of severity S or worse exists (order: gray <\n"
        "                    green < yellow < orange < red); default: never\n"
        "  --data-dir DIR    shipped data for the measured impacts (default: next to the "
        "executable)\n\n"
        "examples:\n"
        "  ecocompute advise audit infer.py requirements.txt\n"
        "  ecocompute advise audit --format sarif --fail-on orange . > audit.sarif\n");
}

static void print_report(const ec_audit_findings *f)
{
    for (size_t i = 0; i < f->n; i++) {
        const ec_audit_finding *x = &f->v[i];
        printf("%-6s %s:%d  %s\n", ec_audit_severity_name(x->severity), x->file, x->line,
               x->rule->id);
        cli_wrapped(stdout, "       ", "%s", x->message);
        cli_wrapped(stdout, "       fix: ", "%s", x->rule->fix);
        cli_wrapped(stdout, "       impact: ", "%s", x->impact);
    }
}

static void print_table(const ec_audit_findings *f, ec_format fmt)
{
    ec_table *t = ec_table_new();
    int sv = ec_table_column(t, "severity", "Severity"), fi = ec_table_column(t, "file", "File");
    int li = ec_table_column(t, "line", "Line"), ru = ec_table_column(t, "rule", "Rule");
    int me = ec_table_column(t, "message", "Message"), fx = ec_table_column(t, "fix", "Fix");
    int im = ec_table_column(t, "impact", "Impact");
    for (size_t i = 0; i < f->n; i++) {
        const ec_audit_finding *x = &f->v[i];
        ec_table_row(t);
        ec_table_text(t, sv, "%s", ec_audit_severity_name(x->severity));
        ec_table_text(t, fi, "%s", x->file);
        ec_table_number(t, li, "%.0f", x->line);
        ec_table_text(t, ru, "%s", x->rule->id);
        ec_table_text(t, me, "%s", x->message);
        ec_table_text(t, fx, "%s", x->rule->fix);
        ec_table_text(t, im, "%s", x->impact);
    }
    ec_table_print(t, fmt, stdout);
    ec_table_free(t);
}

static int by_place(const void *a, const void *b)
{
    const ec_audit_finding *x = a, *y = b;
    int c = strcmp(x->file, y->file);
    return c ? c : (x->line > y->line) - (x->line < y->line);
}

int cmd_advise_audit(int argc, char **argv)
{
    advise_ctx c = {.cmd = CMD};
    int sarif = 0, have_fail = 0;
    ec_audit_severity fail_on = EC_AUDIT_RED;
    const char *paths[256];
    int npaths = 0;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            usage();
            return EXIT_OK;
        }
        if (!strcmp(f, "--format") && i + 1 < argc && !strcmp(argv[i + 1], "sarif")) {
            sarif = 1;
            i++;
            continue;
        }
        int r = advise_common_arg(&c, argc, argv, &i);
        if (r < 0) return EXIT_USAGE;
        if (r) continue;
        if (!strcmp(f, "--fail-on")) {
            if (i + 1 >= argc) return cli_usage_error(CMD, "--fail-on needs a value");
            if (ec_audit_severity_parse(argv[++i], &fail_on))
                return cli_usage_error(CMD, "--fail-on: %s", ec_last_error());
            have_fail = 1;
        } else if (f[0] == '-' && f[1]) {
            return cli_usage_error(CMD, "unknown option '%s'", f);
        } else if (npaths < 256) {
            paths[npaths++] = f;
        } else {
            return cli_usage_error(CMD, "more than 256 paths");
        }
    }
    if (!npaths) return cli_usage_error(CMD, "no file or folder to audit");
    /* The audit itself needs no data; the measured impacts do. Without a data folder the
     * findings still come, with impacts that say so. */
    const ec_advisor *adv = NULL;
    if (c.data_dir || c.db) {
        if (advise_load(&c)) return EXIT_FAIL;
        adv = &c.advisor;
    } else {
        char dir[4096];
        if (ec_advise_data_dir(NULL, dir, sizeof dir) == 0) {
            if (advise_load(&c)) return EXIT_FAIL;
            adv = &c.advisor;
        } else {
            fprintf(stderr, "ecocompute %s: note: %s; impacts will not cite measurements\n", CMD,
                    ec_last_error());
        }
    }
    ec_audit_findings f = {0};
    int rc = EXIT_OK;
    for (int i = 0; i < npaths; i++)
        if (ec_audit_path(adv, paths[i], &f)) {
            rc = cli_fail(CMD, "%s", ec_last_error());
            break;
        }
    if (rc == EXIT_OK) {
        if (f.n) qsort(f.v, f.n, sizeof *f.v, by_place);
        if (sarif)
            ec_audit_write_sarif(stdout, &f);
        else if (c.format == EC_FORMAT_TABLE)
            print_report(&f);
        else
            print_table(&f, c.format);
        size_t counts[5] = {0};
        int failing = 0;
        for (size_t i = 0; i < f.n; i++) {
            counts[f.v[i].severity]++;
            if (have_fail && f.v[i].severity >= fail_on) failing = 1;
        }
        fprintf(stderr, "%zu findings: %zu red, %zu orange, %zu yellow, %zu green, %zu gray\n", f.n,
                counts[EC_AUDIT_RED], counts[EC_AUDIT_ORANGE], counts[EC_AUDIT_YELLOW],
                counts[EC_AUDIT_GREEN], counts[EC_AUDIT_GRAY]);
        if (failing) rc = EXIT_FAIL;
    }
    ec_audit_findings_free(&f);
    advise_ctx_free(&c);
    return rc;
}
