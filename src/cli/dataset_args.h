/* dataset_args.h — the datasets that analyze and validate work on: files (ecocompute exports,
 * the seeds' published CSV/JSON files), folders of them, or the results database; the command
 * line arguments that name them, parsed the same way by both commands. */
#ifndef ECOCOMPUTE_CLI_DATASET_ARGS_H
#define ECOCOMPUTE_CLI_DATASET_ARGS_H

#include <stddef.h>

#include "ecocompute/results.h"

/* Where a command's records come from: FILE|FOLDER... or --db PATH, never both. */
typedef struct {
    char **paths; /* [argc]: the positional arguments, pointing into argv */
    int npaths;
    const char *db; /* --db PATH, or NULL */
} cli_dataset_args;

/* One data file: named on the command line (named = 1: it must be a data file) or found in a
 * named folder (named = 0: other .csv/.json files are expected there and may be skipped). */
typedef struct {
    char *path;
    int named;
} cli_dataset_file;

/* The data files paths name: each FILE as given, each FOLDER's .csv and .json files walked
 * recursively in name order. On failure prints "ecocompute CMD: message" and returns -1. */
int cli_dataset_files(const char *cmd, char *const *paths, int npaths, cli_dataset_file **out,
                      int *n);
void cli_dataset_files_free(cli_dataset_file *f, int n);

/* Prepares d for a command line of argc arguments. Returns -1 (message printed) on failure. */
int cli_dataset_args_init(const char *cmd, cli_dataset_args *d, int argc);
void cli_dataset_args_free(cli_dataset_args *d);

/* The arguments a command does not handle itself: --db PATH (i advances past the value) or a
 * FILE|FOLDER; any other option is unknown. Returns -1 after printing a usage error. */
int cli_dataset_arg(const char *cmd, cli_dataset_args *d, int argc, char **argv, int *i);

/* After parsing: exactly one of files and --db. verb says what the command does with them
 * ("analyse", "check"). Returns -1 after printing a usage error. */
int cli_dataset_args_check(const char *cmd, const cli_dataset_args *d, const char *verb);

/* Loads the records d names into *out (malloc'd) and writes where they came from into from
 * ("N files" or the database path) for the command's closing line on stderr. FILEs must be
 * readable; a FOLDER is walked recursively in name order and its .csv/.json files that are not
 * data files are skipped with a note on stderr; the database is opened read-only. On failure
 * prints "ecocompute CMD: message" and returns -1. */
int cli_dataset_args_load(const char *cmd, const cli_dataset_args *d, ec_run_record **out,
                          size_t *n, char *from, size_t from_size);

/* --latest: keeps of each configuration only its newest commit's runs (ec_records_latest) and
 * says on stderr how many older runs it left out. On failure prints "ecocompute CMD: message"
 * and returns -1 (r is still the caller's to free). */
int cli_records_latest(const char *cmd, ec_run_record *r, size_t *n);

#endif
