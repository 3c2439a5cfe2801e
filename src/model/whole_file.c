/* whole_file.c — reads a whole file into memory, gunzipping it when it is gzip-compressed, for
 * the JSON files of a model directory (tokenizer.json[.gz], tokenizer_config.json, config.json). */
#include "ecocompute/common.h"
#include "tokenizer_internal.h"

#include <stdlib.h>
#include <zlib.h>

enum { MAX_FILE_BYTES = 1 << 30 }; /* far above any tokenizer.json (Llama-3's is 9 MB) */

/* The whole file, gunzipped when it is gzip (zlib reads plain files as they are). */
char *ec_read_whole_file(const char *path, size_t *len)
{
    gzFile f = gzopen(path, "rb");
    if (!f) {
        ec_set_error("%s: cannot open", path);
        return NULL;
    }
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap + 1);
    int got = 0;
    while (buf && (got = gzread(f, buf + n, (unsigned)(cap - n))) > 0) {
        n += (size_t)got;
        if (n == cap) {
            char *grown = cap < MAX_FILE_BYTES ? realloc(buf, 2 * cap + 1) : NULL;
            if (!grown) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown;
            cap *= 2;
        }
    }
    int err;
    const char *msg = got < 0 ? gzerror(f, &err) : NULL;
    gzclose(f);
    if (!buf || got < 0) {
        ec_set_error("%s: cannot read: %s", path, buf ? msg : "too large or out of memory");
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}
