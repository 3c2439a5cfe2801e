/* bars.c — ASCII bar charts for the advise commands' table output. */
#include "ecocompute/advise.h"

#include <math.h>
#include <string.h>

void ec_ascii_bars(FILE *out, const char *title, const char *const *labels, const double *values,
                   size_t n, const char *unit, int width)
{
    double max = 0;
    int lw = 0;
    for (size_t i = 0; i < n; i++) {
        if (isfinite(values[i]) && values[i] > max) max = values[i];
        int l = (int)strlen(labels[i]);
        if (l > lw) lw = l;
    }
    if (lw > 48) lw = 48;
    fprintf(out, "%s\n", title);
    for (size_t i = 0; i < n; i++) {
        fprintf(out, "  %-*.*s |", lw, lw, labels[i]);
        if (!isfinite(values[i])) {
            fprintf(out, " (no answer)\n");
            continue;
        }
        int len = max > 0 ? (int)lround(width * values[i] / max) : 0;
        if (len < 1 && values[i] > 0) len = 1;
        for (int k = 0; k < len; k++)
            fputc('#', out);
        fprintf(out, " %.4g %s\n", values[i], unit);
    }
}
