/* fuzz_dataset.c — libFuzzer target: the input is a whole file offered to `import` as an
 * ecocompute export (CSV or JSON). Valid or not, parsing must never crash or read outside the
 * buffer, and an accepted file must write back and parse again to the same number of rows. */
#include "ecocompute/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    /* A private copy, exactly sized, so ASan flags any read past the end. */
    char *buf = malloc(size ? size : 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    ec_run_record *r;
    size_t n;
    if (ec_dataset_parse("fuzz", buf, size, &r, &n) == 0) {
        char *out = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&out, &len);
        if (f && ec_dataset_write(f, EC_EXPORT_CSV, r, n) == 0) {
            fclose(f);
            ec_run_record *back;
            size_t m;
            if (ec_dataset_parse("fuzz-again", out, len, &back, &m) != 0 || m != n) abort();
            free(back);
        } else if (f) {
            fclose(f);
        }
        free(out);
        free(r);
    }
    free(buf);
    return 0;
}
