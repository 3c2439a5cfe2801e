/* cli.h — shared conventions of the ecocompute subcommands (one file per subcommand).
 *
 * Every command: `ecocompute CMD --help` prints usage with examples on stdout and exits 0;
 * data goes to stdout, messages to stderr; exit 0 success, 1 failure, 2 usage error. */
#ifndef ECOCOMPUTE_CLI_H
#define ECOCOMPUTE_CLI_H

#include "ecocompute/common.h"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

/* Text tables fit a terminal this wide unless --wide is given (taken by main for every command). */
enum { CLI_TABLE_WIDTH = 120 };

typedef struct {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv); /* argv[0] is the command name */
} cli_command;

/* The subcommands, one file each (cmd_NAME.c). */
int cmd_version(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_models(int argc, char **argv);
int cmd_gpus(int argc, char **argv);
int cmd_meter(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_analyze(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_exporter(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_advise(int argc, char **argv);
/* The advise subcommands (cmd_advise_NAME.c); argv[0] is the subcommand's name. */
int cmd_advise_optimize(int argc, char **argv);
int cmd_advise_diagnose(int argc, char **argv);
int cmd_advise_compare(int argc, char **argv);
int cmd_advise_estimate(int argc, char **argv);
int cmd_advise_audit(int argc, char **argv);
int cmd_advise_model(int argc, char **argv);

/* The command table, defined in main.c. */
extern const cli_command cli_commands[];

/* Prints lead, then the formatted text broken at blanks to fit CLI_TABLE_WIDTH, its later lines
 * indented as wide as lead (notes and sources under a table read as prose, not one long line). */
void cli_wrapped(FILE *out, const char *lead, const char *fmt, ...) EC_PRINTF(3, 4);

/* Prints "ecocompute CMD: <message> (see 'ecocompute CMD --help')" to stderr; returns 2. */
int cli_usage_error(const char *cmd, const char *fmt, ...) EC_PRINTF(2, 3);
/* Prints "ecocompute CMD: <message>" to stderr; returns 1. */
int cli_fail(const char *cmd, const char *fmt, ...) EC_PRINTF(2, 3);

/* 1 when needle occurs in hay ignoring ASCII case (an empty needle always does): how --model and
 * --gpu filters match names. */
int cli_icontains(const char *hay, const char *needle);
/* Strict number parsing for flag values: the whole text must be a number within [min, max].
 * On failure prints a usage error naming the flag and returns -1. */
int cli_parse_double(const char *cmd, const char *flag, const char *text, double min, double max,
                     double *out);
int cli_parse_long(const char *cmd, const char *flag, const char *text, long min, long max,
                   long *out);
/* --format table|json|csv; prints a usage error and returns -1 on a bad value. */
int cli_parse_format(const char *cmd, const char *text, ec_format *out);
/* --db PATH, the results database, the same way in every command: when argv[*i] is --db, sets
 * *db to its value, advances *i past it and returns 1; returns 0 for any other argument; -1
 * after a usage error (no value, or an empty one). */
int cli_db_arg(const char *cmd, int argc, char **argv, int *i, const char **db);

#endif
