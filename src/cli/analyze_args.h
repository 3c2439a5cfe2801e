/* analyze_args.h — what the two views of `ecocompute analyze` (cmd_analyze.c: energy and speed;
 * analyze_accuracy.c: accuracy x energy) share: which rows they select and what they compare
 * against, read from the same options. */
#ifndef ECOCOMPUTE_CLI_ANALYZE_ARGS_H
#define ECOCOMPUTE_CLI_ANALYZE_ARGS_H

typedef struct {
    const char *model, *prec, *kernels, *gpu; /* NULL: not filtered */
    const char *base;                         /* baseline precision ("fp16" unless --baseline) */
    int latest; /* --latest: each configuration's newest commit only (ec_records_latest) */
} analyze_selection;

/* Handles --model, --gpu, --kernels, --precision, --baseline (advancing past the value) and
 * --latest at argv[*i]: returns 1 when it took the option, 0 when the option is none of them, -1
 * after a usage error (a missing value, a precision the format table does not know). Values are
 * argv's. */
int analyze_selection_arg(analyze_selection *s, int argc, char **argv, int *i);

#endif
