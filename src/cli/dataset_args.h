/* dataset_args.h — loading the datasets that analyze and validate work on: files (ecocompute
 * exports, the seeds' published CSV/JSON files), folders of them, or the results database. */
#ifndef ECOCOMPUTE_CLI_DATASET_ARGS_H
#define ECOCOMPUTE_CLI_DATASET_ARGS_H

#include <stddef.h>

#include "ecocompute/results.h"

/* Reads every path into one record array (*out, malloc'd). A folder is walked recursively in
 * name order and its .csv/.json files that are not data files are skipped with a note on stderr;
 * a file named explicitly must be readable. On failure prints "ecocompute CMD: message" and
 * returns -1. *nfiles counts the files read. */
int cli_load_dataset(const char *cmd, char *const *paths, int npaths, ec_run_record **out,
                     size_t *n, int *nfiles);

/* Loads every run of the results database at path (read-only). On failure prints
 * "ecocompute CMD: message" and returns -1. */
int cli_load_db(const char *cmd, const char *path, ec_run_record **out, size_t *n);

#endif
