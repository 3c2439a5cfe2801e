/* cmd_compare.c — placeholder, replaced below. */
#include "cli.h"
int cmd_compare(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return EXIT_FAIL;
}
