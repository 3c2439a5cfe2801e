/* cmd_exporter.c — `ecocompute exporter`: serves the meter's live GPU and CPU energy telemetry to
 * Prometheus (/metrics over HTTP), writes it for node_exporter's textfile collector, or prints one
 * exposition. Runs until SIGTERM/SIGINT (or --duration) and shuts down cleanly. */
#include "cli.h"

#include "ecocompute/exporter.h"
#include "ecocompute/meter.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CMD "exporter"
#define DEFAULT_LISTEN "127.0.0.1:9464"

static void usage(void)
{
    printf(
        "usage: ecocompute exporter [--listen ADDR:PORT] [--textfile PATH.prom] [--once]\n"
        "                           [--interval S] [--max-read-ms MS] [--gpus LIST] "
        "[--duration S]\n\n"
        "Exposes every selected GPU's energy counter (J, gross, since driver load), instant and\n"
        "1 s average power (W), temperature, SM/memory clocks (Hz), utilisation, clock event\n"
        "(throttle) reasons, memory used, and RAPL CPU package/DRAM energy (J, gross) in\n"
        "Prometheus' text format. Names follow Prometheus (base units, _total counters) and\n"
        "mirror DCGM exporter fields (docs/fleet.md). A scrape waits at most --max-read-ms for\n"
        "fresh NVML readings, then serves the last ones (ecocompute_snapshot_age_seconds says\n"
        "how old); a lost GPU reads ecocompute_gpu_up 0.\n\n"
        "  --listen ADDR:PORT  serve GET /metrics and /healthz (default %s; port 0 picks\n"
        "                      a free one, printed on stderr). Loopback unless you mean it.\n"
        "  --textfile PATH     rewrite PATH (must end in .prom) every --interval, atomically,\n"
        "                      for node_exporter's textfile collector; without --listen, no\n"
        "                      HTTP is served. Never replaces a file it did not write.\n"
        "  --once              write one exposition (to --textfile, else stdout) and exit\n"
        "  --interval S        refresh readings (and the textfile) every S s (default 1)\n"
        "  --max-read-ms MS    longest a scrape waits for NVML, ms (default 200)\n"
        "  --gpus LIST         GPUs to read: \"0,1\", UUIDs or PCI bus ids (default all)\n"
        "  --duration S        stop after S s (default: run until SIGTERM or SIGINT)\n\n"
        "Data on stdout is the Prometheus exposition itself (--once); messages go to stderr.\n\n"
        "examples:\n"
        "  ecocompute exporter                              # http://127.0.0.1:9464/metrics\n"
        "  ecocompute exporter --listen 0.0.0.0:9464 --gpus 0,1\n"
        "  ecocompute exporter --textfile /var/lib/node_exporter/textfile/ecocompute.prom\n"
        "  ecocompute exporter --once | grep energy_joules_total\n",
        DEFAULT_LISTEN);
}

typedef struct {
    const char *listen; /* NULL: not given */
    const char *textfile;
    const char *gpus;
    int once;
    double interval_s, max_read_ms, duration_s;
} exporter_args;

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

/* Returns -1 when parsing should stop with *rc (help or usage error), 0 otherwise. */
static int parse_args(int argc, char **argv, exporter_args *a, int *rc)
{
    memset(a, 0, sizeof *a);
    a->interval_s = 1.0;
    a->max_read_ms = 200.0;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            usage();
            *rc = EXIT_OK;
            return -1;
        }
        if (!strcmp(f, "--once")) {
            a->once = 1;
            continue;
        }
        static const char *const valued[] = {"--listen",   "--textfile",    "--gpus",
                                             "--interval", "--max-read-ms", "--duration"};
        int known = 0;
        for (size_t k = 0; k < sizeof valued / sizeof *valued; k++)
            known |= !strcmp(f, valued[k]);
        if (!known) {
            *rc = cli_usage_error(
                CMD, f[0] == '-' ? "unknown option '%s'" : "unexpected argument '%s'", f);
            return -1;
        }
        if (i + 1 >= argc) {
            *rc = cli_usage_error(CMD, "%s needs a value", f);
            return -1;
        }
        const char *v = argv[++i];
        *rc = EXIT_USAGE;
        if (!strcmp(f, "--listen"))
            a->listen = v;
        else if (!strcmp(f, "--textfile"))
            a->textfile = v;
        else if (!strcmp(f, "--gpus"))
            a->gpus = v;
        else if (!strcmp(f, "--interval")) {
            if (cli_parse_double(CMD, f, v, 0.05, 3600, &a->interval_s)) return -1;
        } else if (!strcmp(f, "--max-read-ms")) {
            if (cli_parse_double(CMD, f, v, 1, 60000, &a->max_read_ms)) return -1;
        } else if (cli_parse_double(CMD, f, v, 0, 1e9, &a->duration_s))
            return -1;
    }
    const char *colon = a->listen ? strrchr(a->listen, ':') : NULL;
    if (a->listen && (!colon || colon == a->listen || !colon[1] ||
                      strspn(colon + 1, "0123456789") != strlen(colon + 1))) {
        *rc = cli_usage_error(CMD, "--listen '%s': expected ADDR:PORT, e.g. %s", a->listen,
                              DEFAULT_LISTEN);
        return -1;
    }
    if (a->textfile && !ends_with(a->textfile, ".prom")) {
        *rc = cli_usage_error(CMD,
                              "--textfile '%s' must end in .prom (node_exporter reads only "
                              "*.prom files)",
                              a->textfile);
        return -1;
    }
    if (a->once && a->listen) {
        *rc = cli_usage_error(CMD, "--once writes one exposition and exits; it cannot --listen");
        return -1;
    }
    return 0;
}

/* One exposition to the textfile (or stdout when there is none). No reading yet (NVML slower
 * than --max-read-ms since start) fails a single write, but only skips one in a loop. */
static int write_once(ec_exporter *x, const exporter_args *a, int in_loop)
{
    size_t len;
    char *text = ec_exporter_scrape(x, &len);
    if (!text && in_loop) {
        fprintf(stderr, "ecocompute exporter: %s; textfile not rewritten this time\n",
                ec_last_error());
        return EXIT_OK;
    }
    if (!text) return cli_fail(CMD, "%s", ec_last_error());
    int rc = EXIT_OK;
    if (a->textfile) {
        if (ec_textfile_write(a->textfile, text, len) != 0)
            rc = cli_fail(CMD, "%s", ec_last_error());
    } else if (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0)
        rc = cli_fail(CMD, "cannot write to stdout");
    free(text);
    return rc;
}

/* Waits for SIGTERM/SIGINT (blocked by the caller) up to `seconds`. Returns the signal, or 0. */
static int wait_signal(const sigset_t *set, double seconds)
{
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    int sig = sigtimedwait(set, NULL, &ts);
    return sig > 0 ? sig : 0;
}

/* Serves (HTTP and/or textfile) until a signal or the duration ends. */
static int serve(ec_exporter *x, const exporter_args *a, const sigset_t *stop_set)
{
    ec_http_server *h = NULL;
    if (a->listen || !a->textfile) {
        const char *listen = a->listen ? a->listen : DEFAULT_LISTEN;
        h = ec_http_start(listen, x);
        if (!h) return cli_fail(CMD, "%s", ec_last_error());
        fprintf(stderr, "ecocompute exporter: serving http://%.*s:%d/metrics\n",
                (int)(strrchr(listen, ':') - listen), listen, ec_http_port(h));
    }
    if (a->textfile)
        fprintf(stderr, "ecocompute exporter: writing %s every %g s\n", a->textfile, a->interval_s);
    double end = a->duration_s > 0 ? ec_now_s() + a->duration_s : 0;
    int rc = EXIT_OK, sig = 0;
    while (rc == EXIT_OK && !sig) {
        if (a->textfile) rc = write_once(x, a, 1);
        double wait = a->textfile ? a->interval_s : 3600;
        if (end) {
            double left = end - ec_now_s();
            if (left <= 0) break;
            if (left < wait) wait = left;
        }
        if (rc == EXIT_OK) sig = wait_signal(stop_set, wait);
    }
    if (sig) fprintf(stderr, "ecocompute exporter: %s, shutting down\n", strsignal(sig));
    ec_http_stop(h);
    return rc;
}

int cmd_exporter(int argc, char **argv)
{
    exporter_args a;
    int rc = EXIT_OK;
    if (parse_args(argc, argv, &a, &rc) != 0) return rc;
    /* Blocked before any thread starts, so every thread inherits the mask and the signals wait
     * for sigtimedwait here: shutdown is an orderly return, never a handler mid-scrape. */
    sigset_t stop_set, old;
    sigemptyset(&stop_set);
    sigaddset(&stop_set, SIGTERM);
    sigaddset(&stop_set, SIGINT);
    sigaddset(&stop_set, SIGHUP);
    sigprocmask(SIG_BLOCK, &stop_set, &old);
    ec_meter_options mo;
    ec_meter_options_default(&mo);
    mo.gpus = a.gpus;
    ec_meter *m = ec_meter_open(&mo);
    if (!m) {
        sigprocmask(SIG_SETMASK, &old, NULL);
        return cli_fail(CMD, "%s", ec_last_error());
    }
    if (ec_meter_gpu_unavailable(m))
        fprintf(stderr, "ecocompute exporter: no GPUs (%s); serving CPU metrics only\n",
                ec_meter_gpu_unavailable(m));
    ec_exporter_options xo;
    ec_exporter_options_default(&xo);
    xo.interval_s = a.interval_s;
    xo.max_read_s = a.max_read_ms / 1000.0;
    ec_exporter *x = ec_exporter_start(m, &xo);
    if (!x)
        rc = cli_fail(CMD, "%s", ec_last_error());
    else if (a.once)
        rc = write_once(x, &a, 0);
    else
        rc = serve(x, &a, &stop_set);
    ec_exporter_stop(x);
    ec_meter_close(m);
    sigprocmask(SIG_SETMASK, &old, NULL);
    return rc;
}
