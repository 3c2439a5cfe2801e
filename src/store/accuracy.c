/* accuracy.c — accuracy evaluations in the results database: the column table of
 * ec_accuracy_record (the export file order, the `accuracy` table's columns and
 * docs/data-schema.md, which test_accuracy checks against it), and storing and loading rows. */
#include "ecocompute/accuracy.h"

#include "store/store_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* First version whose databases have the accuracy table. */
#define ACCURACY_SCHEMA_VERSION 5

#define TXT(name, field, desc) {name, EC_COL_TEXT, "", offsetof(ec_accuracy_record, field), \
                                sizeof(((ec_accuracy_record *)0)->field), desc}
#define COL(name, type, unit, field, desc) \
    {name, type, unit, offsetof(ec_accuracy_record, field), 0, desc}

/* New columns are only ever appended. */
static const ec_column columns[] = {
    TXT("source", source, "\"ecocompute\" for own evaluations, else the imported source"),
    TXT("licence", licence, "licence of the source's data (\"\" for own evaluations)"),
    COL("accuracy_id", EC_COL_LONG, "", accuracy_id, "row id in the database it was exported from"),
    TXT("timestamp_utc", timestamp_utc, "when the evaluation finished, ISO 8601"),
    TXT("ecocompute_version", ecocompute_version, "ecocompute version that evaluated"),
    TXT("git_commit", git_commit, "commit it was built from"),
    TXT("model", model, "--model as given: catalog name, model directory or file"),
    COL("params_b", EC_COL_REAL, "billions", params_b, "parameters"),
    TXT("precision", precision, "evaluated precision as --precision spells it (docs/formats.md)"),
    TXT("kernels", kernels, "kernel family (fused, reference; as bench records it, also on the CPU)"),
    TXT("device", device, "where the precision ran: cpu, cuda:N"),
    TXT("gpu_name", gpu_name, "GPU model (\"\" on the CPU)"),
    TXT("gpu_uuid", gpu_uuid, "GPU UUID (\"\" on the CPU)"),
    COL("int8_threshold", EC_COL_REAL, "", int8_threshold,
        "int8-mixed outlier threshold (empty for other precisions)"),
    COL("quantize_head", EC_COL_INT, "", quantize_head, "1: output head in the precision too"),
    TXT("tokenizer", tokenizer, "tokenizer file name (perplexity)"),
    TXT("tokenizer_sha256", tokenizer_sha256, "SHA-256 of the tokenizer file"),
    TXT("dataset", dataset, "text file name the perplexity is over"),
    TXT("dataset_sha256", dataset_sha256, "SHA-256 of the text file's bytes"),
    COL("window", EC_COL_INT, "tokens", window, "context: tokens per window, BOS included"),
    COL("stride", EC_COL_INT, "tokens", stride, "tokens each window advances by"),
    COL("ppl_tokens", EC_COL_LONG, "tokens", ppl_tokens, "tokens scored"),
    COL("perplexity", EC_COL_REAL, "", perplexity, "exp(mean negative log-likelihood per token)"),
    COL("kl_positions", EC_COL_LONG, "tokens", kl_positions,
        "positions compared with float32 (batch x tokens)"),
    COL("kl_seed", EC_COL_LONG, "", kl_seed, "seed of the synthetic prompts compared"),
    COL("kl_vs_f32", EC_COL_REAL, "nats", kl_vs_f32, "mean KL(p_f32 || p) of next-token distributions"),
    COL("top1_agreement_pct", EC_COL_REAL, "%", top1_agreement_pct,
        "positions whose most likely token is float32's"),
    COL("max_abs_dlogit", EC_COL_REAL, "logit", max_abs_dlogit,
        "largest |logit difference| from float32"),
};

const ec_column *ec_accuracy_columns(size_t *n)
{
    *n = sizeof columns / sizeof columns[0];
    return columns;
}

void ec_accuracy_record_init(ec_accuracy_record *r)
{
    memset(r, 0, sizeof *r);
    for (size_t j = 0; j < sizeof columns / sizeof columns[0]; j++) {
        void *p = (char *)r + columns[j].offset;
        if (columns[j].type == EC_COL_REAL) *(double *)p = NAN;
        if (columns[j].type == EC_COL_INT) *(int *)p = -1;
        if (columns[j].type == EC_COL_LONG) *(long *)p = -1;
    }
}

/* accuracy_id is the table's own id (the rowid), not a column of its own. */
static int is_id(const ec_column *c)
{
    return !strcmp(c->name, "accuracy_id");
}

static int fail(ec_store *s, const char *what)
{
    return ec_set_error("%s: %s: %s", ec_store_file(s), what,
                        sqlite3_errmsg(ec_store_sqlite(s)));
}

int ec_store_insert_accuracy(ec_store *s, const ec_accuracy_record *r, size_t n,
                             size_t *inserted)
{
    sqlite3 *db = ec_store_sqlite(s);
    size_t nc;
    const ec_column *c = ec_accuracy_columns(&nc);
    char names[2048] = "fingerprint", marks[512] = "?1";
    size_t nl = strlen(names), ml = strlen(marks);
    int k = 2;
    for (size_t j = 0; j < nc; j++) {
        if (is_id(&c[j])) continue;
        nl += (size_t)snprintf(names + nl, sizeof names - nl, ", %s", c[j].name);
        ml += (size_t)snprintf(marks + ml, sizeof marks - ml, ", ?%d", k++);
    }
    char sql[3072];
    snprintf(sql, sizeof sql, "INSERT OR IGNORE INTO accuracy (%s) VALUES (%s)", names, marks);
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return fail(s, "storing accuracy");
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        fail(s, "storing accuracy");
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        return -1;
    }
    static const char *const skip[] = {"accuracy_id", NULL};
    size_t added = 0;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char fp[17];
        ec_store_fingerprint(c, nc, &r[i], skip, fp);
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
        sqlite3_bind_text(st, 1, fp, -1, SQLITE_TRANSIENT);
        k = 2;
        for (size_t j = 0; j < nc; j++)
            if (!is_id(&c[j])) ec_store_bind_column(st, k++, &c[j], &r[i]);
        if (sqlite3_step(st) != SQLITE_DONE) {
            fail(s, "storing accuracy");
            rc = ec_error_context("row %zu (%s %s)", i + 1, r[i].model, r[i].precision);
        } else
            added += (size_t)sqlite3_changes(db);
    }
    sqlite3_finalize(st);
    if (rc == 0 && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        rc = fail(s, "storing accuracy");
    if (rc != 0) {
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        return -1;
    }
    if (inserted) *inserted = added;
    return 0;
}

int ec_store_load_accuracy(ec_store *s, const ec_accuracy_filter *f, ec_accuracy_record **out,
                           size_t *n)
{
    *out = NULL;
    *n = 0;
    if (ec_store_schema_version(s) < ACCURACY_SCHEMA_VERSION) return 0;
    size_t nc;
    const ec_column *c = ec_accuracy_columns(&nc);
    char sql[3072] = "SELECT ";
    size_t len = strlen(sql);
    for (size_t j = 0; j < nc; j++)
        len += (size_t)snprintf(sql + len, sizeof sql - len, "%s%s", j ? ", " : "",
                                is_id(&c[j]) ? "id" : c[j].name);
    snprintf(sql + len, sizeof sql - len,
             " FROM accuracy WHERE (?1 IS NULL OR model = ?1) AND (?2 IS NULL OR precision = ?2)"
             " AND (?3 IS NULL OR kernels = ?3) AND (?4 IS NULL OR device = ?4) ORDER BY id");
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(ec_store_sqlite(s), sql, -1, &st, NULL) != SQLITE_OK)
        return fail(s, "loading accuracy");
    ec_accuracy_filter any = {0};
    if (!f) f = &any;
    const char *text[] = {f->model, f->precision, f->kernels, f->device};
    for (int i = 0; i < 4; i++)
        if (text[i]) sqlite3_bind_text(st, i + 1, text[i], -1, SQLITE_STATIC);
    ec_accuracy_record *v = NULL;
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            ec_accuracy_record *w = realloc(v, cap * sizeof *w);
            if (!w) break;
            v = w;
        }
        ec_accuracy_record_init(&v[*n]);
        for (size_t j = 0; j < nc; j++)
            ec_store_read_column(st, (int)j, &c[j], &v[*n]);
        (*n)++;
    }
    if (rc != SQLITE_DONE) {
        rc = rc == SQLITE_ROW ? ec_set_error("out of memory loading accuracy")
                              : fail(s, "loading accuracy");
        free(v);
        *n = 0;
        sqlite3_finalize(st);
        return -1;
    }
    sqlite3_finalize(st);
    *out = v;
    return 0;
}
