/* cmd_import.c — `ecocompute import FILE|FOLDER...`: reads ecocompute exports (CSV/JSON: runs,
 * or accuracy evaluations) and the seeds' published measurement files (named, or found in
 * folders) into the results database, keeping each row's source, licence and energy definition.
 * A file is stored in one transaction; rows already stored are skipped. */
#include "cli.h"
#include "dataset_args.h"

#include "ecocompute/accuracy.h"
#include "ecocompute/store.h"

#include <stdlib.h>
#include <string.h>

#define CMD "import"

static void usage(void)
{
    printf("usage: ecocompute import [--db PATH] [--format table|json|csv] FILE|FOLDER...\n\n"
           "Stores the runs of each FILE in the results database: `ecocompute export` files\n"
           "(CSV or JSON, recognised by their content: runs, or accuracy evaluations from\n"
           "`export --accuracy`) and the seeds' published CSV/JSON files. A FOLDER's .csv and\n"
           ".json files are imported recursively in name order, as analyze reads them; those\n"
           "that are not data files are skipped with a note on stderr.\n"
           "Every row keeps its source, licence and energy definition (gross, net = idle-\n"
           "subtracted, or unknown). Importing a file twice adds nothing the second time; each\n"
           "file is stored completely or not at all. Prints, per file, the rows read and added.\n\n"
           "  --db PATH     results database (default %s)\n"
           "  --format F    report as table (default), json or csv\n\n"
           "examples:\n"
           "  ecocompute import runs.csv\n"
           "  ecocompute import --db team.db alice.json bob.json\n"
           "  ecocompute import --db seeds.db tests/data/seed-data\n",
           ec_store_default_path());
}

/* An accuracy export: stored into the accuracy table. Returns 1 when path is not one (nothing
 * done), 0 when stored (*n read, *added new), -1 on failure (ec_last_error). */
static int import_accuracy(ec_store *st, const char *path, size_t *n, size_t *added)
{
    ec_accuracy_record *r;
    int rc = ec_accuracy_read(path, &r, n);
    if (rc != 0) return rc;
    rc = ec_store_insert_accuracy(st, r, *n, added);
    free(r);
    return rc;
}

int cmd_import(int argc, char **argv)
{
    const char *db = ec_store_default_path();
    ec_format fmt = EC_FORMAT_TABLE;
    char **paths = calloc((size_t)argc, sizeof *paths);
    int npaths = 0;
    if (!paths) return cli_fail(CMD, "out of memory");
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            usage();
            free(paths);
            return EXIT_OK;
        }
        int rc = 0, took = cli_db_arg(CMD, argc, argv, &i, &db);
        if (took > 0) continue;
        if (took < 0)
            rc = EXIT_USAGE;
        else if (!strcmp(f, "--format"))
            rc = i + 1 >= argc                            ? cli_usage_error(CMD, "%s needs a value", f)
                 : cli_parse_format(CMD, argv[++i], &fmt) ? EXIT_USAGE
                                                          : 0;
        else if (f[0] == '-' && f[1])
            rc = cli_usage_error(CMD, "unknown option '%s'", f);
        else
            paths[npaths++] = argv[i];
        if (rc) {
            free(paths);
            return rc;
        }
    }
    cli_dataset_file *files = NULL;
    int nfiles = 0;
    int rc = npaths == 0 ? cli_usage_error(CMD, "no file or folder to import")
             : cli_dataset_files(CMD, paths, npaths, &files, &nfiles) ? EXIT_FAIL
                                                                      : EXIT_OK;
    free(paths);
    if (rc) return rc;
    ec_store *st;
    if (ec_store_open(&st, db, 0) != 0) {
        cli_dataset_files_free(files, nfiles);
        return cli_fail(CMD, "%s", ec_last_error());
    }
    ec_table *t = ec_table_new();
    int c_file = ec_table_column(t, "file", "File");
    int c_read = ec_table_column(t, "rows", "Rows read");
    int c_new = ec_table_column(t, "added", "Added");
    int c_dup = ec_table_column(t, "already_stored", "Already stored");
    int c_src = ec_table_column(t, "source", "Source (first row)");
    int c_def = ec_table_column(t, "energy_definition", "Energy definition (first row)");
    for (int i = 0; i < nfiles && rc == EXIT_OK; i++) {
        ec_run_record *r;
        size_t n, added = 0;
        int acc = import_accuracy(st, files[i].path, &n, &added);
        if (acc < 0) {
            rc = cli_fail(CMD, "%s", ec_last_error());
            break;
        }
        if (acc == 0) {
            ec_table_row(t);
            ec_table_text(t, c_file, "%s", files[i].path);
            ec_table_number(t, c_read, "%.0f", (double)n);
            ec_table_number(t, c_new, "%.0f", (double)added);
            ec_table_number(t, c_dup, "%.0f", (double)(n - added));
            ec_table_text(t, c_src, "accuracy rows");
            continue;
        }
        if (ec_dataset_read(files[i].path, &r, &n) != 0) {
            /* A folder also holds metadata and fitted curves: those are skipped, said once. */
            if (!files[i].named) {
                fprintf(stderr, "skipped %s\n", ec_last_error());
                continue;
            }
            rc = cli_fail(CMD, "%s", ec_last_error());
            break;
        }
        if (ec_store_insert_records_counted(st, r, n, &added) != 0)
            rc = cli_fail(CMD, "%s: %s", files[i].path, ec_last_error());
        else {
            ec_table_row(t);
            ec_table_text(t, c_file, "%s", files[i].path);
            ec_table_number(t, c_read, "%.0f", (double)n);
            ec_table_number(t, c_new, "%.0f", (double)added);
            ec_table_number(t, c_dup, "%.0f", (double)(n - added));
            if (n) {
                ec_table_text(t, c_src, "%s", r[0].source);
                ec_table_text(t, c_def, "%s", ec_energy_definition_name(r[0].energy_definition));
            }
        }
        free(r);
    }
    ec_store_close(st);
    if (ec_table_rows(t)) ec_table_print(t, fmt, stdout);
    ec_table_free(t);
    cli_dataset_files_free(files, nfiles);
    return rc;
}
