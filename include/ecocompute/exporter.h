/* ecocompute/exporter.h — live GPU and CPU energy telemetry in Prometheus' text exposition format
 * (version 0.0.4): a reader thread that keeps a snapshot of the meter's readings, the exposition
 * text of a snapshot, node_exporter textfiles written atomically, and an HTTP server for /metrics
 * and /healthz (libmicrohttpd; absent when the build did not find it).
 *
 * Why a reader thread: an NVML call can take milliseconds (the energy counter ~3 ms of CPU on an
 * H100) or, on a sick GPU, much longer. A scrape asks the reader for fresh readings and waits at
 * most max_read_s for them; past that it serves the last complete snapshot, whose age is itself a
 * metric. A GPU lost mid-run reads as ecocompute_gpu_up 0, never as a crash.
 *
 * Lifecycle:
 *   ec_exporter *x = ec_exporter_start(meter, &opts);   // meter opened, not necessarily started
 *   char *text = ec_exporter_scrape(x, &len); ... free(text);
 *   ec_exporter_stop(x);                                // joins the reader; the meter stays open
 * docs/fleet.md lists the metrics and their DCGM equivalents. */
#ifndef ECOCOMPUTE_EXPORTER_H
#define ECOCOMPUTE_EXPORTER_H

#include "ecocompute/meter.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    double interval_s; /* the reader refreshes at least this often without scrapes, s (default 1) */
    double max_read_s; /* a scrape waits at most this long for fresh readings, s (default 0.2) */
} ec_exporter_options;
void ec_exporter_options_default(ec_exporter_options *o);

/* One GPU in a snapshot. */
typedef struct {
    int up;          /* 1: the last reading answered; 0: lost or failing */
    ec_gpu_sample s; /* the last reading (s.valid says which values it holds) */
} ec_exporter_gpu;

/* Everything one exposition is made of. */
typedef struct {
    int ngpus;
    const ec_gpu_info *info[EC_METER_MAX_GPUS]; /* identity, from the meter (labels) */
    ec_exporter_gpu gpus[EC_METER_MAX_GPUS];
    int cpu_available;                /* RAPL readable */
    double cpu_package_j, cpu_dram_j; /* since the exporter started, J (dram NaN: no zone) */
    double read_duration_s;           /* how long reading every GPU took, s */
    double age_s;                     /* now − when the snapshot's reading finished, s */
    unsigned long reads;              /* complete readings since start */
    double scrape_duration_s;         /* this scrape up to rendering, s (filled by the scrape) */
    const char *driver_version;
    const char *version; /* ecocompute's */
} ec_exporter_snapshot;

typedef struct ec_exporter ec_exporter;

/* Starts the reader thread over m (which must outlive the exporter). Signals are blocked in the
 * thread. Returns NULL (ec_last_error) when the thread cannot start. */
ec_exporter *ec_exporter_start(ec_meter *m, const ec_exporter_options *o);
/* Stops and joins the reader (waits for an NVML call in flight to return), frees x. */
void ec_exporter_stop(ec_exporter *x);

/* Asks for fresh readings, waits up to max_read_s for them and copies the newest complete
 * snapshot into *out. Returns 1 when the readings are fresh, 0 when the wait timed out (the
 * snapshot is older; still valid), -1 when no reading has ever completed in time. */
int ec_exporter_snapshot_now(ec_exporter *x, ec_exporter_snapshot *out);

/* The exposition text of a snapshot (HELP and TYPE on every metric, base units, counters end in
 * _total); malloc'd, NUL-terminated, *len its length. NULL only when out of memory. */
char *ec_exposition_render(const ec_exporter_snapshot *s, size_t *len);

/* snapshot_now + render: what /metrics serves. NULL (ec_last_error) when out of memory or when no
 * reading has ever completed. */
char *ec_exporter_scrape(ec_exporter *x, size_t *len);

/* The first line of every textfile we write; a file at the target path that does not begin with
 * it is someone else's and is never replaced. */
#define EC_TEXTFILE_MARKER "# ecocompute exporter textfile"
/* Writes text (an exposition) to path for node_exporter's textfile collector: marker line, then
 * text, into a temporary file in the same directory, renamed over path (readers never see half a
 * file). Refuses (-1, ec_last_error) when path exists and is not a regular file we wrote. */
int ec_textfile_write(const char *path, const char *text, size_t len);

/* ---- HTTP (http.c; libmicrohttpd) ---- */
typedef struct ec_http_server ec_http_server;
/* 1 when this build has the HTTP server (libmicrohttpd was found). */
int ec_http_available(void);
/* Serves GET /metrics (ec_exporter_scrape) and /healthz on listen ("ADDR:PORT", "[v6]:PORT";
 * port 0 picks a free one) from the server's own thread. Returns NULL (ec_last_error) on a bad
 * address, a port in use, or a build without libmicrohttpd. */
ec_http_server *ec_http_start(const char *listen, ec_exporter *x);
int ec_http_port(const ec_http_server *h); /* the bound port */
void ec_http_stop(ec_http_server *h);      /* closes the socket, joins the thread, frees h */

#ifdef __cplusplus
}
#endif
#endif
