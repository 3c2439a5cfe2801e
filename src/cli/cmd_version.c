/* cmd_version.c — `ecocompute version`: the version and git commit of this build. */
#include "cli.h"

#include <string.h>

int cmd_version(int argc, char **argv)
{
    ec_format fmt = EC_FORMAT_TABLE;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: ecocompute version [--format table|json|csv]\n\n"
                   "Prints the version and the git commit of this build.\n\n"
                   "  --format F   table (default: one line), json or csv\n\n"
                   "examples:\n  ecocompute version\n  ecocompute version --format json\n");
            return EXIT_OK;
        }
        if (!strcmp(argv[i], "--format")) {
            if (i + 1 >= argc) return cli_usage_error("version", "--format needs a value");
            if (cli_parse_format("version", argv[++i], &fmt)) return EXIT_USAGE;
            continue;
        }
        return cli_usage_error("version", "unexpected argument '%s'", argv[i]);
    }
    if (fmt == EC_FORMAT_TABLE) {
        printf("ecocompute %s (commit %s)\n", ec_version(), ec_git_commit());
        return EXIT_OK;
    }
    ec_table *t = ec_table_new();
    ec_table_column(t, "version", "version");
    ec_table_column(t, "commit", "commit");
    ec_table_row(t);
    ec_table_text(t, 0, "%s", ec_version());
    ec_table_text(t, 1, "%s", ec_git_commit());
    /* JSON: one object, not the table's array of one row. */
    if (fmt == EC_FORMAT_JSON)
        printf("{\"version\": \"%s\", \"commit\": \"%s\"}\n", ec_version(), ec_git_commit());
    else
        ec_table_print(t, fmt, stdout);
    ec_table_free(t);
    return EXIT_OK;
}
