/* cli.c — error reporting and strict flag parsing shared by all subcommands. */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "ecocompute %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (see 'ecocompute %s --help')\n", cmd);
    va_end(ap);
    return EXIT_USAGE;
}

int cli_fail(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "ecocompute %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return EXIT_FAIL;
}

int cli_parse_double(const char *cmd, const char *flag, const char *text, double min, double max,
                     double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (!*text || *end || errno || !isfinite(v)) {
        cli_usage_error(cmd, "%s expects a number, got '%s'", flag, text);
        return -1;
    }
    if (v < min || v > max) {
        cli_usage_error(cmd, "%s must be between %g and %g, got %s", flag, min, max, text);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_icontains(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (const char *p = hay; *p; p++) {
        size_t i = 0;
        while (i < n && p[i] && tolower((unsigned char)p[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n) return 1;
    }
    return n == 0;
}

int cli_parse_long(const char *cmd, const char *flag, const char *text, long min, long max,
                   long *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (!*text || *end || errno) {
        cli_usage_error(cmd, "%s expects an integer, got '%s'", flag, text);
        return -1;
    }
    if (v < min || v > max) {
        cli_usage_error(cmd, "%s must be between %ld and %ld, got %s", flag, min, max, text);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_parse_format(const char *cmd, const char *text, ec_format *out)
{
    if (ec_format_parse(text, out) == 0) return 0;
    cli_usage_error(cmd, "--format: %s", ec_last_error());
    return -1;
}

int cli_db_arg(const char *cmd, int argc, char **argv, int *i, const char **db)
{
    if (strcmp(argv[*i], "--db")) return 0;
    if (*i + 1 >= argc || !*argv[*i + 1]) {
        cli_usage_error(cmd, "--db needs the path of a results database");
        return -1;
    }
    *db = argv[++*i];
    return 1;
}

void cli_wrapped(FILE *out, const char *lead, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (!text) return;
    va_start(ap, fmt);
    vsnprintf(text, (size_t)n + 1, fmt, ap);
    va_end(ap);
    size_t indent = 0; /* display width of lead: UTF-8 continuation bytes take no column */
    for (const char *p = lead; *p; p++)
        indent += ((unsigned char)*p & 0xC0) != 0x80;
    size_t room = indent + 20 < CLI_TABLE_WIDTH ? CLI_TABLE_WIDTH - indent : 20;
    fputs(lead, out);
    const char *p = text;
    for (int first = 1; first || *p; first = 0) {
        if (!first) fprintf(out, "%*s", (int)indent, "");
        /* the longest run of whole words within room columns (or one word cut at room) */
        size_t cols = 0, cut = 0;
        const char *q = p;
        while (*q && *q != '\n' && cols < room) {
            if (*q == ' ') cut = (size_t)(q - p);
            q++;
            while (((unsigned char)*q & 0xC0) == 0x80)
                q++;
            cols++;
        }
        size_t len = !*q || *q == ' ' || *q == '\n' || !cut ? (size_t)(q - p) : cut;
        fwrite(p, 1, len, out);
        fputc('\n', out);
        for (p += len; *p == ' ' || *p == '\n'; p++) {
        }
    }
    free(text);
}
