/* utf8.c — UTF-8 helpers of the tokenizers: lossy decoding of byte sequences into valid UTF-8,
 * the way the reference libraries turn byte tokens that do not form characters into U+FFFD. */
#include "tokenizer_internal.h"

#include <stdlib.h>
#include <string.h>

static int append(char **out, size_t *len, const void *bytes, size_t n)
{
    char *grown = realloc(*out, *len + n + 1);
    if (!grown) return -1;
    memcpy(grown + *len, bytes, n);
    *len += n;
    grown[*len] = '\0';
    *out = grown;
    return 0;
}

/* Length of the valid UTF-8 sequence at b[0..n), or -(bytes of the maximal invalid subpart):
 * the Unicode "maximal subpart" rule that Rust's from_utf8_lossy applies. */
static int sequence_length(const unsigned char *b, size_t n)
{
    unsigned char c = b[0];
    if (c < 0x80) return 1;
    int need;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        need = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else
        return -1;
    for (int k = 1; k < need; k++) {
        if ((size_t)k >= n) return -k;
        unsigned char low = k == 1 ? lo : 0x80, high = k == 1 ? hi : 0xBF;
        if (b[k] < low || b[k] > high) return -k;
    }
    return need;
}

int ec_utf8_lossy_append(char **out, size_t *len, const unsigned char *bytes, size_t n)
{
    static const char replacement[] = "\xEF\xBF\xBD";
    if (!*out && append(out, len, "", 0)) return -1;
    size_t i = 0;
    while (i < n) {
        int k = sequence_length(bytes + i, n - i);
        if (k > 0 ? append(out, len, bytes + i, (size_t)k)
                  : append(out, len, replacement, sizeof replacement - 1))
            return -1;
        i += (size_t)(k > 0 ? k : -k);
    }
    return 0;
}
