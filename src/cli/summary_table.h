/* summary_table.h — the per-configuration summary table shared by `bench` (printed at the end
 * of a sweep) and `export --summary`. */
#ifndef ECOCOMPUTE_CLI_SUMMARY_TABLE_H
#define ECOCOMPUTE_CLI_SUMMARY_TABLE_H

#include "ecocompute/bench.h"

/* Table format: mean ± sd cells for people; CSV/JSON: separate numeric mean, sd and CV
 * columns (docs/data-schema.md, "summary"). */
void cli_print_summary(const ec_bench_summary *s, size_t n, ec_format fmt, FILE *out);

#endif
