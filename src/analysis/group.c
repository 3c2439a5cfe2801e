/* group.c — which energy figure a record carries, and grouping records into configurations
 * (the unit every statistic is computed over). */
#include "ecocompute/analysis.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ecocompute/common.h"

double ec_record_energy_per_1k(const ec_run_record *r, ec_energy_definition *def)
{
    if (isfinite(r->energy_j_per_1k)) {
        *def = r->energy_definition;
        return r->energy_j_per_1k;
    }
    if (isfinite(r->j_per_1k_gross)) {
        *def = EC_ENERGY_GROSS;
        return r->j_per_1k_gross;
    }
    if (isfinite(r->j_per_1k_net)) {
        *def = EC_ENERGY_NET;
        return r->j_per_1k_net;
    }
    *def = EC_ENERGY_UNKNOWN;
    return NAN;
}

void ec_groups_free(ec_config_group *g, size_t ngroups)
{
    if (!g) return;
    for (size_t i = 0; i < ngroups; i++) free(g[i].rows);
    free(g);
}

int ec_group_configs(const ec_run_record *r, size_t n, ec_config_group **out, size_t *ngroups)
{
    *out = NULL;
    *ngroups = 0;
    ec_config_group *g = NULL;
    size_t ng = 0, cap = 0;
    size_t *which = malloc((n ? n : 1) * sizeof *which);
    if (!which) return ec_set_error("out of memory");
    /* Quadratic in the number of configurations, linear in runs: datasets have at most a few
     * thousand configurations. */
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        while (k < ng && !ec_same_config(g[k].key, &r[i])) k++;
        if (k == ng) {
            if (ng == cap) {
                size_t nc = cap ? cap * 2 : 16;
                ec_config_group *p = realloc(g, nc * sizeof *p);
                if (!p) goto oom;
                g = p;
                cap = nc;
            }
            g[ng].key = &r[i];
            g[ng].rows = NULL;
            g[ng].n = 0;
            ng++;
        }
        which[i] = k;
        g[k].n++;
    }
    for (size_t k = 0; k < ng; k++) {
        g[k].rows = malloc(g[k].n * sizeof *g[k].rows);
        if (!g[k].rows) goto oom;
        g[k].n = 0;
    }
    for (size_t i = 0; i < n; i++) g[which[i]].rows[g[which[i]].n++] = i;
    free(which);
    *out = g;
    *ngroups = ng;
    return 0;
oom:
    free(which);
    ec_groups_free(g, ng);
    return ec_set_error("out of memory");
}

int ec_records_latest(ec_run_record *r, size_t *n)
{
    ec_config_group *g;
    size_t ng;
    if (ec_group_configs(r, *n, &g, &ng)) return -1;
    char *keep = malloc(*n ? *n : 1);
    if (!keep) {
        ec_groups_free(g, ng);
        return ec_set_error("out of memory");
    }
    for (size_t k = 0; k < ng; k++) {
        const ec_run_record *newest = NULL; /* the configuration's last-started run with a commit */
        for (size_t j = 0; j < g[k].n; j++) {
            const ec_run_record *x = &r[g[k].rows[j]];
            if (x->git_commit[0] &&
                (!newest || strcmp(x->timestamp_utc, newest->timestamp_utc) > 0))
                newest = x;
        }
        for (size_t j = 0; j < g[k].n; j++) {
            const ec_run_record *x = &r[g[k].rows[j]];
            keep[g[k].rows[j]] = !x->git_commit[0] || !strcmp(x->git_commit, newest->git_commit);
        }
    }
    ec_groups_free(g, ng);
    size_t m = 0;
    for (size_t i = 0; i < *n; i++)
        if (keep[i]) {
            if (m != i) r[m] = r[i];
            m++;
        }
    free(keep);
    *n = m;
    return 0;
}
