/* data.c — the advisor's shipped tables (data/ CSV files) and reference dataset (data/reference/),
 * where the data folder is found, lookups by name and the closest names for a typo. */
#include "ecocompute/advise.h"

#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/csv.h"
#include "ecocompute/common.h"
#include "ecocompute/store.h"

/* ---- reading one table ---- */

typedef struct {
    const ec_csv *csv;
    const char *path;
    size_t row;
} table_cursor;

static const char *cell(const table_cursor *t, const char *column)
{
    int c = ec_csv_column(t->csv, column);
    if (c < 0 || (size_t)c >= t->csv->rows[t->row].nfields) return "";
    return t->csv->rows[t->row].fields[c];
}

static void copy_text(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src);
}

/* An empty cell is "no sourced value" (NaN); anything else must be a number. */
static int number(const table_cursor *t, const char *column, double *out)
{
    const char *s = cell(t, column);
    if (!*s) {
        *out = NAN;
        return 0;
    }
    char *end;
    *out = strtod(s, &end);
    if (*end || end == s)
        return ec_set_error("%s:%zu: column %s: '%s' is not a number", t->path, t->row + 1, column,
                            s);
    return 0;
}

static int read_table(const char *dir, const char *file, const char *const *required, ec_csv *csv,
                      char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s", dir, file);
    if (ec_csv_read_file(path, csv)) return -1;
    if (csv->nrows < 2) {
        ec_csv_free(csv);
        return ec_set_error("%s: no rows", path);
    }
    for (const char *const *r = required; *r; r++)
        if (ec_csv_column(csv, *r) < 0) {
            ec_csv_free(csv);
            return ec_set_error("%s: column '%s' missing", path, *r);
        }
    return 0;
}

static int load_gpus(ec_advise_data *d)
{
    static const char *const req[] = {"name",   "aliases",   "bandwidth_gbs",
                                      "tdp_w",  "memory_gb", "fp16_tflops",
                                      "idle_w", "source",    NULL};
    ec_csv csv;
    char path[600];
    if (read_table(d->dir, "gpus.csv", req, &csv, path, sizeof path)) return -1;
    d->gpus = calloc(csv.nrows - 1, sizeof *d->gpus);
    if (!d->gpus) {
        ec_csv_free(&csv);
        return ec_set_error("out of memory");
    }
    int rc = 0;
    for (size_t i = 1; i < csv.nrows && !rc; i++) {
        table_cursor t = {&csv, path, i};
        ec_gpu_spec *g = &d->gpus[d->ngpus];
        copy_text(g->name, sizeof g->name, cell(&t, "name"));
        copy_text(g->aliases, sizeof g->aliases, cell(&t, "aliases"));
        copy_text(g->arch, sizeof g->arch, cell(&t, "arch"));
        copy_text(g->idle_basis, sizeof g->idle_basis, cell(&t, "idle_basis"));
        copy_text(g->source, sizeof g->source, cell(&t, "source"));
        rc = number(&t, "memory_gb", &g->memory_gb) ||
             number(&t, "bandwidth_gbs", &g->bandwidth_gbs) || number(&t, "tdp_w", &g->tdp_w) ||
             number(&t, "fp16_tflops", &g->fp16_tflops) || number(&t, "int8_tops", &g->int8_tops) ||
             number(&t, "fp8_tflops", &g->fp8_tflops) || number(&t, "idle_w", &g->idle_w);
        if (!rc &&
            !(g->bandwidth_gbs > 0 && g->tdp_w > 0 && g->fp16_tflops > 0 && g->memory_gb > 0))
            rc = ec_set_error("%s:%zu: bandwidth, TDP, fp16 rate and memory must be positive", path,
                              i + 1);
        if (!rc && !*g->source) rc = ec_set_error("%s:%zu: a row without a source", path, i + 1);
        d->ngpus++;
    }
    ec_csv_free(&csv);
    return rc ? -1 : 0;
}

static int year_of(const table_cursor *t, const char *column, int *out)
{
    double y;
    if (number(t, column, &y)) return -1;
    *out = isfinite(y) ? (int)y : 0;
    return 0;
}

static int load_regions(ec_advise_data *d)
{
    static const char *const req[] = {
        "region",           "aliases",     "name",       "g_co2_per_kwh", "intensity_year",
        "intensity_source", "usd_per_kwh", "price_year", "price_source",  NULL};
    ec_csv csv;
    char path[600];
    if (read_table(d->dir, "regions.csv", req, &csv, path, sizeof path)) return -1;
    d->regions = calloc(csv.nrows - 1, sizeof *d->regions);
    if (!d->regions) {
        ec_csv_free(&csv);
        return ec_set_error("out of memory");
    }
    int rc = 0;
    for (size_t i = 1; i < csv.nrows && !rc; i++) {
        table_cursor t = {&csv, path, i};
        ec_region *r = &d->regions[d->nregions++];
        copy_text(r->key, sizeof r->key, cell(&t, "region"));
        copy_text(r->aliases, sizeof r->aliases, cell(&t, "aliases"));
        copy_text(r->name, sizeof r->name, cell(&t, "name"));
        copy_text(r->intensity_basis, sizeof r->intensity_basis, cell(&t, "intensity_basis"));
        copy_text(r->intensity_source, sizeof r->intensity_source, cell(&t, "intensity_source"));
        copy_text(r->price_basis, sizeof r->price_basis, cell(&t, "price_basis"));
        copy_text(r->price_source, sizeof r->price_source, cell(&t, "price_source"));
        rc = number(&t, "g_co2_per_kwh", &r->g_co2_per_kwh) ||
             number(&t, "usd_per_kwh", &r->usd_per_kwh) ||
             year_of(&t, "intensity_year", &r->intensity_year) ||
             year_of(&t, "price_year", &r->price_year);
        if (!rc && !(r->g_co2_per_kwh > 0 && *r->intensity_source))
            rc =
                ec_set_error("%s:%zu: every region needs an intensity and its source", path, i + 1);
    }
    ec_csv_free(&csv);
    if (!rc && !ec_advise_find_region(d, "world"))
        rc = ec_set_error("%s: the world-average fallback row 'world' is missing", path);
    return rc ? -1 : 0;
}

static int load_equivalents(ec_advise_data *d)
{
    static const char *const req[] = {"key", "what", "value", "unit", "source", NULL};
    ec_csv csv;
    char path[600];
    if (read_table(d->dir, "equivalents.csv", req, &csv, path, sizeof path)) return -1;
    d->equivalents = calloc(csv.nrows - 1, sizeof *d->equivalents);
    if (!d->equivalents) {
        ec_csv_free(&csv);
        return ec_set_error("out of memory");
    }
    int rc = 0;
    for (size_t i = 1; i < csv.nrows && !rc; i++) {
        table_cursor t = {&csv, path, i};
        ec_equivalent *e = &d->equivalents[d->nequivalents++];
        copy_text(e->key, sizeof e->key, cell(&t, "key"));
        copy_text(e->what, sizeof e->what, cell(&t, "what"));
        copy_text(e->unit, sizeof e->unit, cell(&t, "unit"));
        copy_text(e->basis, sizeof e->basis, cell(&t, "basis"));
        copy_text(e->year, sizeof e->year, cell(&t, "year"));
        copy_text(e->source, sizeof e->source, cell(&t, "source"));
        rc = number(&t, "value", &e->value);
        if (!rc && !(e->value > 0))
            rc = ec_set_error("%s:%zu: value must be positive", path, i + 1);
    }
    ec_csv_free(&csv);
    return rc ? -1 : 0;
}

static int load_cpt(ec_advise_data *d)
{
    static const char *const req[] = {"lang", "tokenizer", "chars_per_token", "source", NULL};
    ec_csv csv;
    char path[600];
    if (read_table(d->dir, "chars_per_token.csv", req, &csv, path, sizeof path)) return -1;
    d->cpt = calloc(csv.nrows - 1, sizeof *d->cpt);
    if (!d->cpt) {
        ec_csv_free(&csv);
        return ec_set_error("out of memory");
    }
    int rc = 0;
    for (size_t i = 1; i < csv.nrows && !rc; i++) {
        table_cursor t = {&csv, path, i};
        ec_chars_per_token *c = &d->cpt[d->ncpt++];
        copy_text(c->lang, sizeof c->lang, cell(&t, "lang"));
        copy_text(c->tokenizer, sizeof c->tokenizer, cell(&t, "tokenizer"));
        copy_text(c->confidence, sizeof c->confidence, cell(&t, "confidence"));
        copy_text(c->source, sizeof c->source, cell(&t, "source"));
        rc = number(&t, "chars_per_token", &c->chars_per_token);
        if (!rc && !(c->chars_per_token > 0))
            rc = ec_set_error("%s:%zu: chars_per_token must be positive", path, i + 1);
    }
    ec_csv_free(&csv);
    return rc ? -1 : 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every .csv of data/reference, in name order, so the record order is reproducible. */
static int load_reference(ec_advise_data *d)
{
    char dir[600];
    snprintf(dir, sizeof dir, "%s/reference", d->dir);
    DIR *dp = opendir(dir);
    if (!dp) return ec_set_error("%s: cannot open the reference dataset folder", dir);
    char *names[256];
    size_t nn = 0;
    struct dirent *e;
    while ((e = readdir(dp)) && nn < 256) {
        size_t l = strlen(e->d_name);
        if (l > 4 && !strcmp(e->d_name + l - 4, ".csv")) names[nn++] = strdup(e->d_name);
    }
    closedir(dp);
    qsort(names, nn, sizeof *names, by_name);
    int rc = 0;
    for (size_t i = 0; i < nn; i++) {
        char path[900];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        ec_run_record *r = NULL;
        size_t n = 0;
        if (!rc && ec_dataset_read(path, &r, &n) == 0)
            rc = ec_advise_data_append(d, r, n);
        else if (!rc)
            rc = -1;
        free(r);
        free(names[i]);
    }
    d->nreference = d->nrecords;
    return rc;
}

int ec_advise_data_append(ec_advise_data *d, const ec_run_record *r, size_t n)
{
    if (!n) return 0;
    ec_run_record *v = realloc(d->records, (d->nrecords + n) * sizeof *v);
    if (!v) return ec_set_error("out of memory");
    memcpy(v + d->nrecords, r, n * sizeof *r);
    d->records = v;
    d->nrecords += n;
    return 0;
}

size_t ec_advise_use_calibrations(ec_advise_data *d, ec_store *s, const ec_run_record *r, size_t n,
                                  const char *db_name)
{
    size_t changed = 0;
    for (size_t i = 0; i < n; i++) {
        if (!r[i].gpu_uuid[0]) continue;
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = !strcmp(r[j].gpu_uuid, r[i].gpu_uuid);
        ec_calibration cal;
        if (seen || ec_store_latest_calibration(s, r[i].gpu_uuid, &cal)) continue;
        const ec_gpu_spec *g = ec_advise_find_gpu(d, cal.gpu_name);
        if (!g || !(cal.idle_power_w > 0)) continue;
        ec_gpu_spec *w = &d->gpus[g - d->gpus];
        w->idle_w = cal.idle_power_w;
        snprintf(w->idle_basis, sizeof w->idle_basis, "ecocompute calibrate %.32s in %.64s",
                 cal.timestamp_utc, db_name);
        changed++;
    }
    return changed;
}

int ec_advise_data_load(const char *dir, ec_advise_data *d)
{
    memset(d, 0, sizeof *d);
    snprintf(d->dir, sizeof d->dir, "%s", dir);
    if (load_gpus(d) || load_regions(d) || load_equivalents(d) || load_cpt(d) ||
        load_reference(d)) {
        ec_advise_data_free(d);
        return -1;
    }
    return 0;
}

void ec_advise_data_free(ec_advise_data *d)
{
    free(d->gpus);
    free(d->regions);
    free(d->equivalents);
    free(d->cpt);
    free(d->records);
    memset(d, 0, sizeof *d);
}

static int has_tables(const char *dir)
{
    char p[PATH_MAX + 64];
    struct stat st;
    if (strlen(dir) > PATH_MAX) return 0;
    snprintf(p, sizeof p, "%.*s/gpus.csv", PATH_MAX, dir);
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

int ec_advise_data_dir(const char *explicit_dir, char *out, size_t cap)
{
    const char *env = getenv("ECOCOMPUTE_DATA_DIR");
    const char *given = explicit_dir ? explicit_dir : (env && *env ? env : NULL);
    if (given) {
        if (!has_tables(given))
            return ec_set_error("%s: not an ecocompute data folder (no gpus.csv)", given);
        snprintf(out, cap, "%s", given);
        return 0;
    }
    char exe[PATH_MAX];
    ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (l <= 0) return ec_set_error("cannot find the executable's folder; give --data-dir");
    exe[l] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    static const char *const rel[] = {"/../share/ecocompute/data", "/data", "/../data"};
    for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
        char p[PATH_MAX + 32];
        snprintf(p, sizeof p, "%s%s", exe, rel[i]);
        if (has_tables(p)) {
            if (strlen(p) >= cap) return ec_set_error("data folder path too long: %s", p);
            memcpy(out, p, strlen(p) + 1);
            return 0;
        }
    }
    return ec_set_error("no data folder next to %s (looked in ../share/ecocompute/data, data, "
                        "../data); give --data-dir or ECOCOMPUTE_DATA_DIR",
                        exe);
}

/* ---- names ---- */

/* Lowercase letters and digits only: "NVIDIA H100 80GB HBM3" and "h100-80gb-hbm3" meet. */
static void squash(const char *s, char *out, size_t cap)
{
    size_t j = 0;
    for (; *s && j + 1 < cap; s++)
        if (isalnum((unsigned char)*s)) out[j++] = (char)tolower((unsigned char)*s);
    out[j] = 0;
}

/* Copies text into out, cut to cap - 1 bytes: a name longer than out then matches no table
 * entry, and is reported as unknown. */
static void copy_cut(char *out, size_t cap, const char *text)
{
    size_t len = strnlen(text, cap - 1);
    memcpy(out, text, len);
    out[len] = '\0';
}

/* "nvidia", "geforce" and "tesla" are brand words NVML puts in front of a GPU's name. */
static void squash_gpu(const char *s, char *out, size_t cap)
{
    char tmp[256];
    squash(s, tmp, sizeof tmp);
    static const char *const brands[] = {"nvidia", "geforce", "tesla"};
    char *p = tmp;
    for (int again = 1; again;) {
        again = 0;
        for (size_t i = 0; i < 3; i++) {
            size_t l = strlen(brands[i]);
            if (!strncmp(p, brands[i], l)) {
                p += l;
                again = 1;
            }
        }
    }
    copy_cut(out, cap, p);
}

/* Lowercase words separated by single spaces, brand words dropped: "NVIDIA A800-SXM4-80GB" →
 * "a800 sxm4 80gb". */
static void spaced_gpu(const char *s, char *out, size_t cap)
{
    char tmp[256];
    size_t j = 0;
    int gap = 0;
    for (; *s && j + 2 < sizeof tmp; s++) {
        if (isalnum((unsigned char)*s)) {
            if (gap && j) tmp[j++] = ' ';
            tmp[j++] = (char)tolower((unsigned char)*s);
            gap = 0;
        } else {
            gap = 1;
        }
    }
    tmp[j] = 0;
    char *p = tmp;
    static const char *const brands[] = {"nvidia ", "geforce ", "tesla "};
    for (int again = 1; again;) {
        again = 0;
        for (size_t i = 0; i < 3; i++)
            if (!strncmp(p, brands[i], strlen(brands[i]))) {
                p += strlen(brands[i]);
                again = 1;
            }
    }
    copy_cut(out, cap, p);
}

static int alias_match(const char *want, const char *key, const char *aliases,
                       void (*norm)(const char *, char *, size_t))
{
    char k[256];
    norm(key, k, sizeof k);
    if (!strcmp(want, k)) return 1;
    const char *a = aliases;
    while (*a) {
        const char *bar = strchr(a, '|');
        size_t l = bar ? (size_t)(bar - a) : strlen(a);
        char one[128];
        snprintf(one, sizeof one, "%.*s", (int)(l < 127 ? l : 127), a);
        norm(one, k, sizeof k);
        if (*k && !strcmp(want, k)) return 1;
        a += l + (bar ? 1 : 0);
    }
    return 0;
}

const ec_gpu_spec *ec_advise_find_gpu(const ec_advise_data *d, const char *name)
{
    if (!name || !*name) return NULL;
    char want[256];
    squash_gpu(name, want, sizeof want);
    for (size_t i = 0; i < d->ngpus; i++)
        if (alias_match(want, d->gpus[i].name, d->gpus[i].aliases, squash_gpu)) return &d->gpus[i];
    /* NVML adds the form factor ("A800-SXM4-80GB", "H100 80GB HBM3"): the longest alias that the
     * name starts with, up to a word boundary, decides ("H1000" is not an H100). */
    char spaced[256];
    spaced_gpu(name, spaced, sizeof spaced);
    const ec_gpu_spec *best = NULL;
    size_t best_len = 0;
    for (size_t i = 0; i < d->ngpus; i++) {
        const char *a = d->gpus[i].aliases;
        while (*a) {
            const char *bar = strchr(a, '|');
            size_t l = bar ? (size_t)(bar - a) : strlen(a);
            char one[128], k[128];
            snprintf(one, sizeof one, "%.*s", (int)(l < 127 ? l : 127), a);
            spaced_gpu(one, k, sizeof k);
            size_t kl = strlen(k);
            if (kl >= 2 && !strncmp(spaced, k, kl) && (spaced[kl] == ' ' || !spaced[kl]) &&
                kl > best_len) {
                best = &d->gpus[i];
                best_len = kl;
            }
            a += l + (bar ? 1 : 0);
        }
    }
    return best;
}

const ec_region *ec_advise_find_region(const ec_advise_data *d, const char *name)
{
    if (!name || !*name) return NULL;
    char want[256];
    squash(name, want, sizeof want);
    for (size_t i = 0; i < d->nregions; i++)
        if (alias_match(want, d->regions[i].key, d->regions[i].aliases, squash))
            return &d->regions[i];
    return NULL;
}

const ec_equivalent *ec_advise_find_equivalent(const ec_advise_data *d, const char *key)
{
    for (size_t i = 0; i < d->nequivalents; i++)
        if (!strcmp(d->equivalents[i].key, key)) return &d->equivalents[i];
    return NULL;
}

const ec_chars_per_token *ec_advise_find_cpt(const ec_advise_data *d, const char *lang,
                                             const char *tokenizer)
{
    for (size_t i = 0; i < d->ncpt; i++)
        if (!strcasecmp(d->cpt[i].lang, lang) &&
            (!tokenizer || !strncasecmp(d->cpt[i].tokenizer, tokenizer, strlen(tokenizer))))
            return &d->cpt[i];
    return NULL;
}

size_t ec_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 255) la = 255;
    if (lb > 255) lb = 255;
    size_t prev[256], cur[256];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            size_t m = prev[j] + 1;
            if (cur[j - 1] + 1 < m) m = cur[j - 1] + 1;
            if (prev[j - 1] + cost < m) m = prev[j - 1] + cost;
            cur[j] = m;
        }
        memcpy(prev, cur, (lb + 1) * sizeof *prev);
    }
    return prev[lb];
}

void ec_closest_names(const char *query, const char *const *names, size_t n, char *out, size_t cap)
{
    out[0] = 0;
    size_t used = 0, chosen[3];
    int nchosen = 0;
    while (nchosen < 3) {
        size_t best = SIZE_MAX, bi = 0;
        for (size_t i = 0; i < n; i++) {
            int dup = 0;
            for (int k = 0; k < nchosen && !dup; k++)
                dup = !strcasecmp(names[chosen[k]], names[i]);
            if (dup) continue;
            size_t d = ec_edit_distance(query, names[i]);
            if (d < best) {
                best = d;
                bi = i;
            }
        }
        if (best == SIZE_MAX) break;
        chosen[nchosen++] = bi;
        int w = snprintf(out + used, cap - used, "%s%s", used ? ", " : "", names[bi]);
        if (w < 0 || (size_t)w >= cap - used) break;
        used += (size_t)w;
    }
}
