/* fuzz_csv.c — libFuzzer target: the input is a whole CSV file image. Valid or not, parsing must
 * never crash or read outside the buffer; an accepted file has NUL-terminated fields within the
 * limits, and column lookup by every header name finds a column at or before it. */
#include "common/csv.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    /* A private copy, exactly sized, so ASan flags any read past the end. */
    char *buf = malloc(size ? size : 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    ec_csv c;
    if (ec_csv_parse(buf, size, "fuzz.csv", &c) == 0) {
        if (c.nrows > EC_CSV_MAX_ROWS) abort();
        for (size_t r = 0; r < c.nrows; r++) {
            if (!c.rows[r].nfields || c.rows[r].nfields > EC_CSV_MAX_FIELDS) abort();
            for (size_t f = 0; f < c.rows[r].nfields; f++)
                if (strlen(c.rows[r].fields[f]) > size) abort();
        }
        for (size_t f = 0; c.nrows && f < c.rows[0].nfields; f++) {
            int i = ec_csv_column(&c, c.rows[0].fields[f]);
            if (i < 0 || (size_t)i > f) abort();
        }
        ec_csv_free(&c);
    } else if (c.rows || c.nrows) {
        abort(); /* a rejected file leaves nothing behind */
    }
    free(buf);
    return 0;
}
