/* cmd_version.c — `ecocompute version`. */
#include "cli.h"

#include <string.h>

int cmd_version(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: ecocompute version\n\nPrints the version and the git commit of this build."
               "\n\nexample:\n  ecocompute version\n");
        return EXIT_OK;
    }
    if (argc > 1) return cli_usage_error("version", "unexpected argument '%s'", argv[1]);
    printf("ecocompute %s (commit %s)\n", ec_version(), ec_git_commit());
    return EXIT_OK;
}
