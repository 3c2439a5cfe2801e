/* eval_store.h — what `eval` stores with each accuracy row (provenance: model, kernels, device
 * and GPU, tokenizer and text file with their SHA-256, version and commit) and storing the rows. */
#ifndef ECOCOMPUTE_CLI_EVAL_STORE_H
#define ECOCOMPUTE_CLI_EVAL_STORE_H

#include "engine_args.h"

#include "ecocompute/accuracy.h"

/* Fills *r (initialised first) with what every precision's row of this evaluation shares; the
 * GPU's name comes from NVML when it can be read (else only the UUID is kept, with a note on
 * stderr). Returns 0 or EXIT_FAIL (printed). */
int cli_eval_provenance(const char *cmd, const cli_engine_args *a, const ec_model *m,
                        const ec_tokenizer *tok, const char *ppl_file, ec_accuracy_record *r);
/* Stamps the rows with the time (ms) and stores them in s (the database at db); says on stderr
 * how many. Returns 0 or EXIT_FAIL (printed). */
int cli_eval_store(const char *cmd, ec_store *s, const char *db, ec_accuracy_record *rows, int n);

#endif
