/* seed_import.h — readers for the seeds' published data files (github.com/hongping-zh): each
 * file type is recognised by its columns (CSV) or keys (JSON), not by its name, and mapped to
 * flat run records (results.h) that keep the file, its licence and the energy definition its
 * authors used.
 * The mapping per file type is documented in docs/analysis.md §5. Internal to the library: the
 * store's ec_dataset_read() calls it for files that are not ecocompute exports. */
#ifndef ECOCOMPUTE_SEED_IMPORT_H
#define ECOCOMPUTE_SEED_IMPORT_H

#include <stddef.h>

#include "ecocompute/results.h"

/* Reads one seed-data file into *out (malloc'd, *n records; free() it). Per-run rows become one
 * record each (run_index 0, 1, ...); a source's summary row (a mean over its runs) becomes one
 * record with run_index = -1. source is the path relative to the seed-data folder when the path
 * runs through one, else the path as given. Returns 0, or -1 with ec_last_error()
 * "PATH: not a recognised seed-data file (...)" or a parse error naming the file and line. */
int ec_seed_read(const char *path, ec_run_record **out, size_t *n);

#endif
