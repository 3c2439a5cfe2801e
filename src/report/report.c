/* report.c — the report layer's entry points: building the model and writing it as HTML or
 * Markdown, and recognising a previous report by its generator marker (the only kind of
 * existing file the command writes over without --force). */
#include "ecocompute/report.h"

#include <errno.h>
#include <string.h>

#include "ecocompute/common.h"
#include "report/report_internal.h"

int ec_report_write(FILE *out, ec_report_format fmt, const ec_run_record *r, size_t n,
                    const ec_report_options *o)
{
    rp_model m;
    if (rp_model_build(&m, r, n, o)) return -1;
    int rc = fmt == EC_REPORT_MARKDOWN ? rp_write_markdown(out, &m) : rp_write_html(out, &m);
    rp_model_free(&m);
    if (rc == 0 && (fflush(out) || ferror(out)))
        rc = ec_set_error("writing the report: %s", strerror(errno));
    return rc;
}

int ec_report_file_is_report(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    /* The marker sits in the first lines: the HTML head's meta, the Markdown's first comment. */
    char head[1024];
    size_t n = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    head[n] = '\0';
    return strstr(head, "<meta name=\"generator\" content=\"" EC_REPORT_GENERATOR " ") != NULL ||
           !strncmp(head, "<!-- generator: " EC_REPORT_GENERATOR " ",
                    strlen("<!-- generator: " EC_REPORT_GENERATOR " "));
}
