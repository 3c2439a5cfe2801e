/* traces.c — the stored power traces a report draws: for the sessions of the reported runs, in
 * record order, the trace the results database holds (store.h), or why there is none. */
#include "ecocompute/report.h"

#include <stdlib.h>
#include <string.h>

#include "ecocompute/common.h"

void ec_report_traces_free(ec_report_traces *t)
{
    for (size_t i = 0; i < t->n; i++) ec_session_trace_free(&t->v[i].trace);
    free(t->v);
    t->v = NULL;
    t->n = 0;
}

int ec_report_load_traces(const char *db_path, const ec_run_record *r, size_t n, size_t max,
                          ec_report_traces *out)
{
    memset(out, 0, sizeof *out);
    ec_store *s;
    if (ec_store_open(&s, db_path, 1)) return -1;
    /* Sessions already looked at (pointers into r): runs of many sessions interleave. */
    const char **seen = malloc((n ? n : 1) * sizeof *seen);
    if (!seen) {
        ec_store_close(s);
        return ec_set_error("out of memory");
    }
    size_t sessions = 0;
    int rc = 0;
    for (size_t i = 0; i < n && out->n < max && !rc; i++) {
        if (!r[i].session_id[0] || (i && !strcmp(r[i].session_id, r[i - 1].session_id)))
            continue;
        size_t j = 0;
        while (j < sessions && strcmp(seen[j], r[i].session_id)) j++;
        if (j < sessions) continue;
        seen[sessions++] = r[i].session_id;
        ec_session_trace t;
        if ((rc = ec_store_load_trace(s, r[i].session_id, &t))) break;
        if (!t.n) {
            ec_session_trace_free(&t);
            continue;
        }
        ec_report_trace *p = realloc(out->v, (out->n + 1) * sizeof *p);
        if (!p) {
            ec_session_trace_free(&t);
            rc = ec_set_error("out of memory");
            break;
        }
        out->v = p;
        snprintf(p[out->n].session_id, sizeof p[out->n].session_id, "%s", r[i].session_id);
        p[out->n++].trace = t;
    }
    free(seen);
    ec_store_close(s);
    if (rc) {
        ec_report_traces_free(out);
        return -1;
    }
    if (!out->n && sessions)
        snprintf(out->why_none, sizeof out->why_none,
                 "none of the %zu session%s stored one; record them with <code>ecocompute "
                 "bench --trace FILE</code>.",
                 sessions, sessions == 1 ? "" : "s");
    else if (!out->n)
        snprintf(out->why_none, sizeof out->why_none, "the database holds no sessions.");
    return 0;
}
