/* analyze_accuracy.h — `ecocompute analyze --accuracy` (analyze_accuracy.c): the accuracy x
 * energy view, entered from cmd_analyze when --accuracy is on the command line. */
#ifndef ECOCOMPUTE_CLI_ANALYZE_ACCURACY_H
#define ECOCOMPUTE_CLI_ANALYZE_ACCURACY_H

/* argv as cmd_analyze's (argv[0] the command name). Returns the exit status. */
int cli_analyze_accuracy(int argc, char **argv);

#endif
