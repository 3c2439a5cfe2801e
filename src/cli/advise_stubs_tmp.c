/* advise_stubs_tmp.c — placeholders for the advise subcommands not written yet (removed as each
 * lands). */
#include "cli.h"
int cmd_advise_diagnose(int argc, char **argv) { (void)argc; return cli_fail(argv[0], "not implemented yet"); }
int cmd_advise_compare(int argc, char **argv) { (void)argc; return cli_fail(argv[0], "not implemented yet"); }
