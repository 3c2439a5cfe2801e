/* file.c — opening files named by users: only regular files are read, and never in a way that
 * blocks. A FIFO, socket or device opened for reading with a plain open() waits forever for a
 * writer, so files are opened non-blocking, checked with fstat, and only then read normally. */
#include "ecocompute/common.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *kind_name(mode_t mode)
{
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
    return "a special file";
}

int ec_open_regular(const char *path)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return ec_set_error("%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return ec_set_error("%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return ec_set_error("%s: is %s, not a regular file", path, kind_name(st.st_mode));
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    return fd;
}

FILE *ec_fopen_regular(const char *path)
{
    int fd = ec_open_regular(path);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        ec_set_error("%s: cannot open: %s", path, strerror(errno));
        close(fd);
    }
    return f;
}

/* Copies up to cap-1 non-blank bytes of the text's start, so that signatures match however a
 * writer indented its JSON. */
static size_t squeeze(const char *text, size_t len, char *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < len && n + 1 < cap; i++)
        if (text[i] != ' ' && text[i] != '\t' && text[i] != '\n' && text[i] != '\r')
            out[n++] = text[i];
    out[n] = '\0';
    return n;
}

int ec_output_check(const char *path, const char *what, const char *const *signatures, int force)
{
    struct stat st;
    if (lstat(path, &st) != 0) return 0; /* a new file */
    FILE *f = ec_fopen_regular(path);
    if (!f) return ec_error_context("refusing to write %s", what);
    char head[1024];
    size_t got = fread(head, 1, sizeof head, f);
    fclose(f);
    if (got >= 16 && !memcmp(head, "SQLite format 3", 16))
        return ec_set_error("%s is a database; refusing to write %s over it", path, what);
    char have[sizeof head];
    squeeze(head, got, have, sizeof have);
    for (size_t i = 0; signatures && signatures[i]; i++) {
        char want[256];
        size_t n = squeeze(signatures[i], strlen(signatures[i]), want, sizeof want);
        if (n && !strncmp(have, want, n)) return 0; /* a previous output of the same kind */
    }
    if (got == 0 || force > 0) return 0;
    return ec_set_error("%s exists and is not a previous %s; refusing to write over it (choose "
                        "another path%s)",
                        path, what, force < 0 ? "" : ", or --force to replace it");
}
