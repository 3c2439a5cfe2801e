/* textfile.c — expositions for node_exporter's textfile collector: written to a temporary file
 * in the target's directory and renamed over it, so the collector never reads half a file; a file
 * at the target that we did not write (no marker line) is never replaced. */
#include "ecocompute/exporter.h"

#include "ecocompute/common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* 0 when path is absent or a regular file that begins with our marker; -1 (ec_last_error) when
 * it is anything else. */
static int check_ours(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT) return 0;
        return ec_set_error("%s: %s", path, strerror(errno));
    }
    if (!S_ISREG(st.st_mode))
        return ec_set_error("%s exists and is not a regular file; refusing to replace it", path);
    char head[sizeof EC_TEXTFILE_MARKER] = {0};
    FILE *f = fopen(path, "rb");
    if (!f) return ec_set_error("%s: %s", path, strerror(errno));
    size_t n = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    if (n != sizeof head - 1 || memcmp(head, EC_TEXTFILE_MARKER, n) != 0)
        return ec_set_error("%s exists and is not an ecocompute exporter textfile; refusing to "
                            "replace it (remove it or choose another path)",
                            path);
    return 0;
}

int ec_textfile_write(const char *path, const char *text, size_t len)
{
    if (check_ours(path) != 0) return -1;
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 32);
    if (!tmp) return ec_set_error("out of memory");
    /* node_exporter reads only *.prom files, so the temporary name is never collected. */
    snprintf(tmp, plen + 32, "%s.%ld.tmp", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        ec_set_error("cannot create %s: %s", tmp, strerror(errno));
        free(tmp);
        return -1;
    }
    FILE *f = fdopen(fd, "w");
    int ok = f != NULL;
    if (ok) {
        ok = fprintf(f, "%s (rewritten every interval; do not edit)\n", EC_TEXTFILE_MARKER) > 0 &&
             fwrite(text, 1, len, f) == len && fflush(f) == 0 && fsync(fd) == 0;
        ok = (fclose(f) == 0) && ok;
    } else
        close(fd);
    if (!ok || rename(tmp, path) != 0) {
        ec_set_error("cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
        free(tmp);
        return -1;
    }
    free(tmp);
    return 0;
}
