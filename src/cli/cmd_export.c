/* cmd_export.c — `ecocompute export`: the stored runs as CSV, JSON, JSONL, Markdown or SQL, one
 * row per measured run with the documented column set (docs/data-schema.md), or with --summary
 * one row per configuration, with --accuracy the stored accuracy evaluations (`eval --db`), or
 * with --dataset a directory ready to publish. Opens the database read-only, so it works while
 * a sweep writes. */
#include "cli.h"
#include "summary_table.h"

#include "ecocompute/accuracy.h"
#include "ecocompute/store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CMD "export"

typedef struct {
    const char *db, *out, *dataset, *licence;
    ec_export_format fmt;
    int summary, force, accuracy;
    ec_run_filter f;
} export_args;

/* What is written: runs, or accuracy rows (--accuracy). */
typedef struct {
    ec_run_record *runs;
    ec_accuracy_record *acc;
    size_t n;
} export_rows;

static void usage(void)
{
    printf("usage: ecocompute export [--db PATH] [--format csv|json|jsonl|md|sql|table] [-o FILE]\n"
           "                         [--summary] [--dataset DIR [--licence ID]]\n"
           "                         [--model M] [--precision P] [--kernels K] [--device D]\n"
           "                         [--gpu NAME|UUID] [--batch B] [--session ID]\n"
           "       ecocompute export --accuracy [--db PATH] [--format csv|json|table] [-o FILE]\n"
           "                         [--model M] [--precision P] [--kernels K] [--device D]\n\n"
           "Writes the stored runs, one row per measured run (of each configuration its final\n"
           "attempt), with the columns documented in docs/data-schema.md: provenance, the\n"
           "configuration, prefill and decode phases, gross and net energy, J/1k tokens both\n"
           "ways, power, temperature, clocks and throttling. Every row keeps its source, licence\n"
           "and energy definition, so `ecocompute import` reads csv, json and jsonl back\n"
           "losslessly. --summary writes one row per configuration instead (n, mean, sd, CV,\n"
           "gate, change vs fp16); summaries are not importable.\n"
           "--accuracy writes the stored accuracy evaluations instead (`eval --db`: perplexity\n"
           "with its text file, window and stride, KL and top-1 vs float32, provenance), one row\n"
           "per evaluated precision; `ecocompute import` reads them back.\n\n"
           "  --db PATH        results database (default %s)\n"
           "  --format F       csv (default); json (one document); jsonl (one JSON object per\n"
           "                   run and line); md (a Markdown table of the main columns); sql\n"
           "                   (CREATE TABLE IF NOT EXISTS ecocompute_runs + INSERTs, for\n"
           "                   `sqlite3 runs.db < runs.sql`); table. --summary: csv, json, table\n"
           "  -o FILE          write to FILE (replaced only once complete) instead of stdout;\n"
           "                   an existing FILE must be an earlier export\n"
           "  --force          replace an existing plain file that is not an export (never a\n"
           "                   results database)\n"
           "  --summary        one row per configuration\n"
           "  --dataset DIR    write DIR/runs.jsonl and DIR/README.md, a dataset card (each\n"
           "                   column's unit and meaning, gross vs net energy, the protocol, the\n"
           "                   licence and provenance of the rows), ready to publish; DIR must be\n"
           "                   new, empty or an earlier --dataset\n"
           "  --licence ID     with --dataset: the licence (SPDX id) of the runs measured here\n"
           "  --accuracy       the accuracy evaluations (filters: model, precision, kernels,\n"
           "                   device)\n"
           "  --model, --precision, --kernels, --device, --gpu, --batch, --session\n"
           "                   keep only matching runs\n\n"
           "examples:\n"
           "  ecocompute export -o runs.csv\n"
           "  ecocompute export --format json --model TinyLlama-1.1B --batch 1\n"
           "  ecocompute export --format md --batch 1          # a table for an issue or a PR\n"
           "  ecocompute export --format sql | sqlite3 runs.db\n"
           "  ecocompute export --dataset my-runs --licence CC-BY-4.0\n"
           "  ecocompute export --summary --format table\n"
           "  ecocompute export --accuracy -o accuracy.csv\n",
           ec_store_default_path());
}

static int parse(int argc, char **argv, export_args *a)
{
    memset(a, 0, sizeof *a);
    a->db = ec_store_default_path();
    a->fmt = EC_EXPORT_CSV;
    int have_format = 0;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            usage();
            return -1;
        }
        if (!strcmp(f, "--summary")) {
            a->summary = 1;
            continue;
        }
        if (!strcmp(f, "--force")) {
            a->force = 1;
            continue;
        }
        if (!strcmp(f, "--accuracy")) {
            a->accuracy = 1;
            continue;
        }
        int db = cli_db_arg(CMD, argc, argv, &i, &a->db);
        if (db < 0) return EXIT_USAGE;
        if (db) continue;
        static const char *const valued[] = {"--format", "-o",        "--model",   "--precision",
                                             "--kernels", "--device", "--gpu",     "--batch",
                                             "--session", "--dataset", "--licence", NULL};
        int known = 0;
        for (int k = 0; valued[k]; k++)
            known |= !strcmp(f, valued[k]);
        if (!known) return cli_usage_error(CMD, "unknown option '%s'", f);
        if (i + 1 >= argc) return cli_usage_error(CMD, "%s needs a value", f);
        const char *v = argv[++i];
        long b;
        if (!strcmp(f, "-o")) a->out = v;
        else if (!strcmp(f, "--model")) a->f.model = v;
        else if (!strcmp(f, "--precision")) a->f.precision = v;
        else if (!strcmp(f, "--kernels")) a->f.kernels = v;
        else if (!strcmp(f, "--device")) a->f.device = v;
        else if (!strcmp(f, "--gpu")) a->f.gpu = v;
        else if (!strcmp(f, "--session")) a->f.session = v;
        else if (!strcmp(f, "--dataset")) a->dataset = v;
        else if (!strcmp(f, "--licence")) a->licence = v;
        else if (!strcmp(f, "--batch")) {
            if (cli_parse_long(CMD, f, v, 1, 4096, &b) != 0) return EXIT_USAGE;
            a->f.batch = (int)b;
        } else if (ec_export_format_parse(v, &a->fmt) != 0) {
            return cli_usage_error(CMD, "--format: '%s' is not csv, json, jsonl, md, sql or table",
                                   v);
        } else {
            have_format = 1;
        }
    }
    if (a->dataset && (a->out || have_format || a->summary))
        return cli_usage_error(CMD, "--dataset writes its own files: no -o, --format or --summary");
    if (a->licence && !a->dataset) return cli_usage_error(CMD, "--licence goes with --dataset");
    if (a->licence && (!*a->licence || strpbrk(a->licence, " \t\r\n|")))
        return cli_usage_error(CMD, "--licence: '%s' is not an SPDX id such as CC-BY-4.0",
                               a->licence);
    if ((a->summary || a->accuracy) && a->fmt != EC_EXPORT_CSV && a->fmt != EC_EXPORT_JSON &&
        a->fmt != EC_EXPORT_TABLE)
        return cli_usage_error(CMD, "%s writes csv, json or table",
                               a->summary ? "--summary" : "--accuracy");
    if (a->accuracy && (a->summary || a->dataset || a->f.gpu || a->f.batch || a->f.session))
        return cli_usage_error(CMD, "--accuracy takes no --summary, --dataset, --gpu, --batch or "
                                    "--session");
    return 0;
}

/* Loads the rows to write: runs, or with --accuracy the accuracy evaluations (none in a
 * database from before them, which is said). */
static int load_rows(const export_args *a, ec_store *st, export_rows *x)
{
    memset(x, 0, sizeof *x);
    if (!a->accuracy) return ec_store_load_runs(st, &a->f, &x->runs, &x->n);
    ec_accuracy_filter f = {a->f.model, a->f.precision, a->f.kernels, a->f.device};
    if (ec_store_load_accuracy(st, &f, &x->acc, &x->n) != 0) return -1;
    if (x->n == 0)
        fprintf(stderr, "ecocompute export: no accuracy rows in %s%s\n", a->db,
                ec_store_schema_version(st) < 5 ? " (its schema predates them: eval --db or "
                                                  "import migrates it)"
                                                : " (eval --db stores them)");
    return 0;
}

static int write_all(const export_args *a, FILE *out, const export_rows *x)
{
    const ec_run_record *r = x->runs;
    size_t n = x->n;
    /* Summaries and accuracy rows are written as csv, json or table (parse checked). */
    ec_format plain = a->fmt == EC_EXPORT_JSON    ? EC_FORMAT_JSON
                      : a->fmt == EC_EXPORT_TABLE ? EC_FORMAT_TABLE
                                                  : EC_FORMAT_CSV;
    if (a->accuracy) return ec_accuracy_write(out, plain, x->acc, n);
    if (!a->summary) return ec_dataset_write(out, a->fmt, r, n);
    ec_bench_summary *s;
    size_t ns;
    if (ec_bench_summarize(r, n, &s, &ns) != 0) return -1;
    cli_print_summary(s, ns, plain, out);
    free(s);
    if (fflush(out) != 0 || ferror(out)) return ec_set_error("write failed: %s", strerror(errno));
    return 0;
}

int cmd_export(int argc, char **argv)
{
    export_args a;
    int rc = parse(argc, argv, &a);
    if (rc) return rc < 0 ? EXIT_OK : rc;
    /* What an export starts with, blanks aside: runs (every format but table) and summaries
     * (CSV, JSON). */
    const char *signatures[16];
    size_t ns = 0;
    for (const char *const *s = ec_export_signatures(); *s && ns < 12; s++)
        signatures[ns++] = *s;
    signatures[ns++] = "model,source,precision,";
    signatures[ns++] = "[{\"model\":";
    signatures[ns++] = "source,licence,accuracy_id,";
    signatures[ns] = NULL;
    if (a.out && ec_output_check(a.out, "export", signatures, a.force) != 0)
        return cli_usage_error(CMD, "-o: %s", ec_last_error());
    if (a.dataset && ec_dataset_dir_check(a.dataset) != 0)
        return cli_usage_error(CMD, "--dataset: %s", ec_last_error());
    ec_store *st;
    if (ec_store_open(&st, a.db, 1) != 0) return cli_fail(CMD, "%s", ec_last_error());
    export_rows x;
    rc = load_rows(&a, st, &x);
    ec_store_close(st);
    if (rc != 0) return cli_fail(CMD, "%s", ec_last_error());
    if (a.dataset) {
        rc = ec_dataset_publish(a.dataset, x.runs, x.n, a.licence);
        int own = 0;
        for (size_t i = 0; i < x.n; i++)
            own |= !strcmp(x.runs[i].source, "ecocompute") && !x.runs[i].licence[0];
        free(x.runs);
        if (rc != 0) return cli_fail(CMD, "%s", ec_last_error());
        fprintf(stderr, "ecocompute export: %zu runs written to %s/runs.jsonl, card %s/README.md\n",
                x.n, a.dataset, a.dataset);
        if (own && !a.licence)
            fprintf(stderr, "ecocompute export: no --licence: the card says the licence of the "
                            "runs measured here is not chosen yet\n");
        return EXIT_OK;
    }
    if (!a.out) {
        rc = write_all(&a, stdout, &x);
        free(x.runs);
        free(x.acc);
        return rc ? cli_fail(CMD, "%s", ec_last_error()) : EXIT_OK;
    }
    /* A complete file or none: write beside the target, then rename over it. */
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", a.out, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        free(x.runs);
        free(x.acc);
        return cli_fail(CMD, "cannot write %s: %s", tmp, strerror(errno));
    }
    rc = write_all(&a, f, &x);
    free(x.runs);
    free(x.acc);
    if (fclose(f) != 0 && rc == 0) rc = ec_set_error("closing %s: %s", tmp, strerror(errno));
    if (rc == 0 && rename(tmp, a.out) != 0)
        rc = ec_set_error("cannot write %s: %s", a.out, strerror(errno));
    if (rc != 0) {
        unlink(tmp);
        return cli_fail(CMD, "%s", ec_last_error());
    }
    fprintf(stderr, "ecocompute export: %zu %s written to %s\n", x.n,
            a.accuracy ? "accuracy rows" : "runs", a.out);
    return EXIT_OK;
}
