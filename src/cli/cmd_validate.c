/* cmd_validate.c — `ecocompute validate`: checks a dataset for internal consistency (energy vs
 * power × time, mixed energy definitions, throughput above the memory-bandwidth roofline,
 * different output lengths compared, summaries that do not match their runs, values copied
 * between tables) and lists what it finds. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#include "dataset_args.h"
#include "ecocompute/analysis.h"
#include "ecocompute/store.h"

#define CMD "validate"

static void usage(void)
{
    ec_validate_options d;
    ec_validate_options_default(&d);
    printf("usage: ecocompute validate FILE|FOLDER... | --db PATH [options]\n\n"
           "Checks a dataset for internal consistency and lists each finding with its severity,\n"
           "check, where (file and configuration) and what is wrong. FILEs are the seeds'\n"
           "published CSV/JSON files (recognised by their columns/keys); a FOLDER is searched\n"
           "for them, skipping other files with a note on stderr. Exports of ecocompute\n"
           "(ecocompute export) are read too; --db checks the results database.\n\n"
           "checks:\n"
           "  energy-identity          energy per 1k tokens vs 1000 x power / throughput (gross)\n"
           "                           or (power - idle) (net), and joules vs power x time\n"
           "  mixed-energy-definition  gross, net (idle-subtracted) or unknown energies in one\n"
           "                           comparison (same GPU and model) or one dataset\n"
           "  roofline                 tok/s above GPU memory bandwidth / bytes per decode step\n"
           "  output-length            precisions compared at different output lengths\n"
           "  summary-mismatch         a summary row vs the mean of its runs\n"
           "  duplicate-values         two models with the same energies at several precisions\n\n"
           "options:\n"
           "  --db PATH           check every run of the results database (default path:\n"
           "                      %s)\n"
           "  --energy-tol PCT    energy identity tolerance, %% (default %g)\n"
           "  --summary-tol PCT   summary vs runs tolerance, %% (default %g)\n"
           "  --format F          table (default), json or csv\n\n"
           "exit status: 0 no errors or warnings (notes only), 1 problems found (or a file could\n"
           "not be read), 2 usage error.\n\n"
           "examples:\n"
           "  ecocompute validate tests/data/seed-data\n"
           "  ecocompute validate --db results.db\n"
           "  ecocompute validate a800_summary.csv energy_mistral_7b_fp16.json --format json\n",
           ec_store_default_path(), d.energy_tol_pct, d.summary_tol_pct);
}

int cmd_validate(int argc, char **argv)
{
    ec_format fmt = EC_FORMAT_TABLE;
    ec_validate_options opt;
    ec_validate_options_default(&opt);
    cli_dataset_args ds;
    if (cli_dataset_args_init(CMD, &ds, argc)) return EXIT_FAIL;
    int rc = EXIT_USAGE;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage();
            cli_dataset_args_free(&ds);
            return EXIT_OK;
        } else if (!strcmp(a, "--format") || !strcmp(a, "--energy-tol") ||
                   !strcmp(a, "--summary-tol")) {
            if (i + 1 >= argc) {
                cli_usage_error(CMD, "%s needs a value", a);
                goto out;
            }
            const char *v = argv[++i];
            if (!strcmp(a, "--format") ? cli_parse_format(CMD, v, &fmt)
                : !strcmp(a, "--energy-tol")
                    ? cli_parse_double(CMD, a, v, 0, 1000, &opt.energy_tol_pct)
                    : cli_parse_double(CMD, a, v, 0, 1000, &opt.summary_tol_pct))
                goto out;
        } else if (cli_dataset_arg(CMD, &ds, argc, argv, &i)) {
            goto out;
        }
    }
    if (cli_dataset_args_check(CMD, &ds, "check")) goto out;
    ec_run_record *r;
    size_t n;
    char from[4096];
    rc = EXIT_FAIL;
    if (cli_dataset_args_load(CMD, &ds, &r, &n, from, sizeof from)) goto out;
    ec_findings f = {0};
    if (ec_validate(r, n, &opt, &f)) {
        cli_fail(CMD, "%s", ec_last_error());
        free(r);
        ec_findings_free(&f);
        goto out;
    }
    size_t count[3] = {0, 0, 0};
    ec_table *t = ec_table_new();
    int c_sev = ec_table_column(t, "severity", "Severity");
    int c_check = ec_table_column(t, "check", "Check");
    int c_row = ec_table_column(t, "row", "Row");
    int c_where = ec_table_column(t, "where", "Where");
    int c_msg = ec_table_column(t, "message", "Finding");
    /* A finding is read whole: narrow tables continue it on the next lines. */
    ec_table_wrap(t, c_where);
    ec_table_wrap(t, c_msg);
    for (size_t i = 0; i < f.n; i++) {
        const ec_finding *x = &f.v[i];
        count[x->severity]++;
        ec_table_row(t);
        ec_table_text(t, c_sev, "%s", ec_severity_name(x->severity));
        ec_table_text(t, c_check, "%s", x->check);
        if (x->row >= 0) ec_table_number(t, c_row, "%.0f", (double)x->row);
        ec_table_text(t, c_where, "%s", x->where);
        ec_table_text(t, c_msg, "%s", x->message);
    }
    if (fmt == EC_FORMAT_TABLE && !f.n) printf("no findings\n");
    else ec_table_print(t, fmt, stdout);
    ec_table_free(t);
    fprintf(stderr, "%zu records from %s: %zu errors, %zu warnings, %zu notes\n", n, from,
            count[EC_SEV_ERROR], count[EC_SEV_WARNING], count[EC_SEV_INFO]);
    rc = (count[EC_SEV_ERROR] || count[EC_SEV_WARNING]) ? EXIT_FAIL : EXIT_OK;
    ec_findings_free(&f);
    free(r);
out:
    cli_dataset_args_free(&ds);
    return rc;
}
