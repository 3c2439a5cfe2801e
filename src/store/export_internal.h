/* export_internal.h — pieces of the export writers shared by dataset.c (CSV, JSON, table),
 * export_formats.c (JSONL, Markdown, SQL) and dataset_dir.c (the published dataset). */
#ifndef EC_EXPORT_INTERNAL_H
#define EC_EXPORT_INTERNAL_H

#include "ecocompute/store.h"

#include <cjson/cJSON.h>

/* One run as a JSON object, every column a key in file order (a JSON export's row, a JSONL
 * line). */
cJSON *ec_export_row_json(const ec_run_record *r);
/* EC_EXPORT_JSONL, EC_EXPORT_MD and EC_EXPORT_SQL; 0 or -1 (ec_last_error). */
int ec_export_write_other(FILE *out, ec_export_format fmt, const ec_run_record *r, size_t n);

#endif
