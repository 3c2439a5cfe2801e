/* advise_args.h — what the `advise` subcommands share: the data folder and the user's database
 * they answer from, and the lookups of GPU, model, precision and region names that end in a usage
 * error naming the closest known names. */
#ifndef ECOCOMPUTE_CLI_ADVISE_ARGS_H
#define ECOCOMPUTE_CLI_ADVISE_ARGS_H

#include "ecocompute/advise.h"
#include "ecocompute/common.h"

typedef struct {
    const char *cmd;      /* "advise estimate", for messages */
    const char *data_dir; /* --data-dir, or NULL */
    const char *db;       /* --db, or NULL */
    ec_format format;
    ec_advise_data data;
    ec_advisor advisor;
    int loaded;
} advise_ctx;

/* Handles --data-dir, --db and --format at argv[*i] (advancing past the value): returns 1 when it
 * took the option, 0 when the option is not one of them, -1 after a usage error. */
int advise_common_arg(advise_ctx *c, int argc, char **argv, int *i);
/* Loads the data folder (and the --db runs) and builds the advisor. -1 after printing. */
int advise_load(advise_ctx *c);
void advise_ctx_free(advise_ctx *c);

/* Each returns 0, or prints a usage error with the closest known names and returns -1. */
int advise_gpu(advise_ctx *c, const char *name, const ec_gpu_spec **out);
int advise_region(advise_ctx *c, const char *name, const ec_region **out);
/* A model known to the catalog (exact or by family key) or to the reference data; *params_b gets
 * its size in billions. */
int advise_model(advise_ctx *c, const char *name, double *params_b);
int advise_precision(advise_ctx *c, const char *name);
int advise_stack(advise_ctx *c, const char *name);

/* A configuration on the command line: --model --gpu --precision --batch [--stack] [--prompt]
 * [--gen]. */
typedef struct {
    const char *model, *gpu, *precision, *stack;
    long batch, prompt, gen;
} advise_config_args;
void advise_config_defaults(advise_config_args *a);
/* Takes one of those options at argv[*i]: 1 taken, 0 not one of them, -1 usage error. */
int advise_config_arg(advise_ctx *c, advise_config_args *a, int argc, char **argv, int *i);
/* One step of a subcommand's option loop over argv[*i]: --help (usage printed), the shared and
 * configuration options (taken, *i advanced past the value), or the command's own option, whose
 * value is then in *value (*i advanced past it). cfg may be NULL. */
enum { ADVISE_ARG_TAKEN = 0, ADVISE_ARG_OWN, ADVISE_ARG_HELP, ADVISE_ARG_ERROR };
int advise_next_arg(advise_ctx *c, advise_config_args *cfg, int argc, char **argv, int *i,
                    void (*usage)(void), const char **value);
/* Resolves the names (usage error with the closest names on an unknown one; -1) into q. need
 * lists the options that must be present ("mgpb": model, gpu, precision, batch). */
int advise_config_query(advise_ctx *c, const advise_config_args *a, const char *need, ec_query *q);
/* "Llama-2-7B fp16 b8 fused on H100-SXM" */
void advise_config_label(const ec_query *q, char *out, size_t cap);

#endif
