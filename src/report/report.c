/* report.c — the report layer's entry points: building the model and writing it as HTML or
 * Markdown, and the signatures by which a previous report is recognised (the only kind of
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

/* The first bytes of every report, as html.c and markdown.c write them. */
const char *const ec_report_signatures[] = {
    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<meta "
    "name=\"generator\" content=\"" EC_REPORT_GENERATOR " ",
    "<!-- generator: " EC_REPORT_GENERATOR " ", NULL};
