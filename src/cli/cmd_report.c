/* cmd_report.c — `ecocompute report`: one self-contained HTML dashboard (or Markdown) of a results
 * database or of export files, written to a file that is either new, a previous report, or
 * (with --force) a plain file that is neither an input nor a database. */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataset_args.h"
#include "ecocompute/report.h"

#define CMD "report"
#define MAX_TRACES 6 /* sessions whose power trace is drawn */

static void usage(void)
{
    printf("usage: ecocompute report FILE|FOLDER... | --db PATH [-o FILE] [--format html|md]\n"
           "                         [--title T] [--latest] [--force]\n\n"
           "Writes one self-contained HTML file (opens offline from file://; data, styles,\n"
           "script and SVG charts inline, no network request) with eight views: overview,\n"
           "precisions (J/1k tok and J/request, gross and net, 95%% CIs, reference vs fused),\n"
           "batch size (fitted scaling law), crossover, energy x accuracy, power traces (from\n"
           "the database), compare (2-4 configurations) and runs (searchable). --format md\n"
           "writes the same content as Markdown tables with ASCII bars. docs/report.md shows\n"
           "the views.\n\n"
           "  --db PATH       the results database (opened read-only; power traces come from it)\n"
           "  FILE|FOLDER     ecocompute exports or the seeds' CSV/JSON files (as analyze reads)\n"
           "  -o FILE         where to write (default report.html, or report.md with --format md;\n"
           "                  '-' writes to stdout). An existing FILE is replaced only when it is\n"
           "                  a previous report (recognised by its generator marker)\n"
           "  --format F      html (default) or md\n"
           "  --title T       the report's title (default \"ecocompute report\")\n"
           "  --latest        of a configuration measured by several ecocompute commits, show\n"
           "                  only the runs of the newest (by start time): one program's mean,\n"
           "                  not a pool of code versions; runs without a commit stay\n"
           "  --force         replace an existing plain file that is not a report (never an\n"
           "                  input or a database)\n\n"
           "examples:\n"
           "  ecocompute report --db results.db -o results.html\n"
           "  ecocompute report docs/results/sweep-2026-11-26-packed-b1-b8.csv -o b1-b8.html\n"
           "  ecocompute report docs/results --latest -o results.html --title \"Sweeps\"\n"
           "  ecocompute report --db results.db --format md -o - | head -40\n");
}

/* Same file as an input (by device and inode), so never its target. */
static int is_input(const struct stat *out, const cli_dataset_args *ds)
{
    struct stat st;
    if (ds->db && !stat(ds->db, &st) && st.st_dev == out->st_dev && st.st_ino == out->st_ino)
        return 1;
    for (int i = 0; i < ds->npaths; i++)
        if (!stat(ds->paths[i], &st) && st.st_dev == out->st_dev && st.st_ino == out->st_ino)
            return 1;
    return 0;
}

/* May the report be written to path? A new file, an empty one or a previous report (its
 * generator marker, ec_report_signatures); with --force any plain file but a database
 * (ec_output_check) and never an input. Prints the reason and returns -1 when not. */
static int check_target(const char *path, int force, const cli_dataset_args *ds)
{
    struct stat st;
    if (!stat(path, &st) && S_ISREG(st.st_mode) && is_input(&st, ds)) {
        cli_fail(CMD, "%s is one of the inputs; refusing to write the report over it", path);
        return -1;
    }
    if (ec_output_check(path, "report", ec_report_signatures, force)) {
        cli_fail(CMD, "%s", ec_last_error());
        return -1;
    }
    return 0;
}

/* A complete file or none: written beside the target, then renamed over it. */
static int write_file(const char *path, ec_report_format fmt, const ec_run_record *r, size_t n,
                      const ec_report_options *o)
{
    size_t len = strlen(path) + 32;
    char *tmp = malloc(len);
    if (!tmp) return cli_fail(CMD, "out of memory");
    snprintf(tmp, len, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wx");
    if (!f) {
        cli_fail(CMD, "cannot write %s: %s", tmp, strerror(errno));
        free(tmp);
        return EXIT_FAIL;
    }
    int rc = ec_report_write(f, fmt, r, n, o);
    if (fclose(f) && !rc) rc = ec_set_error("closing %s: %s", tmp, strerror(errno));
    if (!rc && rename(tmp, path)) rc = ec_set_error("cannot write %s: %s", path, strerror(errno));
    if (rc) {
        unlink(tmp);
        cli_fail(CMD, "%s", ec_last_error());
    }
    free(tmp);
    return rc ? EXIT_FAIL : EXIT_OK;
}

int cmd_report(int argc, char **argv)
{
    const char *out = NULL, *title = NULL;
    ec_report_format fmt = EC_REPORT_HTML;
    int force = 0, latest = 0;
    cli_dataset_args ds;
    if (cli_dataset_args_init(CMD, &ds, argc)) return EXIT_FAIL;
    int rc = EXIT_USAGE;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage();
            cli_dataset_args_free(&ds);
            return EXIT_OK;
        }
        int takes = !strcmp(a, "-o") || !strcmp(a, "--format") || !strcmp(a, "--title");
        if (takes && i + 1 >= argc) {
            cli_usage_error(CMD, "%s needs a value", a);
            goto done;
        }
        if (!strcmp(a, "-o")) {
            out = argv[++i];
            if (!out[0]) {
                cli_usage_error(CMD, "-o needs a file name");
                goto done;
            }
        } else if (!strcmp(a, "--title")) {
            title = argv[++i];
        } else if (!strcmp(a, "--format")) {
            const char *v = argv[++i];
            if (!strcmp(v, "html")) fmt = EC_REPORT_HTML;
            else if (!strcmp(v, "md") || !strcmp(v, "markdown")) fmt = EC_REPORT_MARKDOWN;
            else {
                cli_usage_error(CMD, "--format must be html or md, got '%s'", v);
                goto done;
            }
        } else if (!strcmp(a, "--force")) {
            force = 1;
        } else if (!strcmp(a, "--latest")) {
            latest = 1;
        } else if (cli_dataset_arg(CMD, &ds, argc, argv, &i)) {
            goto done;
        }
    }
    if (cli_dataset_args_check(CMD, &ds, "report")) goto done;
    if (!out) out = fmt == EC_REPORT_MARKDOWN ? "report.md" : "report.html";
    int to_stdout = !strcmp(out, "-");
    rc = EXIT_FAIL;
    /* Checked before the load, so a refused target costs nothing; on any later failure the
     * temporary file is removed and the target is untouched. */
    if (!to_stdout && check_target(out, force, &ds)) goto done;
    ec_run_record *r;
    size_t n;
    char from[4096];
    if (cli_dataset_args_load(CMD, &ds, &r, &n, from, sizeof from)) goto done;
    if (latest && cli_records_latest(CMD, r, &n)) {
        free(r);
        goto done;
    }
    ec_report_traces traces = {0};
    if (ds.db) {
        if (ec_report_load_traces(ds.db, r, n, MAX_TRACES, &traces)) {
            cli_fail(CMD, "%s: %s", ds.db, ec_last_error());
            free(r);
            goto done;
        }
    } else {
        snprintf(traces.why_none, sizeof traces.why_none,
                 "export files carry no traces; they live in the results database. Report it "
                 "with <code>--db PATH</code> after <code>ecocompute bench --trace FILE</code>.");
    }
    ec_report_options o = {.title = title, .input = from, .traces = &traces};
    if (to_stdout) {
        rc = ec_report_write(stdout, fmt, r, n, &o) ? cli_fail(CMD, "%s", ec_last_error())
                                                    : EXIT_OK;
    } else {
        rc = write_file(out, fmt, r, n, &o);
        if (rc == EXIT_OK)
            fprintf(stderr, "ecocompute report: %zu runs from %s, %zu power trace%s: %s\n", n,
                    from, traces.n, traces.n == 1 ? "" : "s", out);
    }
    ec_report_traces_free(&traces);
    free(r);
done:
    cli_dataset_args_free(&ds);
    return rc;
}
