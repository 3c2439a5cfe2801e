/* fuzz_safetensors.c — libFuzzer target: the input is a whole safetensors file image, parsed from
 * memory. Valid or not, parsing must never crash or read outside the buffer, and an accepted
 * header must describe tensors that lie inside it. */
#include "safetensors.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    /* A private copy, exactly sized, so ASan flags any read past the end. */
    unsigned char *buf = malloc(size ? size : 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    ec_st_header h;
    if (ec_st_parse(buf, size, "fuzz.safetensors", &h) == 0) {
        for (size_t i = 0; i < h.n; i++) {
            const ec_st_tensor *t = &h.tensors[i];
            if (t->begin > t->end || t->end > size) abort();
            if (ec_st_find(&h, t->name) != t) abort();
            volatile unsigned char sink = 0;
            for (uint64_t b = t->begin; b < t->end; b++) sink ^= buf[b];
            (void)sink;
        }
        ec_st_free(&h);
    }
    free(buf);
    return 0;
}
