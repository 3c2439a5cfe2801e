/* dataset_args.c — the dataset arguments that analyze and validate share (FILE|FOLDER... or
 * --db PATH), the data files a FOLDER holds (import walks them too), and reading them into run records: ecocompute exports and the seeds' published
 * files (ec_dataset_read), or the results database. */
#include "dataset_args.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "ecocompute/analysis.h"
#include "ecocompute/store.h"

typedef struct {
    ec_run_record *v;
    size_t n, cap;
    int files;
} acc;

static int append(acc *a, const ec_run_record *r, size_t n)
{
    if (n == 0) return 0; /* an empty file: r may be NULL, and memcpy from NULL is undefined */
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

typedef struct {
    cli_dataset_file *v;
    int n, cap;
} file_list;

/* Appends path (taken over: freed with the list, or here on failure). */
static int add_file(file_list *l, char *path, int named)
{
    if (l->n == l->cap) {
        int nc = l->cap ? l->cap * 2 : 16;
        cli_dataset_file *p = realloc(l->v, (size_t)nc * sizeof *p);
        if (!p) {
            free(path);
            return ec_set_error("out of memory");
        }
        l->v = p;
        l->cap = nc;
    }
    l->v[l->n++] = (cli_dataset_file){path, named};
    return 0;
}

static int walk(file_list *l, const char *dir, int depth)
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
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (rc || stat(names[i], &st)) {
            free(names[i]);
        } else if (S_ISDIR(st.st_mode)) {
            rc = walk(l, names[i], depth + 1);
            free(names[i]);
        } else if (has_ext(names[i], ".csv") || has_ext(names[i], ".json")) {
            rc = add_file(l, names[i], 0);
        } else {
            free(names[i]);
        }
    }
    free(names);
    return rc;
}

int cli_dataset_files(const char *cmd, char *const *paths, int npaths, cli_dataset_file **out,
                      int *n)
{
    file_list l = {0};
    int rc = 0;
    for (int i = 0; i < npaths && !rc; i++) {
        struct stat st;
        if (!stat(paths[i], &st) && S_ISDIR(st.st_mode)) {
            rc = walk(&l, paths[i], 0);
        } else {
            char *copy = strdup(paths[i]);
            rc = copy ? add_file(&l, copy, 1) : ec_set_error("out of memory");
        }
    }
    if (rc) {
        cli_dataset_files_free(l.v, l.n);
        cli_fail(cmd, "%s", ec_last_error());
        return -1;
    }
    *out = l.v;
    *n = l.n;
    return 0;
}

void cli_dataset_files_free(cli_dataset_file *f, int n)
{
    for (int i = 0; i < n; i++) free(f[i].path);
    free(f);
}

/* Every path into one record array; *nfiles counts the files read. */
static int load_files(const char *cmd, char *const *paths, int npaths, ec_run_record **out,
                      size_t *n, int *nfiles)
{
    cli_dataset_file *f;
    int nf;
    if (cli_dataset_files(cmd, paths, npaths, &f, &nf)) return -1;
    acc a = {0};
    for (int i = 0; i < nf; i++) {
        if (read_file(&a, f[i].path, f[i].named)) {
            free(a.v);
            cli_dataset_files_free(f, nf);
            cli_fail(cmd, "%s", ec_last_error());
            return -1;
        }
    }
    cli_dataset_files_free(f, nf);
    *out = a.v;
    *n = a.n;
    *nfiles = a.files;
    return 0;
}

/* Every run of the results database at path, opened read-only. */
static int load_db(const char *cmd, const char *path, ec_run_record **out, size_t *n)
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

int cli_dataset_args_init(const char *cmd, cli_dataset_args *d, int argc)
{
    d->npaths = 0;
    d->db = NULL;
    /* At most every argument is a path; calloc(0) may return NULL, so never ask for 0. */
    d->paths = calloc((size_t)(argc > 0 ? argc : 1), sizeof *d->paths);
    if (d->paths) return 0;
    cli_fail(cmd, "out of memory");
    return -1;
}

void cli_dataset_args_free(cli_dataset_args *d)
{
    free(d->paths);
    d->paths = NULL;
}

int cli_dataset_arg(const char *cmd, cli_dataset_args *d, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    int db = cli_db_arg(cmd, argc, argv, i, &d->db);
    if (db) return db < 0 ? -1 : 0;
    if (a[0] == '-' && a[1]) { /* "-" alone is a file name */
        cli_usage_error(cmd, "unknown option '%s'", a);
        return -1;
    }
    d->paths[d->npaths++] = argv[*i];
    return 0;
}

int cli_dataset_args_check(const char *cmd, const cli_dataset_args *d, const char *verb)
{
    if (!d->npaths != !d->db) return 0;
    if (d->db) cli_usage_error(cmd, "give files or --db, not both");
    else cli_usage_error(cmd, "name at least one file or folder to %s, or --db PATH", verb);
    return -1;
}

int cli_dataset_args_load(const char *cmd, const cli_dataset_args *d, ec_run_record **out,
                          size_t *n, char *from, size_t from_size)
{
    if (d->db) {
        snprintf(from, from_size, "%s", d->db);
        return load_db(cmd, d->db, out, n);
    }
    int nfiles = 0;
    if (load_files(cmd, d->paths, d->npaths, out, n, &nfiles)) return -1;
    snprintf(from, from_size, "%d files", nfiles);
    return 0;
}

int cli_records_latest(const char *cmd, ec_run_record *r, size_t *n)
{
    size_t before = *n;
    if (ec_records_latest(r, n)) {
        cli_fail(cmd, "%s", ec_last_error());
        return -1;
    }
    if (*n < before)
        fprintf(stderr, "ecocompute %s: --latest left out %zu run%s of older commits\n", cmd,
                before - *n, before - *n == 1 ? "" : "s");
    return 0;
}
