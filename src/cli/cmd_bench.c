/* cmd_bench.c — `ecocompute bench`: sweeps models × precisions × kernels × batch sizes ×
 * prompt/generation lengths under the measurement protocol (bench.h), storing every run in the
 * results database as it ends; shows progress on stderr and a per-configuration summary (with
 * the change against fp16) on stdout. Ctrl-C stops after the current run; running the same
 * command again, or `bench --resume`, continues where it stopped. */
#include "cli.h"
#include "engine_args.h"
#include "summary_table.h"

#include "ecocompute/bench.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CMD "bench"

typedef struct {
    ec_bench_spec spec;
    const char *db, *config, *gpus, *trace;
    double interval_ms;
    int resume, have_model;
    ec_format fmt;
} bench_args;

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static void usage(void)
{
    char precs[128];
    printf(
        "usage: ecocompute bench --model M[,M...] [sweep options] [protocol options]\n"
        "       ecocompute bench --resume [--db PATH]\n\n"
        "Measures every combination of the listed models, precisions, kernel families, batch\n"
        "sizes and prompt/generation lengths with the measurement protocol: an idle baseline in\n"
        "the session, thermal stabilization between configurations, warm-up runs, N measured\n"
        "runs of fixed output length with prefill and decode metered separately, and quality\n"
        "gates (CV of decode tok/s and of GPU power) with bounded re-runs; a configuration that\n"
        "still fails is kept and marked 'fail'. Each run is stored in the results database the\n"
        "moment it ends. Ctrl-C stops after the current run; running the same command again (or\n"
        "--resume) continues where it stopped, without repeating or losing a run.\n"
        "Energy is gross (what the board drew) unless labelled net (gross - idle power x time).\n\n"
        "sweep (comma-separated lists):\n"
        "  --model M,...        catalog names (synthetic weights), HF directories, llama2.c files\n"
        "  --precision P,...    %s (default fp16)\n"
        "  --kernels K,...      fused, reference (default fused)\n"
        "  --batch B,...        sequences per run (default 1)\n"
        "  --prompt-len L,...   synthetic prompt tokens per sequence (default %d)\n"
        "  --gen G,...          new tokens per sequence, never stopping early (default %d)\n"
        "  --tp N,...           tensor-parallel ranks, 1..8 (default 1): the model split over N\n"
        "                       devices of --device (cuda: GPUs 0..N-1, cuda:K: K..K+N-1, cpu:\n"
        "                       N CPU ranks); each configuration is charged only its own GPUs'\n"
        "                       energy, and each GPU's is stored\n"
        "  --device D           cpu | cuda[:N] | a list of GPUs cuda:0,1[,...], which fixes --tp\n"
        "                       (default cpu)\n"
        "  --config FILE        the sweep as JSON (keys as in the stored sweep, see\n"
        "                       docs/measurement.md); flags given as well override it\n"
        "  --tag NAME           measure the same sweep again as a separate set (default none)\n"
        "  --shard I/N          measure only part I of N (1-based): the configurations at\n"
        "                       positions k (0-based, sweep order) with k mod N = I-1; give\n"
        "                       each part its own --db and merge them with `ecocompute import`\n\n"
        "protocol:\n"
        "  --warmup N           warm-up runs per configuration, not stored (default %d)\n"
        "  --runs N             measured runs per configuration (default %d)\n"
        "  --idle S             idle baseline in seconds, 0 = none: net figures empty "
        "(default %g)\n"
        "  --stabilize S|auto   wait S seconds between configurations, or until temperature\n"
        "                       and power stop drifting (default %g on a GPU, 0 with --device\n"
        "                       cpu)\n"
        "  --stabilize-max S    upper bound of an auto wait, s (default %g)\n"
        "  --cv-tok PCT         gate: CV of decode tok/s below PCT %% (default %g)\n"
        "  --cv-power PCT       gate: CV of average GPU power below PCT %% (default %g)\n"
        "  --reruns N           re-measure a configuration failing a gate up to N times "
        "(default %d)\n"
        "  --min-window S|auto  repeat each phase inside its measured window until the window\n"
        "                       lasts S seconds (energy and time are then divided by the\n"
        "                       repetitions); auto: %d updates of the GPU energy counter (5 s\n"
        "                       at H100/H200's 0.1 s), none without one; 0: one phase in a\n"
        "                       plain window (edges not aligned to counter updates)\n"
        "  --max-uncert PCT     gate: a run's energy uncertainty (1 sd, from the counter's\n"
        "                       update period and the window) below PCT %% (default %g)\n"
        "  --seed S             synthetic weights and prompts (default 1)\n"
        "  --threads T          CPU threads, 0 = all cores (default 0)\n"
        "  --int8-threshold T   int8-mixed outlier threshold (default %.1f)\n"
        "  --outliers K[:MAG]   synthetic weights: K outlier hidden dims of magnitude MAG\n"
        "                       (default: the catalog's, 6 of 40 from 6 B parameters up)\n\n"
        "measurement and output:\n"
        "  --gpu LIST           GPUs to meter (NVML indices, UUIDs or PCI ids; default the GPUs\n"
        "                       of --device at the largest --tp; all with --device cpu)\n"
        "  --interval MS        meter sampler period, 1..1000 ms (default 100)\n"
        "  --trace FILE         keep the power trace: CSV file, also stored in the database\n"
        "  --db PATH            results database (default %s)\n"
        "  --resume             continue the last sweep stored in the database\n"
        "  --format F           summary as table (default), json or csv\n\n"
        "Progress goes to stderr (one updating line on a terminal); the summary to stdout.\n"
        "Exit status: 0 when every configuration is finished (gate failures are reported, not\n"
        "errors), 1 on a failure or when interrupted, 2 on a usage error.\n\n"
        "examples:\n"
        "  ecocompute bench --model TinyLlama-1.1B --precision fp16,int8-mixed,nf4 --batch 1,8 "
        "--device cuda\n"
        "  ecocompute bench --model tiny --gen 32 --prompt-len 16 --runs 5 --warmup 1 --idle 0 "
        "--stabilize 0\n"
        "  ecocompute bench --model Llama-2-7B --tp 1,2,4 --batch 1,8 --device cuda\n"
        "  ecocompute bench --resume\n"
        "  ecocompute bench --model tiny --batch 1,2,4,8 --shard 2/4 --db shard2.db  # job array\n",
        ec_qformat_names(EC_QFORMAT_CPU | EC_QFORMAT_CUDA, " ", precs, sizeof precs),
        EC_BENCH_DEFAULT_PROMPT_LEN, EC_BENCH_DEFAULT_GEN, EC_BENCH_DEFAULT_WARMUP,
        EC_BENCH_DEFAULT_RUNS, EC_BENCH_DEFAULT_IDLE_S, EC_BENCH_DEFAULT_STABILIZE_S,
        EC_BENCH_DEFAULT_STABILIZE_MAX_S, EC_BENCH_DEFAULT_CV_TOK_PCT,
        EC_BENCH_DEFAULT_CV_POWER_PCT, EC_BENCH_DEFAULT_RERUNS, EC_MIN_WINDOW_PERIODS,
        EC_BENCH_DEFAULT_MAX_UNCERT_PCT, (double)EC_INT8_THRESHOLD,
        ec_store_default_path());
}

/* Splits a comma-separated list, calling item(text, index) for each; returns the count or -1
 * after printing a usage error. */
static int parse_list(const char *flag, const char *text, int (*item)(const char *, int, void *),
                      void *ctx)
{
    char buf[4096];
    if (strlen(text) >= sizeof buf) return cli_usage_error(CMD, "%s: list too long", flag), -1;
    snprintf(buf, sizeof buf, "%s", text);
    int n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (n == EC_BENCH_MAX_LIST)
            return cli_usage_error(CMD, "%s: at most %d values", flag, EC_BENCH_MAX_LIST), -1;
        if (item(tok, n, ctx) != 0) return -1;
        n++;
    }
    if (n == 0) return cli_usage_error(CMD, "%s needs at least one value", flag), -1;
    return n;
}

static int item_model(const char *t, int i, void *ctx)
{
    ec_bench_spec *s = ctx;
    if (strlen(t) >= sizeof s->models[i]) return cli_usage_error(CMD, "--model: name too long");
    snprintf(s->models[i], sizeof s->models[i], "%s", t);
    return 0;
}
static int item_precision(const char *t, int i, void *ctx)
{
    ec_bench_spec *s = ctx;
    if (ec_precision_parse(t, &s->precisions[i]) != 0)
        return cli_usage_error(CMD, "--precision: %s", ec_last_error());
    return 0;
}
static int item_kernels(const char *t, int i, void *ctx)
{
    ec_bench_spec *s = ctx;
    if (ec_kernels_parse(t, &s->kernels[i]) != 0)
        return cli_usage_error(CMD, "--kernels: %s", ec_last_error());
    return 0;
}

typedef struct {
    const char *flag;
    int *v;
    long max;
} int_list;
static int item_int(const char *t, int i, void *ctx)
{
    int_list *l = ctx;
    long v;
    if (cli_parse_long(CMD, l->flag, t, 1, l->max, &v) != 0) return -1;
    l->v[i] = (int)v;
    return 0;
}

/* Reads a whole (small) file into a malloc'd string. */
static char *slurp(const char *path)
{
    FILE *f = ec_fopen_regular(path);
    if (!f) return NULL;
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    char chunk[4096];
    size_t got;
    while (m && (got = fread(chunk, 1, sizeof chunk, f)) > 0)
        fwrite(chunk, 1, got, m);
    int bad = ferror(f);
    fclose(f);
    if (m) fclose(m);
    if (bad || !m) {
        ec_set_error("%s: %s", path, bad ? "read error" : "out of memory");
        free(buf);
        return NULL;
    }
    return buf;
}

static const char *const valued[] = {
    "--model",      "--precision", "--kernels",   "--batch",     "--prompt-len",
    "--gen",        "--device",    "--config",    "--tag",       "--warmup",
    "--tp",         "--runs",      "--idle",      "--stabilize", "--stabilize-max", "--cv-tok",
    "--cv-power",   "--reruns",    "--seed",      "--threads",   "--int8-threshold", "--outliers",
    "--min-window", "--max-uncert",
    "--gpu",        "--interval",  "--trace",     "--format",    "--shard",
    NULL};

/* What --resume may take: where to store and how to meter, never what to measure. */
static const char *const resume_flags[] = {"--db", "--gpu", "--interval", "--trace", "--format",
                                           NULL};

static int listed(const char *const *list, const char *flag)
{
    for (int k = 0; list[k]; k++)
        if (!strcmp(flag, list[k])) return 1;
    return 0;
}

static int is_valued(const char *flag) { return listed(valued, flag); }
static int is_resume_flag(const char *flag) { return listed(resume_flags, flag); }

/* One flag with its value onto the spec/args. Returns 0 or EXIT_USAGE (printed). */
static int apply(bench_args *a, const char *flag, const char *val)
{
    ec_bench_spec *s = &a->spec;
    long v;
    double d;
    int n;
    if (!strcmp(flag, "--model")) {
        if ((n = parse_list(flag, val, item_model, s)) < 0) return EXIT_USAGE;
        s->nmodels = n;
        a->have_model = 1;
    } else if (!strcmp(flag, "--precision")) {
        if ((n = parse_list(flag, val, item_precision, s)) < 0) return EXIT_USAGE;
        s->nprecisions = n;
    } else if (!strcmp(flag, "--kernels")) {
        if ((n = parse_list(flag, val, item_kernels, s)) < 0) return EXIT_USAGE;
        s->nkernels = n;
    } else if (!strcmp(flag, "--batch") || !strcmp(flag, "--prompt-len") ||
               !strcmp(flag, "--gen") || !strcmp(flag, "--tp")) {
        int_list l = {flag, s->batches, 4096};
        int *count = &s->nbatches;
        if (!strcmp(flag, "--tp")) {
            l = (int_list){flag, s->tps, EC_BENCH_MAX_TP};
            count = &s->ntps;
        } else if (!strcmp(flag, "--prompt-len")) {
            l = (int_list){flag, s->prompt_lens, 1 << 20};
            count = &s->nprompt_lens;
        } else if (!strcmp(flag, "--gen")) {
            l = (int_list){flag, s->gens, 1 << 20};
            count = &s->ngens;
        }
        if ((n = parse_list(flag, val, item_int, &l)) < 0) return EXIT_USAGE;
        *count = n;
    } else if (!strcmp(flag, "--device")) {
        if (strlen(val) >= sizeof s->device)
            return cli_usage_error(CMD, "--device: '%s' is too long", val);
        if (cli_device_ranks(CMD, val, 0) < 0) return EXIT_USAGE;
        snprintf(s->device, sizeof s->device, "%s", val);
    } else if (!strcmp(flag, "--tag")) {
        if (strlen(val) >= sizeof s->tag) return cli_usage_error(CMD, "--tag: too long");
        snprintf(s->tag, sizeof s->tag, "%s", val);
    } else if (!strcmp(flag, "--warmup") || !strcmp(flag, "--runs") ||
               !strcmp(flag, "--reruns") || !strcmp(flag, "--threads")) {
        int lo = !strcmp(flag, "--runs");
        if (cli_parse_long(CMD, flag, val, lo, !strcmp(flag, "--threads") ? 1024 : 10000, &v))
            return EXIT_USAGE;
        *(!strcmp(flag, "--warmup")   ? &s->warmup
          : !strcmp(flag, "--runs")   ? &s->runs
          : !strcmp(flag, "--reruns") ? &s->max_reruns
                                      : &s->threads) = (int)v;
    } else if (!strcmp(flag, "--seed")) {
        if (cli_parse_long(CMD, flag, val, 0, 0x7fffffffL, &v) != 0) return EXIT_USAGE;
        s->seed = (uint64_t)v;
    } else if (!strcmp(flag, "--stabilize")) {
        s->stabilize_auto = !strcmp(val, "auto");
        if (!s->stabilize_auto && cli_parse_double(CMD, flag, val, 0, 86400, &s->stabilize_s))
            return EXIT_USAGE;
    } else if (!strcmp(flag, "--idle") || !strcmp(flag, "--stabilize-max") ||
               !strcmp(flag, "--cv-tok") || !strcmp(flag, "--cv-power")) {
        if (cli_parse_double(CMD, flag, val, 0, !strcmp(flag, "--idle") ? 3600 : 86400, &d))
            return EXIT_USAGE;
        *(!strcmp(flag, "--idle")            ? &s->idle_s
          : !strcmp(flag, "--stabilize-max") ? &s->stabilize_max_s
          : !strcmp(flag, "--cv-tok")        ? &s->cv_tok_pct
                                             : &s->cv_power_pct) = d;
    } else if (!strcmp(flag, "--min-window")) {
        if (!strcmp(val, "auto"))
            s->min_window_s = EC_BENCH_MIN_WINDOW_AUTO;
        else if (cli_parse_double(CMD, flag, val, 0, 3600, &s->min_window_s))
            return EXIT_USAGE;
    } else if (!strcmp(flag, "--max-uncert")) {
        if (cli_parse_double(CMD, flag, val, 0, 100, &s->max_uncert_pct)) return EXIT_USAGE;
    } else if (!strcmp(flag, "--int8-threshold")) {
        if (cli_parse_double(CMD, flag, val, 0, 1e6, &d) != 0) return EXIT_USAGE;
        s->int8_threshold = (float)d;
    } else if (!strcmp(flag, "--outliers")) {
        if (cli_parse_outliers(CMD, val, &s->outliers, &s->outlier_mag) != 0) return EXIT_USAGE;
    } else if (!strcmp(flag, "--gpu")) {
        if (!*val) return cli_usage_error(CMD, "--gpu needs a GPU list");
        a->gpus = val;
    } else if (!strcmp(flag, "--interval")) {
        if (cli_parse_double(CMD, flag, val, 1, 1000, &a->interval_ms) != 0) return EXIT_USAGE;
    } else if (!strcmp(flag, "--format")) {
        if (cli_parse_format(CMD, val, &a->fmt) != 0) return EXIT_USAGE;
    } else if (!strcmp(flag, "--shard")) {
        if (ec_bench_spec_parse_shard(val, s) != 0)
            return cli_usage_error(CMD, "--%s", ec_last_error());
    }
    /* --config and --trace were taken in the first pass, --db by cli_db_arg. */
    return 0;
}

/* Two passes: first --db, --config and --resume (they decide the starting spec), then every
 * other flag over it. Returns -1 for --help, 0 to run, EXIT_USAGE/EXIT_FAIL (printed). */
static int parse(int argc, char **argv, bench_args *a)
{
    memset(a, 0, sizeof *a);
    ec_bench_spec_default(&a->spec);
    a->interval_ms = 100;
    a->db = ec_store_default_path();
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            usage();
            return -1;
        }
        if (!strcmp(f, "--resume")) {
            a->resume = 1;
            continue;
        }
        int db = cli_db_arg(CMD, argc, argv, &i, &a->db);
        if (db < 0) return EXIT_USAGE;
        if (db) continue;
        if (!is_valued(f)) return cli_usage_error(CMD, "unknown option '%s'", f);
        if (i + 1 >= argc) return cli_usage_error(CMD, "%s needs a value", f);
        const char *v = argv[++i];
        if (!strcmp(f, "--config")) a->config = v;
        if (!strcmp(f, "--trace")) a->trace = v;
    }
    int stabilize_given = 0; /* by --stabilize or the --config file */
    if (a->config) {
        char *text = slurp(a->config);
        if (!text) return cli_fail(CMD, "--config: %s", ec_last_error());
        int rc = ec_bench_spec_from_config(text, &a->spec);
        cJSON *o = rc == 0 ? cJSON_Parse(text) : NULL;
        stabilize_given = cJSON_HasObjectItem(o, "stabilize_s") ||
                          cJSON_HasObjectItem(o, "stabilize_auto");
        cJSON_Delete(o);
        free(text);
        if (rc != 0) return cli_fail(CMD, "%s: %s", a->config, ec_last_error());
        a->have_model = 1;
    }
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--resume")) continue;
        stabilize_given |= !strcmp(argv[i], "--stabilize");
        int rc = apply(a, argv[i], argv[i + 1]);
        i++;
        if (rc) return rc;
    }
    /* The wait between configurations lets a GPU's temperature and clocks settle after the
     * last one; a sweep on the CPU heats no GPU, so unless asked it moves on at once. */
    if (a->have_model && !stabilize_given && !strncmp(a->spec.device, "cpu", 3)) {
        a->spec.stabilize_s = 0;
        a->spec.stabilize_auto = 0;
    }
    if (!a->have_model && !a->resume)
        return cli_usage_error(CMD, "--model is required (or --config FILE, or --resume)");
    if (ec_bench_spec_check_devices(&a->spec) != 0)
        return cli_usage_error(CMD, "--device/--tp: %s", ec_last_error());
    if (a->resume) {
        /* --resume continues the stored sweep as it was defined; a flag that would redefine it
         * cannot be honoured. */
        for (int i = 1; i < argc; i++) {
            if (!strcmp(argv[i], "--resume")) continue;
            if (!is_resume_flag(argv[i]))
                return cli_usage_error(CMD, "--resume continues the stored sweep and cannot take "
                                            "%s; run the sweep's own command again instead",
                                       argv[i]);
            i++;
        }
    }
    return 0;
}

/* The last stored sweep, with the flags given now applied over it (--resume without --model). */
static int load_resumed(bench_args *a, ec_store *st, int argc, char **argv)
{
    char *json;
    if (ec_store_last_spec(st, &json) != 0) return cli_fail(CMD, "%s", ec_last_error());
    if (!json) return cli_fail(CMD, "nothing to resume: %s holds no sweep", a->db);
    int rc = ec_bench_spec_from_json(json, &a->spec);
    free(json);
    if (rc != 0) return cli_fail(CMD, "the stored sweep cannot be read: %s", ec_last_error());
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--resume")) continue;
        if ((rc = apply(a, argv[i], argv[i + 1])) != 0) return rc;
        i++;
    }
    return 0;
}

/* ---- progress ---- */

typedef struct {
    int tty;
    int line_open; /* an updating line is on screen */
} progress_out;

static void fmt_eta(double s, char *buf, size_t len)
{
    if (!isfinite(s)) {
        snprintf(buf, len, "ETA -");
        return;
    }
    long t = lround(s);
    if (t >= 3600)
        snprintf(buf, len, "ETA %ldh%02ldm", t / 3600, t / 60 % 60);
    else
        snprintf(buf, len, "ETA %ldm%02lds", t / 60, t % 60);
}

static void on_progress(void *ctx, const ec_bench_progress *p)
{
    progress_out *po = ctx;
    const ec_bench_config *c = p->c;
    char what[176], eta[32], tp[24] = "";
    if (c->tp > 1) snprintf(tp, sizeof tp, " tp %d", c->tp);
    snprintf(what, sizeof what, "config %d/%d %s %s %s%s batch %d prompt %d gen %d", p->config,
             p->configs, c->model, ec_precision_name(c->precision), ec_kernels_name(c->kernels),
             tp, c->batch, c->prompt_len, c->gen);
    fmt_eta(p->eta_s, eta, sizeof eta);
    char line[512];
    int permanent = 0;
    switch (p->stage) {
    case EC_BENCH_STAGE_LOAD: snprintf(line, sizeof line, "%s: loading", what); break;
    case EC_BENCH_STAGE_IDLE: snprintf(line, sizeof line, "idle baseline..."); break;
    case EC_BENCH_STAGE_STABILIZE:
        if (p->runs == 0) {
            snprintf(line, sizeof line, "%s: stabilizing | %s", what, eta);
        } else {
            snprintf(line, sizeof line, "%s: stabilization %s", what, p->note);
            permanent = !po->tty;
        }
        break;
    case EC_BENCH_STAGE_WARMUP:
        snprintf(line, sizeof line, "%s: warm-up %d/%d | %s", what, p->run, p->runs, eta);
        break;
    case EC_BENCH_STAGE_RUN: {
        const ec_run_record *r = p->record;
        char energy[64] = "";
        if (isfinite(r->j_per_1k_gross))
            snprintf(energy, sizeof energy, ", %.1f J/1k tok gross", r->j_per_1k_gross);
        snprintf(line, sizeof line, "%s: run %d/%d%s: %.1f tok/s%s | %s", what, p->run, p->runs,
                 p->attempt ? " (re-run)" : "", r->tok_s, energy, eta);
        permanent = !po->tty;
        break;
    }
    case EC_BENCH_STAGE_GATE:
        snprintf(line, sizeof line, "%s: %s", what, p->note);
        permanent = 1;
        break;
    case EC_BENCH_STAGE_DONE:
        snprintf(line, sizeof line, "%s: already measured (gate %s)", what, p->note);
        permanent = !po->tty;
        break;
    case EC_BENCH_STAGE_HELD:
        snprintf(line, sizeof line, "%s: being measured by another process (%s); left to it", what,
                 p->note);
        permanent = 1;
        break;
    }
    if (po->tty) {
        fprintf(stderr, "\r\033[K%s", line);
        po->line_open = 1;
        if (permanent) {
            fputc('\n', stderr);
            po->line_open = 0;
        }
    } else if (permanent || p->stage == EC_BENCH_STAGE_LOAD || p->stage == EC_BENCH_STAGE_IDLE) {
        fprintf(stderr, "%s\n", line);
    }
    fflush(stderr);
}

/* ---- the command ---- */

/* The command line, shell-quoted where needed (provenance). */
static char *command_line(int argc, char **argv)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m) return NULL;
    fputs("ecocompute", m);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int plain = *a && strspn(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                    "0123456789-_=.,:/+@%") == strlen(a);
        if (plain) {
            fprintf(m, " %s", a);
            continue;
        }
        fputs(" '", m);
        for (; *a; a++)
            *a == '\'' ? fputs("'\\''", m) : fputc(*a, m);
        fputc('\'', m);
    }
    fclose(m);
    return buf;
}

static void install_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    /* A second Ctrl-C kills at once (the run in flight is then simply not stored). */
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* The GPUs a sweep runs on (those of its largest world size) as a meter selection, or NULL
 * (every GPU) for the CPU. */
static const char *sweep_gpus(const ec_bench_spec *s, char *out, size_t len)
{
    int most = 1;
    for (int i = 0; i < s->ntps; i++)
        if (s->tps[i] > most) most = s->tps[i];
    char uuids[EC_BENCH_MAX_TP][96];
    int n = ec_bench_device_gpus(s->device, most, uuids, EC_BENCH_MAX_TP);
    if (n <= 0) return NULL;
    out[0] = '\0';
    for (int i = 0; i < n; i++)
        snprintf(out + strlen(out), len - strlen(out), "%s%s", i ? "," : "", uuids[i]);
    return out;
}

static int print_summary(const bench_args *a, ec_meter *m, ec_store *st)
{
    ec_run_record *r;
    size_t n;
    ec_bench_summary *s;
    size_t ns;
    if (ec_bench_load_sweep(&a->spec, m, st, &r, &n) != 0) return -1;
    int rc = ec_bench_summarize(r, n, &s, &ns);
    free(r);
    if (rc != 0) return -1;
    cli_print_summary(s, ns, a->fmt, stdout);
    fflush(stdout);
    free(s);
    return 0;
}

int cmd_bench(int argc, char **argv)
{
    bench_args a;
    int rc = parse(argc, argv, &a);
    if (rc) return rc < 0 ? EXIT_OK : rc;
    ec_store *st;
    if (ec_store_open(&st, a.db, 0) != 0) return cli_fail(CMD, "%s", ec_last_error());
    if (!a.have_model && (rc = load_resumed(&a, st, argc, argv)) != 0) {
        ec_store_close(st);
        return rc;
    }
    if ((rc = cli_probe_backend(CMD, a.spec.device, a.spec.tps[0])) != 0) {
        ec_store_close(st);
        return rc;
    }
    ec_meter_options mo;
    ec_meter_options_default(&mo);
    char selection[EC_BENCH_MAX_TP * 97];
    mo.gpus = a.gpus ? a.gpus : sweep_gpus(&a.spec, selection, sizeof selection);
    mo.interval_s = a.interval_ms / 1000.0;
    mo.trace_path = a.trace;
    ec_meter_open_status open_status;
    ec_meter *m = ec_meter_open_ex(&mo, &open_status);
    if (!m) {
        const char *why = ec_last_error();
        int bad_gpu = a.gpus && open_status == EC_METER_OPEN_BAD_SELECTION;
        rc = bad_gpu ? cli_usage_error(CMD, "--gpu: %s", why) : cli_fail(CMD, "%s", why);
        ec_store_close(st);
        return rc;
    }
    if (ec_meter_gpu_count(m) == 0)
        fprintf(stderr, "ecocompute bench: %s; measuring time and CPU energy only\n",
                ec_meter_gpu_unavailable(m));
    char *cmdline = command_line(argc, argv);
    install_handlers();
    progress_out po = {isatty(2), 0};
    ec_bench_env env = {m,   st, NULL, on_progress, &po, (const volatile int *)&stop_requested,
                        cmdline, a.trace};
    ec_bench_outcome out;
    memset(&out, 0, sizeof out);
    rc = ec_meter_start(m) != 0 ? -1 : ec_bench_run(&a.spec, &env, &out);
    if (po.line_open) fputc('\n', stderr);
    if (rc != 0) cli_fail(CMD, "%s", ec_last_error());
    if (print_summary(&a, m, st) != 0) rc = cli_fail(CMD, "summary: %s", ec_last_error());
    ec_meter_close(m); /* flushes the trace */
    if (a.trace && out.session_id[0] && ec_store_import_trace(st, out.session_id, a.trace) != 0)
        rc = cli_fail(CMD, "storing the trace: %s", ec_last_error());
    if (rc == 0 && out.interrupted) {
        fprintf(stderr,
                "ecocompute bench: interrupted: %d of %d configurations finished, every "
                "completed run is stored in %s; to continue, run the same command again or "
                "'ecocompute bench --resume --db %s'\n",
                out.finished, out.configs, a.db, a.db);
        rc = EXIT_FAIL;
    } else if (rc == 0) {
        fprintf(stderr,
                "ecocompute bench: %d configurations finished (%d measured before), %d runs "
                "stored now in %s%s\n",
                out.finished, out.already_done, out.measured_runs, a.db,
                out.gate_failures ? "; some failed a quality gate (Gate = fail)" : "");
        if (out.held_elsewhere)
            fprintf(stderr,
                    "ecocompute bench: %d configurations were being measured by another process "
                    "on the same database and were left to it\n",
                    out.held_elsewhere);
    }
    free(cmdline);
    ec_store_close(st);
    return rc ? EXIT_FAIL : EXIT_OK;
}
