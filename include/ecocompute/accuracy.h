/* ecocompute/accuracy.h — one accuracy evaluation as a flat record: what `eval --db` stores (the
 * perplexity of a text file under the sliding-window protocol, and KL divergence / top-1
 * agreement against float32), what `export --accuracy` writes and `import` reads back, and what
 * `analyze --accuracy` joins to energy. docs/data-schema.md lists the columns (the table in
 * accuracy.c) and the database table `accuracy`.
 *
 * Evaluations are append-only like runs: evaluating the same configuration again adds a row with
 * its own time and provenance; importing a row already stored (same content) adds nothing.
 * Conventions as in results.h: NaN = unknown number, -1 = unknown count, "" = unknown text. */
#ifndef ECOCOMPUTE_ACCURACY_H
#define ECOCOMPUTE_ACCURACY_H

#include "ecocompute/store.h"

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    /* ---- where the row comes from ---- */
    char source[128];   /* "ecocompute" or the imported file */
    char licence[32];   /* "" for our own evaluations */
    long accuracy_id;   /* row id in the database; -1 for rows not from a database */
    char timestamp_utc[32];
    char ecocompute_version[16], git_commit[24];
    /* ---- what was evaluated, where ---- */
    char model[64];       /* --model as given (the name bench stores, so the two join) */
    double params_b;      /* parameters, billions */
    char precision[16];   /* ec_precision_name() */
    char kernels[16];     /* --kernels: "fused", "reference" (recorded as bench does, also on the
                           * CPU, whose backend has one implementation) */
    char device[EC_DEVICE_NAME_LEN]; /* "cpu", "cuda:0", "cuda:0,1" */
    char gpu_name[96], gpu_uuid[96]; /* "" on the CPU */
    double int8_threshold; /* int8-mixed outlier threshold; NaN for other precisions */
    int quantize_head;     /* 1: output head in the evaluated precision too */
    /* ---- perplexity (NaN / -1 / "" without --ppl) ---- */
    char tokenizer[128];         /* file name of the tokenizer */
    char tokenizer_sha256[65];
    char dataset[128];           /* file name of the text */
    char dataset_sha256[65];     /* of the file's bytes */
    int window;                  /* tokens per window (context), BOS included */
    int stride;                  /* tokens the window advances by */
    long ppl_tokens;             /* tokens scored */
    double perplexity;           /* exp(mean NLL over the scored tokens) */
    /* ---- against float32 on the same tokens ---- */
    long kl_positions;           /* positions compared (batch x tokens) */
    long kl_seed;                /* seed of the synthetic prompts */
    double kl_vs_f32;            /* mean KL(p_f32 || p), nats */
    double top1_agreement_pct;   /* % of positions with the same argmax */
    double max_abs_dlogit;       /* largest |logit difference| */
} ec_accuracy_record;

/* A record with every number NaN, every count -1, every text "". */
void ec_accuracy_record_init(ec_accuracy_record *r);
/* The export columns of accuracy records, in file order (ec_column offsets into
 * ec_accuracy_record); *n gets their number. */
const ec_column *ec_accuracy_columns(size_t *n);

/* Stores records (eval's own, or imported) in one transaction; a record equal to one already
 * stored (same content, accuracy_id aside) is skipped and not counted in *inserted (may be
 * NULL). The database must be open for writing. */
int ec_store_insert_accuracy(ec_store *s, const ec_accuracy_record *r, size_t n,
                             size_t *inserted);
/* Which rows to load; NULL matches anything. */
typedef struct {
    const char *model, *precision, *kernels, *device;
} ec_accuracy_filter;
/* Loads the stored accuracy rows that match f (NULL = all), by id; free() *out. A database of a
 * schema before accuracy rows (version < 5, opened read-only) holds none: *n = 0. */
int ec_store_load_accuracy(ec_store *s, const ec_accuracy_filter *f, ec_accuracy_record **out,
                           size_t *n);

/* Writes records as CSV (header + rows), JSON ({"ecocompute_export": "accuracy",
 * "schema_version": N, "columns": [...], "rows": [...]}) or a human table. */
int ec_accuracy_write(FILE *out, ec_format fmt, const ec_accuracy_record *r, size_t n);
/* Reads an accuracy export (CSV or JSON) from path. Returns 0 (records in *out, free() it),
 * 1 when the file is not an accuracy export (nothing set), -1 when it is one but malformed. */
int ec_accuracy_read(const char *path, ec_accuracy_record **out, size_t *n);

#ifdef __cplusplus
}
#endif
#endif
