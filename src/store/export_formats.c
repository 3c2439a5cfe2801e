/* export_formats.c — the export formats for sharing beside CSV and JSON (dataset.c): JSONL (one
 * run object per line, as datasets are published), a Markdown table of the main columns (for an
 * issue or a pull request) and SQL statements that sqlite3 loads into a table of every column.
 * llama-bench offers the same set; the column set is columns.c's. */
#include "ecocompute/store.h"
#include "store/export_internal.h"
#include "store/store_internal.h"

#include <stdlib.h>
#include <string.h>

#define SQL_TABLE "ecocompute_runs"

/* First lines, also the signatures by which a later export recognises the file as one of its own. */
#define SQL_HEAD "-- ecocompute export: runs"
#define MD_HEAD "| model | precision |"

int ec_export_format_parse(const char *text, ec_export_format *out)
{
    static const char *const names[] = {"csv", "json", "jsonl", "md", "sql", "table"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(text, names[i])) {
            *out = (ec_export_format)i;
            return 0;
        }
    return -1;
}

const char *const *ec_export_signatures(void)
{
    static const char *const signatures[] = {
        "source,licence,energy_definition,", /* CSV */
        "{\"ecocompute_export\":",           /* JSON */
        "{\"source\":",                      /* JSONL */
        MD_HEAD, SQL_HEAD, NULL};
    return signatures;
}

static int write_jsonl(FILE *out, const ec_run_record *r, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        cJSON *row = ec_export_row_json(&r[i]);
        char *text = row ? cJSON_PrintUnformatted(row) : NULL;
        cJSON_Delete(row);
        if (!text) return ec_set_error("out of memory writing JSONL");
        fputs(text, out);
        fputc('\n', out);
        free(text);
    }
    return 0;
}

static const ec_column *column(const char *name)
{
    size_t nc;
    const ec_column *c = ec_run_columns(&nc);
    for (size_t j = 0; j < nc; j++)
        if (!strcmp(c[j].name, name)) return &c[j];
    return NULL;
}

/* The columns a reader of a shared table needs to compare runs: the configuration, the GPU, the
 * throughput, both energy definitions and where the row came from. Reals to 2 decimals; unknown
 * values empty. */
static void write_md(FILE *out, const ec_run_record *r, size_t n)
{
    static const char *const names[] = {"model",       "precision",   "kernels",
                                        "device",      "tp",          "gpu_name",    "batch",
                                        "gen_len",     "run_index",   "gate",
                                        "tok_s",       "j_per_1k_gross", "j_per_1k_net",
                                        "avg_power_w", "energy_definition", "source"};
    enum { N = sizeof names / sizeof *names };
    const ec_column *c[N];
    for (size_t j = 0; j < N; j++)
        c[j] = column(names[j]);
    for (size_t j = 0; j < N; j++)
        fprintf(out, "| %s%s%s%s ", c[j]->name, *c[j]->unit ? " (" : "", c[j]->unit,
                *c[j]->unit ? ")" : "");
    fputs("|\n", out);
    for (size_t j = 0; j < N; j++) {
        int number = c[j]->type == EC_COL_REAL || c[j]->type == EC_COL_INT;
        fputs(number ? "|---:" : "|---", out);
    }
    fputs("|\n", out);
    char buf[256];
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < N; j++) {
            fputs("| ", out);
            const char *p = (const char *)&r[i] + c[j]->offset;
            if (c[j]->type == EC_COL_REAL) {
                double v = *(const double *)(const void *)p;
                if (ec_column_text(c[j], &r[i], buf, sizeof buf)) fprintf(out, "%.2f", v);
            } else if (c[j]->type == EC_COL_INT && *(const int *)(const void *)p == -1) {
                /* an unknown count: empty, as an unknown real */
            } else if (ec_column_text(c[j], &r[i], buf, sizeof buf)) {
                for (const char *s = buf; *s; s++) { /* a '|' would end the cell */
                    if (*s == '|') fputc('\\', out);
                    fputc(*s == '\n' || *s == '\r' ? ' ' : *s, out);
                }
            }
            fputc(' ', out);
        }
        fputs("|\n", out);
    }
}

static const char *sql_type(ec_column_type t)
{
    return t == EC_COL_REAL ? "REAL" : t == EC_COL_INT || t == EC_COL_LONG ? "INTEGER" : "TEXT";
}

/* One transaction: loading is all or nothing, and fast. The table is created only when absent,
 * so several exports load into one database. */
static void write_sql(FILE *out, const ec_run_record *r, size_t n)
{
    size_t nc;
    const ec_column *c = ec_run_columns(&nc);
    fprintf(out, SQL_HEAD " (schema %d), %zu rows. Load: sqlite3 runs.db < THIS_FILE\n",
            EC_STORE_SCHEMA_VERSION, n);
    fputs("BEGIN TRANSACTION;\nCREATE TABLE IF NOT EXISTS " SQL_TABLE " (\n", out);
    for (size_t j = 0; j < nc; j++)
        fprintf(out, "  \"%s\" %s%s\n", c[j].name, sql_type(c[j].type), j + 1 < nc ? "," : "");
    fputs(");\n", out);
    char buf[256];
    for (size_t i = 0; i < n; i++) {
        fputs("INSERT INTO " SQL_TABLE " VALUES (", out);
        for (size_t j = 0; j < nc; j++) {
            if (j) fputc(',', out);
            if (!ec_column_text(&c[j], &r[i], buf, sizeof buf)) {
                fputs("NULL", out);
            } else if (!strcmp(sql_type(c[j].type), "TEXT")) {
                fputc('\'', out);
                for (const char *s = buf; *s; s++) {
                    if (*s == '\'') fputc('\'', out);
                    fputc(*s, out);
                }
                fputc('\'', out);
            } else {
                fputs(buf, out);
            }
        }
        fputs(");\n", out);
    }
    fputs("COMMIT;\n", out);
}

int ec_export_write_other(FILE *out, ec_export_format fmt, const ec_run_record *r, size_t n)
{
    switch (fmt) {
    case EC_EXPORT_JSONL: return write_jsonl(out, r, n);
    case EC_EXPORT_MD: write_md(out, r, n); return 0;
    case EC_EXPORT_SQL: write_sql(out, r, n); return 0;
    default: return ec_set_error("export format %d is written by dataset.c", (int)fmt);
    }
}
