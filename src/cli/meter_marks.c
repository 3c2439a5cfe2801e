/* meter_marks.c — the marker protocol of `ecocompute meter`: a pipe whose write end the child
 * inherits (its number in ECOCOMPUTE_MARK_FD), and a reader thread that turns `begin NAME` /
 * `end NAME` lines into named meter windows. A bad line is reported once on stderr and ignored:
 * the child's work matters more than its markers. */
#include "meter_marks.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Bounds that keep a misbehaving child from growing our memory without limit. */
#define MAX_WINDOWS 1024
#define MAX_LINE 256

typedef struct {
    char name[64];
    int id;      /* meter window id; -1 once ended */
    int unclosed;
    ec_window_result r;
} mark_window;

struct meter_marks {
    ec_meter *m;
    int rfd, wfd;
    pthread_t thread;
    atomic_int child_done; /* set by finish: drain what is there, then stop */
    pthread_mutex_t lock;
    mark_window *w;
    int n, ended; /* windows begun; results are kept in begin order */
    char line[MAX_LINE + 1];
    size_t len;
    long lineno, bad;
};

static void bad_line(meter_marks *mk, const char *why)
{
    if (mk->bad++ == 0)
        fprintf(stderr,
                "ecocompute meter: ECOCOMPUTE_MARK_FD line %ld: %s (expected 'begin NAME' or "
                "'end NAME'); further bad lines are counted, not shown\n",
                mk->lineno, why);
}

static void handle_line(meter_marks *mk, char *s)
{
    mk->lineno++;
    size_t l = strlen(s);
    while (l && (s[l - 1] == '\r' || s[l - 1] == ' ')) s[--l] = 0;
    int begin = !strncmp(s, "begin ", 6), end = !strncmp(s, "end ", 4);
    if (!begin && !end) return bad_line(mk, "unknown marker");
    const char *name = s + (begin ? 6 : 4);
    if (!*name || strlen(name) >= sizeof mk->w[0].name) return bad_line(mk, "name empty or over 63 bytes");
    for (const char *p = name; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == '"') return bad_line(mk, "control character in name");
    pthread_mutex_lock(&mk->lock);
    if (begin) {
        for (int i = 0; i < mk->n; i++)
            if (mk->w[i].id >= 0 && !strcmp(mk->w[i].name, name)) {
                pthread_mutex_unlock(&mk->lock);
                return bad_line(mk, "window already open");
            }
        if (mk->n == MAX_WINDOWS) {
            pthread_mutex_unlock(&mk->lock);
            return bad_line(mk, "more than 1024 windows");
        }
        mark_window *w = &mk->w[mk->n];
        memset(w, 0, sizeof *w);
        snprintf(w->name, sizeof w->name, "%s", name);
        w->id = ec_meter_window_begin(mk->m, name);
        if (w->id >= 0) mk->n++;
    } else {
        int found = -1;
        for (int i = 0; i < mk->n; i++)
            if (mk->w[i].id >= 0 && !strcmp(mk->w[i].name, name)) found = i;
        if (found < 0) {
            pthread_mutex_unlock(&mk->lock);
            return bad_line(mk, "'end' of a window that is not open");
        }
        ec_meter_window_end(mk->m, mk->w[found].id, &mk->w[found].r);
        mk->w[found].id = -1;
    }
    pthread_mutex_unlock(&mk->lock);
}

static void consume(meter_marks *mk, const char *buf, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (buf[i] == '\n') {
            mk->line[mk->len] = 0;
            if (mk->len > MAX_LINE) {
                mk->lineno++;
                bad_line(mk, "line over 256 bytes");
            } else {
                handle_line(mk, mk->line);
            }
            mk->len = 0;
        } else if (mk->len <= MAX_LINE) {
            mk->line[mk->len++] = buf[i]; /* past MAX_LINE the line is only counted as too long */
        }
    }
}

static void *reader(void *arg)
{
    meter_marks *mk = arg;
    char buf[4096];
    for (;;) {
        struct pollfd p = {.fd = mk->rfd, .events = POLLIN};
        /* A timeout, so that a grandchild holding the pipe open cannot keep us past the child. */
        int rc = poll(&p, 1, 50);
        if (rc < 0 && errno != EINTR) break;
        if (rc > 0) {
            ssize_t n = read(mk->rfd, buf, sizeof buf);
            if (n > 0) {
                consume(mk, buf, (size_t)n);
                continue;
            }
            if (n == 0) break; /* every writer closed */
            if (errno != EINTR && errno != EAGAIN) break;
        }
        if (rc == 0 && atomic_load(&mk->child_done)) break;
    }
    return NULL;
}

meter_marks *meter_marks_open(ec_meter *m)
{
    meter_marks *mk = calloc(1, sizeof *mk);
    int fds[2];
    if (!mk || !(mk->w = calloc(MAX_WINDOWS, sizeof *mk->w)) || pipe(fds) != 0) {
        fprintf(stderr, "ecocompute meter: marker pipe: %s\n", strerror(errno));
        if (mk) free(mk->w);
        free(mk);
        return NULL;
    }
    mk->m = m;
    mk->rfd = fds[0];
    mk->wfd = fds[1];
    fcntl(mk->rfd, F_SETFD, FD_CLOEXEC);
    fcntl(mk->rfd, F_SETFL, O_NONBLOCK);
    pthread_mutex_init(&mk->lock, NULL);
    char num[16];
    snprintf(num, sizeof num, "%d", mk->wfd);
    setenv("ECOCOMPUTE_MARK_FD", num, 1);
    if (pthread_create(&mk->thread, NULL, reader, mk) != 0) {
        fprintf(stderr, "ecocompute meter: marker reader thread could not start\n");
        close(mk->rfd);
        close(mk->wfd);
        free(mk->w);
        free(mk);
        return NULL;
    }
    return mk;
}

void meter_marks_parent_after_fork(meter_marks *mk)
{
    if (mk->wfd >= 0) close(mk->wfd);
    mk->wfd = -1;
}

void meter_marks_finish(meter_marks *mk)
{
    meter_marks_parent_after_fork(mk);
    atomic_store(&mk->child_done, 1);
    pthread_join(mk->thread, NULL);
    if (mk->len) { /* a last line without its newline still counts */
        mk->line[mk->len < MAX_LINE ? mk->len : MAX_LINE] = 0;
        mk->len = 0;
        handle_line(mk, mk->line);
    }
    for (int i = 0; i < mk->n; i++)
        if (mk->w[i].id >= 0) {
            ec_meter_window_end(mk->m, mk->w[i].id, &mk->w[i].r);
            mk->w[i].id = -1;
            mk->w[i].unclosed = 1;
        }
    if (mk->bad > 1)
        fprintf(stderr, "ecocompute meter: %ld bad ECOCOMPUTE_MARK_FD lines ignored in all\n",
                mk->bad);
}

int meter_marks_count(const meter_marks *mk) { return mk ? mk->n : 0; }

const ec_window_result *meter_marks_window(const meter_marks *mk, int i, int *unclosed)
{
    *unclosed = mk->w[i].unclosed;
    return &mk->w[i].r;
}

void meter_marks_free(meter_marks *mk)
{
    if (!mk) return;
    close(mk->rfd);
    pthread_mutex_destroy(&mk->lock);
    free(mk->w);
    free(mk);
}
