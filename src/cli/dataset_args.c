/* dataset_args.c — reads the files and folders named on a command line into run records:
 * ecocompute exports and the seeds' published files (ec_dataset_read). */
#include "dataset_args.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "ecocompute/store.h"

typedef struct {
    ec_run_record *v;
    size_t n, cap;
    int files;
} acc;

static int append(acc *a, const ec_run_record *r, size_t n)
{
    if (a->n + n > a->cap) {
        size_t nc = a->cap ? a->cap : 64;
        while (nc < a->n + n) nc *= 2;
        ec_run_record *p = realloc(a->v, nc * sizeof *p);
        if (!p) return ec_set_error("out of memory");
        a->v = p;
        a->cap = nc;
    }
    memcpy(a->v + a->n, r, n * sizeof *r);
    a->n += n;
    return 0;
}

static int read_file(acc *a, const char *path, int named)
{
    ec_run_record *r;
    size_t n;
    if (ec_dataset_read(path, &r, &n)) {
        if (named) return -1;
        /* Inside a folder, other files (metadata, fitted curves) are expected: say, go on. */
        fprintf(stderr, "skipped %s\n", ec_last_error());
        return 0;
    }
    int rc = append(a, r, n);
    free(r);
    a->files++;
    return rc;
}

static int has_ext(const char *name, const char *ext)
{
    size_t l = strlen(name), e = strlen(ext);
    return l > e && !strcmp(name + l - e, ext);
}

static int by_name(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

static int walk(acc *a, const char *dir, int depth)
{
    if (depth > 16) return ec_set_error("%s: folders nested too deep", dir);
    DIR *d = opendir(dir);
    if (!d) return ec_set_error("%s: cannot open folder", dir);
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 32;
            char **p = realloc(names, nc * sizeof *p);
            if (!p) {
                rc = ec_set_error("out of memory");
                break;
            }
            names = p;
            cap = nc;
        }
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        if (!(names[n] = malloc(len))) {
            rc = ec_set_error("out of memory");
            break;
        }
        snprintf(names[n++], len, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n && !rc; i++) {
        struct stat st;
        if (stat(names[i], &st)) continue;
        if (S_ISDIR(st.st_mode)) rc = walk(a, names[i], depth + 1);
        else if (has_ext(names[i], ".csv") || has_ext(names[i], ".json"))
            rc = read_file(a, names[i], 0);
    }
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    return rc;
}

int cli_load_dataset(const char *cmd, char *const *paths, int npaths, ec_run_record **out,
                     size_t *n, int *nfiles)
{
    acc a = {0};
    for (int i = 0; i < npaths; i++) {
        struct stat st;
        int rc = (!stat(paths[i], &st) && S_ISDIR(st.st_mode)) ? walk(&a, paths[i], 0)
                                                                : read_file(&a, paths[i], 1);
        if (rc) {
            free(a.v);
            cli_fail(cmd, "%s", ec_last_error());
            return -1;
        }
    }
    *out = a.v;
    *n = a.n;
    *nfiles = a.files;
    return 0;
}

int cli_load_db(const char *cmd, const char *path, ec_run_record **out, size_t *n)
{
    ec_store *s;
    if (ec_store_open(&s, path, 1)) {
        cli_fail(cmd, "%s", ec_last_error());
        return -1;
    }
    int rc = ec_store_load_runs(s, NULL, out, n);
    if (rc) cli_fail(cmd, "%s: %s", path, ec_last_error());
    ec_store_close(s);
    return rc ? -1 : 0;
}
