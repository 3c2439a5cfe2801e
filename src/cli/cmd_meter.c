/* cmd_meter.c — `ecocompute meter -- COMMAND`: runs a command as a child inside one measurement
 * window and reports its GPU (and CPU/DRAM) energy; forwards signals to the child and returns
 * the child's exit status. */
#include "cli.h"
#include "meter_marks.h"

#include "ecocompute/meter.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* Above this, counter and integrated power disagree by more than sampling can explain. */
#define DISAGREEMENT_WARN_PCT 5.0

typedef struct {
    const char *gpus, *trace;
    double interval_ms, idle_s;
    long tokens; /* 0: not given */
    ec_format fmt;
    char **cmd;
} meter_args;

static volatile sig_atomic_t child_pid;
static volatile sig_atomic_t got_signal;

static void on_signal(int sig, siginfo_t *info, void *ctx)
{
    (void)ctx;
    got_signal = sig;
    /* A terminal's ^C or hang-up already reached the child, which shares our foreground process
     * group; only signals sent to us alone (kill, timeout, a scheduler) are passed on. */
    if (info->si_code > 0) return;
    if (child_pid > 0) kill((pid_t)child_pid, sig);
}

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP};

static void install_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof forwarded / sizeof *forwarded; i++)
        sigaction(forwarded[i], &sa, NULL);
}

static void usage(void)
{
    printf(
        "usage: ecocompute meter [--gpu LIST] [--interval MS] [--idle SECONDS] [--tokens N]\n"
        "                        [--trace FILE.csv] [--format table|json|csv] -- COMMAND "
        "[ARGS...]\n\n"
        "Runs COMMAND and measures the energy it costs: GPU board energy from NVML's energy\n"
        "counter (or, where a GPU has none, the integral of instant power, labelled so), the\n"
        "same energy integrated from a sampler for cross-checking, average and peak power,\n"
        "temperature and throttling, and CPU package + DRAM energy from RAPL when readable.\n"
        "Energy is gross (what the board drew) unless labelled net (gross - idle power x time).\n\n"
        "  --gpu LIST       GPUs to measure: NVML indices, GPU-... UUIDs or PCI bus ids,\n"
        "                   comma-separated (default: all)\n"
        "  --interval MS    sampler period in milliseconds, 1..1000 (default 100)\n"
        "  --idle SECONDS   first measure idle power for this long, then report net energy\n"
        "  --tokens N       tokens the command produced: also report J per 1k tokens\n"
        "  --trace FILE     write the sampler's time series as CSV\n"
        "  --format F       table (default), json or csv (one row per run under a fixed header)\n\n"
        "COMMAND finds ECOCOMPUTE_METER_T0 in its environment: the CLOCK_MONOTONIC seconds\n"
        "at which the trace's t_s is 0, so it can mark its own phases on the trace, and\n"
        "ECOCOMPUTE_MARK_FD: a file descriptor to which it may write lines 'begin NAME' and\n"
        "'end NAME'; each such window is reported too (gross and net J, s, W, per GPU).\n"
        "SIGINT, SIGTERM and SIGHUP are passed on to COMMAND. The exit status is COMMAND's\n"
        "(128+N when it died from signal N; 127 when it cannot be found); the measurement is\n"
        "printed either way. Without an NVIDIA driver, duration and CPU energy are still\n"
        "measured. Field reference: docs/measurement.md.\n\n"
        "examples:\n"
        "  ecocompute meter -- python infer.py\n"
        "  ecocompute meter --idle 10 --tokens 25600 --format json -- python infer.py\n"
        "  ecocompute meter --gpu 0,1 --interval 10 --trace run.csv -- ./serve.sh\n"
        "  ecocompute meter -- sh -c 'echo begin load >&$ECOCOMPUTE_MARK_FD; ./load.sh;\n"
        "                             echo end load >&$ECOCOMPUTE_MARK_FD; ./infer.sh'\n");
}

/* Returns -1 to exit 0 (help), EXIT_USAGE on a usage error, 0 to run. */
static int parse_args(int argc, char **argv, meter_args *a)
{
    memset(a, 0, sizeof *a);
    a->interval_ms = 100;
    int i = 1;
    for (; i < argc; i++) {
        const char *f = argv[i];
        if (!strcmp(f, "--")) {
            i++;
            break;
        }
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            usage();
            return -1;
        }
        if (f[0] != '-') break; /* the command starts here */
        static const char *with_value[] = {"--gpu",    "--interval", "--idle",
                                           "--tokens", "--trace",    "--format"};
        int known = 0;
        for (size_t k = 0; k < sizeof with_value / sizeof *with_value; k++)
            known |= !strcmp(f, with_value[k]);
        if (!known) return cli_usage_error("meter", "unknown option '%s'", f);
        if (i + 1 >= argc) return cli_usage_error("meter", "%s needs a value", f);
        const char *v = argv[++i];
        if (!strcmp(f, "--gpu")) {
            if (!*v) return cli_usage_error("meter", "--gpu needs a GPU list");
            a->gpus = v;
        } else if (!strcmp(f, "--trace")) {
            a->trace = v;
        } else if (!strcmp(f, "--interval")) {
            if (cli_parse_double("meter", f, v, 1, 1000, &a->interval_ms)) return EXIT_USAGE;
        } else if (!strcmp(f, "--idle")) {
            if (cli_parse_double("meter", f, v, 0.1, 3600, &a->idle_s)) return EXIT_USAGE;
        } else if (!strcmp(f, "--tokens")) {
            if (cli_parse_long("meter", f, v, 1, 1000000000000L, &a->tokens)) return EXIT_USAGE;
        } else if (cli_parse_format("meter", v, &a->fmt)) {
            return EXIT_USAGE;
        }
    }
    if (i >= argc || !*argv[i]) return cli_usage_error("meter", "no command to run");
    a->cmd = argv + i;
    return 0;
}

static double cpu_time_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

/* Forks and execs the command. Returns the child's pid, or -1 after printing why it cannot run
 * (*exit_code then holds 127 or 126, as a shell would). */
static pid_t spawn(char **cmd, int *exit_code)
{
    int fds[2];
    if (pipe(fds) != 0) {
        *exit_code = cli_fail("meter", "pipe: %s", strerror(errno));
        return -1;
    }
    /* The pipe closes on a successful exec; otherwise the child writes errno into it. */
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
    sigset_t block, old;
    sigemptyset(&block);
    for (size_t i = 0; i < sizeof forwarded / sizeof *forwarded; i++)
        sigaddset(&block, forwarded[i]);
    /* Blocked across fork so a signal arriving now is forwarded once child_pid is known. */
    sigprocmask(SIG_BLOCK, &block, &old);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        for (size_t i = 0; i < sizeof forwarded / sizeof *forwarded; i++)
            sigaction(forwarded[i], &dfl, NULL);
        sigprocmask(SIG_SETMASK, &old, NULL);
        execvp(cmd[0], cmd);
        int err = errno;
        ssize_t w = write(fds[1], &err, sizeof err);
        (void)w; /* the parent then sees a short read and reports a generic failure */
        _exit(127);
    }
    if (pid > 0) child_pid = pid;
    sigprocmask(SIG_SETMASK, &old, NULL);
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        *exit_code = cli_fail("meter", "fork: %s", strerror(errno));
        return -1;
    }
    int err = 0;
    ssize_t n;
    while ((n = read(fds[0], &err, sizeof err)) < 0 && errno == EINTR) {
    }
    close(fds[0]);
    if (n == 0) return pid;
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    child_pid = 0;
    cli_fail("meter", "cannot run '%s': %s", cmd[0],
             n == sizeof err ? strerror(err) : "exec failed");
    *exit_code = err == ENOENT || n != sizeof err ? 127 : 126;
    return -1;
}

static void num(cJSON *o, const char *key, double v)
{
    cJSON_AddItemToObject(o, key, isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull());
}

static void note(cJSON *notes, const char *fmt, ...) EC_PRINTF(2, 3);
static void note(cJSON *notes, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    cJSON_AddItemToArray(notes, cJSON_CreateString(buf));
}

/* The canonical result: one JSON object whose field names carry units (docs/measurement.md). */
/* The child's named windows (marker protocol), keyed by name; a name used again gets "#2"... */
static void windows_json(cJSON *o, const meter_marks *mk)
{
    cJSON *ws = cJSON_AddObjectToObject(o, "windows");
    for (int i = 0; i < meter_marks_count(mk); i++) {
        int unclosed;
        const ec_window_result *w = meter_marks_window(mk, i, &unclosed);
        char key[80];
        snprintf(key, sizeof key, "%s", w->name);
        for (int k = 2; cJSON_GetObjectItemCaseSensitive(ws, key); k++)
            snprintf(key, sizeof key, "%s#%d", w->name, k);
        cJSON *j = cJSON_AddObjectToObject(ws, key);
        num(j, "duration_s", w->duration_s);
        num(j, "gpu_energy_j", w->gpu_energy_j);
        num(j, "gpu_net_energy_j", w->gpu_net_energy_j);
        num(j, "gpu_avg_power_w", w->gpu_avg_power_w);
        num(j, "cpu_energy_j", w->cpu_available ? w->cpu_energy_j : NAN);
        cJSON_AddBoolToObject(j, "unclosed", unclosed);
        cJSON *gpus = cJSON_AddArrayToObject(j, "gpus");
        for (int g = 0; g < w->ngpus; g++) {
            cJSON *x = cJSON_CreateObject();
            cJSON_AddNumberToObject(x, "index", w->gpus[g].index);
            num(x, "energy_j", w->gpus[g].energy_j);
            num(x, "net_energy_j", w->gpus[g].net_energy_j);
            num(x, "avg_power_w", w->gpus[g].avg_power_w);
            cJSON_AddItemToArray(gpus, x);
        }
    }
}

static cJSON *result_json(const meter_args *a, ec_meter *m, const ec_window_result *r,
                          const ec_idle_baseline *idle, int status, double meter_cpu_s)
{
    cJSON *o = cJSON_CreateObject(), *cmd = cJSON_AddArrayToObject(o, "command");
    for (char **p = a->cmd; *p; p++)
        cJSON_AddItemToArray(cmd, cJSON_CreateString(*p));
    cJSON_AddNumberToObject(o, "exit_status",
                            WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    if (WIFSIGNALED(status))
        cJSON_AddNumberToObject(o, "child_signal", WTERMSIG(status));
    else
        cJSON_AddNullToObject(o, "child_signal");
    num(o, "duration_s", r->duration_s);
    num(o, "interval_ms", a->interval_ms);
    cJSON_AddStringToObject(o, "driver_version", ec_meter_driver_version(m));
    cJSON_AddNumberToObject(o, "gpu_count", r->ngpus);
    const char *no_gpu = ec_meter_gpu_unavailable(m);
    if (no_gpu)
        cJSON_AddStringToObject(o, "gpu_unavailable", no_gpu);
    else
        cJSON_AddNullToObject(o, "gpu_unavailable");
    cJSON_AddStringToObject(o, "gpu_energy_method", r->gpu_energy_method);
    num(o, "gpu_energy_j", r->gpu_energy_j);
    num(o, "gpu_energy_counter_j", r->gpu_energy_counter_j);
    num(o, "gpu_energy_integrated_j", r->gpu_energy_integrated_j);
    num(o, "gpu_disagreement_pct", r->gpu_disagreement_pct);
    num(o, "gpu_avg_power_w", r->gpu_avg_power_w);
    num(o, "gpu_peak_power_w", r->gpu_peak_power_w);
    num(o, "idle_duration_s", idle ? idle->duration_s : NAN);
    num(o, "gpu_idle_power_w", r->gpu_idle_power_w);
    num(o, "gpu_net_energy_j", r->gpu_net_energy_j);
    double k = a->tokens ? 1000.0 / (double)a->tokens : NAN;
    if (a->tokens)
        cJSON_AddNumberToObject(o, "tokens", (double)a->tokens);
    else
        cJSON_AddNullToObject(o, "tokens");
    num(o, "gpu_j_per_1k_tokens_gross", r->gpu_energy_j * k);
    num(o, "gpu_j_per_1k_tokens_net", r->gpu_net_energy_j * k);
    cJSON_AddBoolToObject(o, "incomplete", r->incomplete);
    cJSON_AddBoolToObject(o, "counter_reset", r->counter_reset);
    cJSON_AddBoolToObject(o, "throttled", r->throttled);
    char hex[32];
    snprintf(hex, sizeof hex, "0x%llx", r->clock_event_reasons);
    cJSON_AddStringToObject(o, "clock_event_reasons", hex);
    if (r->cpu_available) {
        num(o, "cpu_energy_j", r->cpu_energy_j);
        num(o, "cpu_package_energy_j", r->cpu_package_energy_j);
        num(o, "cpu_dram_energy_j", r->cpu_dram_energy_j);
    } else {
        cJSON_AddStringToObject(o, "cpu_energy_unavailable", r->cpu_unavailable);
    }
    num(o, "meter_cpu_s", meter_cpu_s);
    num(o, "sampler_cpu_s", ec_meter_sampler_cpu_s(m));
    cJSON *gpus = cJSON_AddArrayToObject(o, "gpus");
    for (int i = 0; i < r->ngpus; i++) {
        const ec_gpu_window *g = &r->gpus[i];
        const ec_gpu_info *in = ec_meter_gpu(m, i);
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "index", g->index);
        cJSON_AddStringToObject(j, "name", in->name);
        cJSON_AddStringToObject(j, "uuid", in->uuid);
        cJSON_AddStringToObject(j, "pci_bus_id", in->pci_bus_id);
        cJSON_AddStringToObject(j, "energy_method", g->energy_method);
        num(j, "energy_j", g->energy_j);
        num(j, "energy_counter_j", g->energy_counter_j);
        num(j, "energy_integrated_j", g->energy_integrated_j);
        num(j, "disagreement_pct", g->disagreement_pct);
        num(j, "avg_power_w", g->avg_power_w);
        num(j, "peak_power_w", g->peak_power_w);
        num(j, "idle_power_w", g->idle_power_w);
        num(j, "net_energy_j", g->net_energy_j);
        num(j, "temp_min_c", g->temp_min_c);
        num(j, "temp_max_c", g->temp_max_c);
        num(j, "power_limit_w", in->power_limit_w);
        snprintf(hex, sizeof hex, "0x%llx", g->clock_event_reasons);
        cJSON_AddStringToObject(j, "clock_event_reasons", hex);
        cJSON_AddBoolToObject(j, "throttled", g->throttled);
        cJSON_AddBoolToObject(j, "incomplete", g->incomplete);
        cJSON_AddBoolToObject(j, "counter_reset", g->counter_reset);
        num(j, "measured_s", g->measured_s);
        cJSON_AddNumberToObject(j, "samples", g->samples);
        cJSON_AddItemToArray(gpus, j);
    }
    cJSON *notes = cJSON_AddArrayToObject(o, "notes");
    if (WIFSIGNALED(status))
        note(notes, "the command died from signal %d (%s); its measurement is still valid",
             WTERMSIG(status), strsignal(WTERMSIG(status)));
    for (int i = 0; i < r->ngpus; i++) {
        const ec_gpu_window *g = &r->gpus[i];
        if (g->incomplete)
            note(notes, "GPU %u was lost after %.3f s: its figures cover only that part", g->index,
                 g->measured_s);
        if (g->counter_reset)
            note(notes,
                 "GPU %u energy counter went backwards (driver reload?): energy integrated "
                 "from instant power",
                 g->index);
        if (!strcmp(g->energy_method, "integrated") && !g->counter_reset)
            note(notes, "GPU %u has no energy counter: energy integrated from instant power",
                 g->index);
        if (fabs(g->disagreement_pct) > DISAGREEMENT_WARN_PCT)
            note(notes, "GPU %u: counter and integrated power disagree by %+.1f%%", g->index,
                 g->disagreement_pct);
        if (g->throttled)
            note(notes, "GPU %u clocks were limited (reasons 0x%llx)", g->index,
                 g->clock_event_reasons);
    }
    /* How sure the energy is: each edge of the command's window reads a counter that is stale by
     * up to one update period (docs/measurement.md, "How sure a window is"). */
    double period = r->ngpus ? ec_meter_counter_period_s(m) : NAN;
    double uncert = r->gpu_avg_power_w * period / sqrt(6.0);
    num(o, "counter_period_s", period);
    num(o, "gpu_energy_uncert_j", isfinite(uncert) ? uncert : NAN);
    if (isfinite(uncert) && r->duration_s < EC_MIN_WINDOW_PERIODS * period)
        note(notes,
             "the command's window (%.2f s) spans %.0f updates of the GPU energy counter (every "
             "%.3f s): its energy is uncertain by %.1f %% (1 sd); a window of %.0f s or more "
             "brings that under 1 %% (repeat the work, or mark a longer window)",
             r->duration_s, r->duration_s / period, period, 100.0 * uncert / r->gpu_energy_j,
             EC_MIN_WINDOW_PERIODS * period);
    return o;
}

static double get(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* CSV: one row per run under a fixed header, so runs append to one file (`tail -n +2 >>`).
 * Per-GPU energy and the child's windows are one field each ("0:123.4 1:120.0"), which keeps
 * the columns the same for any number of GPUs or windows; JSON has them in full. */
static void print_csv_row(const cJSON *o)
{
    static const char *fields[] = {
        "exit_status", "duration_s", "gpu_count", "gpu_energy_method", "gpu_energy_j",
        "gpu_energy_counter_j", "gpu_energy_integrated_j", "gpu_disagreement_pct",
        "gpu_avg_power_w", "gpu_peak_power_w", "idle_duration_s", "gpu_idle_power_w",
        "gpu_net_energy_j", "tokens", "gpu_j_per_1k_tokens_gross", "gpu_j_per_1k_tokens_net",
        "throttled", "incomplete", "cpu_energy_j", "cpu_package_energy_j", "cpu_dram_energy_j",
        "meter_cpu_s"};
    const int nf = (int)(sizeof fields / sizeof *fields);
    ec_table *t = ec_table_new();
    ec_table_column(t, "command", "command");
    for (int i = 0; i < nf; i++) ec_table_column(t, fields[i], fields[i]);
    ec_table_column(t, "gpu_energy_j_per_gpu", "gpu_energy_j_per_gpu");
    ec_table_column(t, "windows_gpu_energy_j", "windows_gpu_energy_j");
    ec_table_row(t);
    char buf[1024];
    size_t used = 0;
    buf[0] = 0;
    for (const cJSON *c = cJSON_GetObjectItemCaseSensitive(o, "command")->child;
         c && used < sizeof buf - 1; c = c->next)
        used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%s", used ? " " : "",
                                 c->valuestring);
    ec_table_text(t, 0, "%s", buf);
    for (int i = 0; i < nf; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, fields[i]);
        if (cJSON_IsNumber(v))
            ec_table_number(t, i + 1, "%.10g", v->valuedouble);
        else if (cJSON_IsString(v))
            ec_table_text(t, i + 1, "%s", v->valuestring);
        else if (cJSON_IsBool(v))
            ec_table_text(t, i + 1, "%s", cJSON_IsTrue(v) ? "true" : "false");
    }
    used = 0;
    buf[0] = 0;
    const cJSON *gpus = cJSON_GetObjectItemCaseSensitive(o, "gpus");
    for (const cJSON *g = gpus->child; g && used < sizeof buf - 64; g = g->next)
        used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%.0f:%.6g", used ? " " : "",
                                 get(g, "index"), get(g, "energy_j"));
    ec_table_text(t, nf + 1, "%s", buf);
    used = 0;
    buf[0] = 0;
    const cJSON *ws = cJSON_GetObjectItemCaseSensitive(o, "windows");
    for (const cJSON *w = ws ? ws->child : NULL; w && used < sizeof buf - 128; w = w->next)
        used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%s:%.6g", used ? " " : "",
                                 w->string, get(w, "gpu_energy_j"));
    ec_table_text(t, nf + 2, "%s", buf);
    ec_table_print(t, EC_FORMAT_CSV, stdout);
    ec_table_free(t);
}

/* One human row: the quantity (with its basis) and the number with its unit. */
static void row(ec_table *t, const char *what, const char *fmt, ...) EC_PRINTF(3, 4);
static void row(ec_table *t, const char *what, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    ec_table_row(t);
    ec_table_text(t, 0, "%s", what);
    ec_table_text(t, 1, "%s", buf);
}

/* A number with its unit, or "n/a" when it could not be measured. */
static const char *val(char *buf, size_t len, const char *fmt, double v)
{
    if (!isfinite(v)) return "n/a";
    snprintf(buf, len, fmt, v);
    return buf;
}

/* The child's named windows, one row each, after the whole command's table. */
static void print_windows(const cJSON *o)
{
    const cJSON *ws = cJSON_GetObjectItemCaseSensitive(o, "windows");
    if (!ws || !ws->child) return;
    ec_table *t = ec_table_new();
    ec_table_column(t, "window", "window");
    ec_table_column(t, "duration_s", "duration (s)");
    ec_table_column(t, "gpu_gross_j", "GPU gross (J)");
    ec_table_column(t, "gpu_net_j", "GPU net (J)");
    ec_table_column(t, "gpu_avg_w", "GPU avg (W)");
    ec_table_column(t, "cpu_gross_j", "CPU+DRAM gross (J)");
    ec_table_column(t, "per_gpu", "per GPU gross J");
    for (const cJSON *w = ws->child; w; w = w->next) {
        ec_table_row(t);
        const cJSON *uc = cJSON_GetObjectItemCaseSensitive(w, "unclosed");
        ec_table_text(t, 0, "%s%s", w->string, cJSON_IsTrue(uc) ? " (no end: to exit)" : "");
        static const char *keys[] = {"duration_s", "gpu_energy_j", "gpu_net_energy_j",
                                     "gpu_avg_power_w", "cpu_energy_j"};
        for (int k = 0; k < 5; k++) {
            double v = get(w, keys[k]);
            if (isfinite(v))
                ec_table_number(t, k + 1, k ? "%.1f" : "%.3f", v);
            else
                ec_table_text(t, k + 1, "n/a");
        }
        char per[256] = "";
        size_t used = 0;
        const cJSON *gpus = cJSON_GetObjectItemCaseSensitive(w, "gpus");
        for (const cJSON *g = gpus ? gpus->child : NULL; g && used < sizeof per - 32; g = g->next)
            used += (size_t)snprintf(per + used, sizeof per - used, "%s%.0f:%.1f", used ? " " : "",
                                     get(g, "index"), get(g, "energy_j"));
        ec_table_text(t, 6, "%s", used ? per : "-");
    }
    printf("\n");
    ec_table_print(t, EC_FORMAT_TABLE, stdout);
    ec_table_free(t);
}

static void print_human(const cJSON *o, const ec_window_result *r)
{
    char a[64], b[64];
    ec_table *t = ec_table_new();
    ec_table_column(t, "quantity", "quantity");
    /* a value can be a sentence (why CPU energy is unavailable): it wraps, never shortened */
    ec_table_wrap(t, ec_table_column(t, "value", "value"));
    row(t, "duration", "%.3f s", r->duration_s);
    if (r->ngpus) {
        char what[96];
        snprintf(what, sizeof what, "GPU energy, gross (%s)", r->gpu_energy_method);
        row(t, what, "%s%s", val(a, sizeof a, "%.1f J", r->gpu_energy_j),
            r->incomplete ? " (incomplete)" : "");
        if (strcmp(r->gpu_energy_method, "counter") && isfinite(r->gpu_energy_counter_j))
            row(t, "GPU energy, gross (counter)", "%.1f J", r->gpu_energy_counter_j);
        if (strcmp(r->gpu_energy_method, "integrated") && isfinite(r->gpu_energy_integrated_j))
            row(t, "GPU energy, gross (integrated power)", "%.1f J", r->gpu_energy_integrated_j);
        if (isfinite(r->gpu_disagreement_pct))
            row(t, "integrated vs counter", "%+.2f %%", r->gpu_disagreement_pct);
        row(t, "GPU power, gross: average / peak", "%s / %s",
            val(a, sizeof a, "%.1f W", r->gpu_avg_power_w),
            val(b, sizeof b, "%.1f W", r->gpu_peak_power_w));
        if (isfinite(r->gpu_idle_power_w)) {
            row(t, "GPU idle power", "%.1f W", r->gpu_idle_power_w);
            row(t, "GPU energy, net of idle", "%s",
                val(a, sizeof a, "%.1f J", r->gpu_net_energy_j));
        }
        double gross = get(o, "gpu_j_per_1k_tokens_gross"), net = get(o, "gpu_j_per_1k_tokens_net");
        if (isfinite(gross)) row(t, "GPU energy per 1k tokens, gross", "%.2f J", gross);
        if (isfinite(net)) row(t, "GPU energy per 1k tokens, net", "%.2f J", net);
        for (int i = 0; i < r->ngpus; i++) {
            const ec_gpu_window *g = &r->gpus[i];
            snprintf(what, sizeof what, "GPU %u energy, gross (%s)", g->index, g->energy_method);
            row(t, what, "%s%s", val(a, sizeof a, "%.1f J", g->energy_j),
                g->incomplete ? " (incomplete: GPU lost)" : "");
            snprintf(what, sizeof what, "GPU %u power: average / peak", g->index);
            row(t, what, "%s / %s", val(a, sizeof a, "%.1f W", g->avg_power_w),
                val(b, sizeof b, "%.1f W", g->peak_power_w));
            snprintf(what, sizeof what, "GPU %u temperature: min / max", g->index);
            row(t, what, "%s / %s", val(a, sizeof a, "%.0f °C", g->temp_min_c),
                val(b, sizeof b, "%.0f °C", g->temp_max_c));
        }
        row(t, "GPU throttled (clock event reasons)", "%s (0x%llx)", r->throttled ? "yes" : "no",
            r->clock_event_reasons);
    }
    if (r->cpu_available) {
        row(t, "CPU package energy, gross", "%.1f J", r->cpu_package_energy_j);
        row(t, "DRAM energy, gross", "%.1f J", r->cpu_dram_energy_j);
    } else {
        row(t, "CPU + DRAM energy", "unavailable: %s", r->cpu_unavailable);
    }
    row(t, "meter's own CPU time", "%.3f s (sampler thread %.3f s)", get(o, "meter_cpu_s"),
        get(o, "sampler_cpu_s"));
    row(t, "exit status", "%.0f", get(o, "exit_status"));
    ec_table_print(t, EC_FORMAT_TABLE, stdout);
    ec_table_free(t);
    print_windows(o);
}

static void print_result(const meter_args *a, const cJSON *o, const ec_window_result *r)
{
    const cJSON *notes = cJSON_GetObjectItemCaseSensitive(o, "notes");
    if (a->fmt == EC_FORMAT_JSON) {
        char *s = cJSON_Print(o);
        printf("%s\n", s);
        free(s);
    } else if (a->fmt == EC_FORMAT_CSV) {
        print_csv_row(o);
    } else {
        print_human(o, r);
    }
    fflush(stdout);
    for (const cJSON *n = notes->child; n; n = n->next)
        fprintf(stderr, "ecocompute meter: note: %s\n", n->valuestring);
}

int cmd_meter(int argc, char **argv)
{
    meter_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc) return rc < 0 ? EXIT_OK : rc;
    ec_meter_options o;
    ec_meter_options_default(&o);
    o.gpus = a.gpus;
    o.interval_s = a.interval_ms / 1000.0;
    o.trace_path = a.trace;
    ec_meter_open_status open_status;
    ec_meter *m = ec_meter_open_ex(&o, &open_status);
    if (!m) {
        const char *why = ec_last_error();
        /* A --gpu naming no GPU is a bad flag value (exit 2). */
        int bad_gpu = a.gpus && open_status == EC_METER_OPEN_BAD_SELECTION;
        return bad_gpu ? cli_usage_error("meter", "--gpu: %s", why) : cli_fail("meter", "%s", why);
    }
    if (ec_meter_gpu_count(m) == 0)
        fprintf(stderr, "ecocompute meter: %s; measuring time and CPU energy only\n",
                ec_meter_gpu_unavailable(m));
    install_handlers();
    if (ec_meter_start(m) != 0) {
        rc = cli_fail("meter", "%s", ec_last_error());
        ec_meter_close(m);
        return rc;
    }
    ec_idle_baseline idle, *have_idle = NULL;
    if (a.idle_s > 0) {
        if (ec_meter_idle_baseline(m, a.idle_s, (const volatile int *)&got_signal, &idle) != 0) {
            rc = got_signal ? 128 + got_signal : EXIT_FAIL;
            cli_fail("meter", "%s; the command was not run", ec_last_error());
            ec_meter_close(m);
            return rc;
        }
        have_idle = &idle;
    }
    /* The child can mark its own phases on the trace's time axis (t_s = now - this). */
    char t0[32];
    snprintf(t0, sizeof t0, "%.6f", ec_meter_t0_s(m));
    setenv("ECOCOMPUTE_METER_T0", t0, 1);
    /* Without the pipe the command still runs and is measured as a whole. */
    meter_marks *marks = meter_marks_open(m);
    double cpu0 = cpu_time_s();
    int win = ec_meter_window_begin(m, "run");
    pid_t pid = spawn(a.cmd, &rc);
    if (marks) meter_marks_parent_after_fork(marks);
    int status = 0;
    if (pid > 0) {
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        child_pid = 0;
    }
    if (marks) meter_marks_finish(marks);
    ec_window_result r;
    ec_meter_window_end(m, win, &r);
    double meter_cpu = cpu_time_s() - cpu0;
    cJSON *res = pid > 0 ? result_json(&a, m, &r, have_idle, status, meter_cpu) : NULL;
    if (res) windows_json(res, marks);
    meter_marks_free(marks);
    ec_meter_close(m); /* stops the sampler: the trace is complete before we report */
    if (!res) return rc;
    print_result(&a, res, &r);
    cJSON_Delete(res);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
