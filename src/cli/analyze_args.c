/* analyze_args.c — the selection options of `ecocompute analyze` (analyze_args.h). */
#include "analyze_args.h"

#include "cli.h"
#include "ecocompute/quant.h"

#include <string.h>

#define CMD "analyze"

int analyze_selection_arg(analyze_selection *s, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    if (!strcmp(a, "--latest")) {
        s->latest = 1;
        return 1;
    }
    const char **field = NULL;
    if (!strcmp(a, "--model"))
        field = &s->model;
    else if (!strcmp(a, "--gpu"))
        field = &s->gpu;
    else if (!strcmp(a, "--kernels")) /* any text: imported sources name their own stacks */
        field = &s->kernels;
    else if (!strcmp(a, "--precision"))
        field = &s->prec;
    else if (!strcmp(a, "--baseline"))
        field = &s->base;
    if (!field) return 0;
    if (*i + 1 >= argc) {
        cli_usage_error(CMD, "%s needs a value", a);
        return -1;
    }
    const char *v = argv[++*i];
    ec_precision p;
    if ((field == &s->prec || field == &s->base) && ec_precision_parse(v, &p)) {
        cli_usage_error(CMD, "%s: %s", a, ec_last_error());
        return -1;
    }
    *field = v;
    return 1;
}
