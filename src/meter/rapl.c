/* rapl.c — CPU package + DRAM energy from /sys/class/powercap. Only package-* and dram zones are
 * summed: core and uncore are parts of the package and psys overlaps it, so adding them would
 * count the same joules twice. */
#include "rapl.h"

#include "ecocompute/common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    char path[512]; /* .../energy_uj */
    int is_dram;
    unsigned long long max_uj; /* max_energy_range_uj: the counter wraps to 0 after it */
    unsigned long long last_uj;
    unsigned long long total_uj; /* unwrapped increase since open */
} zone;

struct ec_rapl {
    zone *zones;
    int nzones;
};

/* Reads a small sysfs file; returns 0, or -1 with errno's text in err. */
static int read_text(const char *path, char *buf, size_t len, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY);
    ssize_t n = -1;
    if (fd >= 0) {
        n = read(fd, buf, len - 1);
        int saved = errno;
        close(fd);
        errno = saved;
    }
    if (n < 0) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    buf[n] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}

static int read_u64(const char *path, unsigned long long *out, char *err, size_t errlen)
{
    char buf[64], *end;
    if (read_text(path, buf, sizeof buf, err, errlen) != 0) return -1;
    errno = 0;
    *out = strtoull(buf, &end, 10);
    if (!*buf || *end || errno) {
        snprintf(err, errlen, "unexpected contents in %s: '%s'", path, buf);
        return -1;
    }
    return 0;
}

static int zone_cmp(const void *a, const void *b)
{
    return strcmp(((const zone *)a)->path, ((const zone *)b)->path);
}

ec_rapl *ec_rapl_open(const char *root, char *reason, size_t reason_len)
{
    if (!root) root = getenv("ECOCOMPUTE_POWERCAP_ROOT");
    if (!root || !*root) root = "/sys/class/powercap";
    DIR *d = opendir(root);
    if (!d) {
        snprintf(reason, reason_len, "no powercap interface at %s: %s", root, strerror(errno));
        return NULL;
    }
    ec_rapl *r = calloc(1, sizeof *r);
    if (!r) abort();
    int failed = 0;
    for (struct dirent *e; !failed && (e = readdir(d));) {
        /* "intel-rapl:N[:M]" are MSR zones (also on AMD); intel-rapl-mmio duplicates a package. */
        if (strncmp(e->d_name, "intel-rapl:", 11) != 0) continue;
        char path[512], name[64];
        snprintf(path, sizeof path, "%s/%s/name", root, e->d_name);
        if (read_text(path, name, sizeof name, reason, reason_len) != 0) {
            failed = 1;
            break;
        }
        int is_dram = !strcmp(name, "dram");
        if (!is_dram && strncmp(name, "package", 7) != 0) continue;
        zone z = {.is_dram = is_dram};
        snprintf(z.path, sizeof z.path, "%s/%s/max_energy_range_uj", root, e->d_name);
        if (read_u64(z.path, &z.max_uj, reason, reason_len) != 0) failed = 1;
        snprintf(z.path, sizeof z.path, "%s/%s/energy_uj", root, e->d_name);
        if (!failed && read_u64(z.path, &z.last_uj, reason, reason_len) != 0) failed = 1;
        if (failed) break;
        r->zones = realloc(r->zones, (size_t)(r->nzones + 1) * sizeof *r->zones);
        if (!r->zones) abort();
        r->zones[r->nzones++] = z;
    }
    closedir(d);
    if (!failed && r->nzones == 0) {
        snprintf(reason, reason_len, "no RAPL package or dram zones under %s", root);
        failed = 1;
    }
    if (failed) {
        ec_rapl_close(r);
        return NULL;
    }
    qsort(r->zones, (size_t)r->nzones, sizeof *r->zones, zone_cmp);
    return r;
}

void ec_rapl_close(ec_rapl *r)
{
    if (!r) return;
    free(r->zones);
    free(r);
}

int ec_rapl_update(ec_rapl *r, char *reason, size_t reason_len)
{
    for (int i = 0; i < r->nzones; i++) {
        zone *z = &r->zones[i];
        unsigned long long now;
        if (read_u64(z->path, &now, reason, reason_len) != 0) return -1;
        z->total_uj += now >= z->last_uj ? now - z->last_uj : z->max_uj - z->last_uj + now;
        z->last_uj = now;
    }
    return 0;
}

void ec_rapl_totals(const ec_rapl *r, double *package_j, double *dram_j)
{
    double pkg = 0, dram = 0;
    for (int i = 0; i < r->nzones; i++)
        *(r->zones[i].is_dram ? &dram : &pkg) += (double)r->zones[i].total_uj * 1e-6;
    *package_j = pkg;
    *dram_j = dram;
}

int ec_rapl_zone_count(const ec_rapl *r)
{
    return r->nzones;
}

int ec_rapl_has_dram(const ec_rapl *r)
{
    for (int i = 0; i < r->nzones; i++)
        if (r->zones[i].is_dram) return 1;
    return 0;
}
