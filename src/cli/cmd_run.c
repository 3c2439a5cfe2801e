/* cmd_run.c — `ecocompute run`: greedy generation with the engine, reporting prefill and decode
 * throughput and the first generated token ids; with a tokenizer (--tokenizer, or the model
 * directory's own for --prompt), text in and text out, optionally through the model's chat
 * template (--chat). */
#include "cli.h"
#include "engine_args.h"

#include "ecocompute/bench.h"
#include "ecocompute/calib.h"
#include "ecocompute/meter.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CMD "run"
enum { DEFAULT_PROMPT_LEN = 64, DEFAULT_GEN = 256, SHOWN_IDS = 16 };

typedef struct {
    cli_engine_args a;
    ec_precision precision;
    int gen;
    const char *prompt; /* --prompt TEXT (needs a tokenizer) */
    int chat;           /* --chat: the prompt goes through the model's chat template */
    const char *system; /* --system TEXT: the chat's system prompt (default: the template's) */
    int energy;         /* --energy: meter the prefill and decode phases */
    double idle_s;      /* --idle S: idle baseline before generating (0 = none) */
    int verbose;        /* --verbose: int8-mixed outlier columns per layer on stderr */
    int ranks;          /* devices the model runs on (--device with --tp) */
} run_args;

static void usage(void)
{
    char precs[128];
    printf(
        "usage: ecocompute run --model NAME|DIR|FILE.bin [options]\n\n"
        "Generates greedily with the ecocompute engine: prefill a batch of prompts, then decode\n"
        "exactly --gen new tokens per sequence (never stopping early). Prints prefill and decode\n"
        "throughput and the first generated token ids of sequence 0.\n\n"
        "options:\n"
        "  --model M            catalog name (synthetic weights), Hugging Face dir, llama2.c .bin\n"
        "  --precision P        %s (default fp16)\n"
        CLI_DEVICE_HELP
        "  --kernels K          CUDA kernel family: fused (default; our fused kernels, CUDA graph)\n"
        "                       or reference (the libraries' dataflow: one cuBLAS call per linear,\n"
        "                       LLM.int8()'s separate kernels and host syncs, no graph); the CPU\n"
        "                       backend has one implementation and ignores it\n"
        "  --batch B            sequences (default 1)\n"
        "  --prompt-len L       synthetic prompt tokens per sequence (default %d)\n"
        "  --gen G              new tokens per sequence, the first from the prefill (default %d)\n"
        "  --seed S             synthetic weights and prompt tokens (default 1)\n"
        "  --threads T          CPU threads, 0 = all cores (default 0)\n"
        "  --tokenizer TOK      tokenizer.json, tokenizer.model, llama2.c .bin or a directory:\n"
        "                       the prompt is --prompt TEXT with the tokenizer's BOS (or BOS\n"
        "                       alone) and the text is printed on stdout, timings on stderr;\n"
        "                       the text ends at the first BOS or EOS (the tokenizer's, and a\n"
        "                       model directory's generation_config.json eos_token_id)\n"
        "  --prompt TEXT        prompt text (a model directory's own tokenizer is used when\n"
        "                       --tokenizer is not given)\n"
        "  --chat               wrap --prompt in the model's chat template (llama-2, llama-3,\n"
        "                       mistral, chatml/Qwen, phi-3; from tokenizer_config.json or\n"
        "                       config.json) and print only the answer, up to its end-of-turn\n"
        "  --system TEXT        with --chat: the system prompt (default: the template's own)\n"
        "  --outliers K[:MAG]   synthetic weights: K outlier hidden dims of magnitude MAG\n"
        "  --int8-threshold T   int8-mixed outlier threshold (default %.1f)\n"
        "  --quantize-head      store the output head in P too (default: 16-bit)\n"
        "  --energy             measure the GPU's energy of each phase with the meter (cuda\n"
        "                       devices): gross and net J, J per 1k decode tokens, W, and %%\n"
        "                       of the bandwidth roofline when `calibrate` has run on this GPU\n"
        "  --idle S             with --energy: idle baseline first, seconds (default 5; 0 =\n"
        "                       none, then no net figures)\n"
        "  --format F           table | json | csv (with --tokenizer: adds a text column)\n"
        "  --verbose            int8-mixed: print the average number of outlier activation\n"
        "                       columns per layer and linear input (stderr)\n\n"
        "examples:\n"
        "  ecocompute run --model Llama-2-7B --device cuda --prompt-len 512 --energy\n"
        "  ecocompute run --model tiny --precision int8 --batch 4 --gen 32\n"
        "  ecocompute run --model Llama-2-7B --device cuda:0,1 --energy   # tensor parallel, 2 GPUs\n"
        "  ecocompute run --model tiny --precision f32 --device cpu --tp 2\n"
        "  ecocompute run --model small --precision int8-mixed --outliers 4:40 --device cuda \\\n"
        "      --kernels reference --verbose\n"
        "  ecocompute run --model stories260K.bin --tokenizer tok512.bin --precision f32 "
        "--gen 256\n"
        "  ecocompute run --model ./Qwen2.5-0.5B-Instruct --prompt \"Why is the sky blue?\" --chat \\\n"
        "      --device cuda --gen 128\n"
        "  ecocompute run --model small --precision nf4 --format json\n",
        ec_qformat_names(EC_QFORMAT_CPU | EC_QFORMAT_CUDA, " ", precs, sizeof precs),
        DEFAULT_PROMPT_LEN, DEFAULT_GEN, (double)EC_INT8_THRESHOLD);
}

static int parse(int argc, char **argv, run_args *r)
{
    cli_engine_args_default(&r->a);
    r->precision = EC_PREC_FP16;
    r->gen = DEFAULT_GEN;
    r->prompt = NULL;
    r->chat = 0;
    r->system = NULL;
    r->energy = 0;
    r->idle_s = 5.0;
    r->verbose = 0;
    for (int i = 1; i < argc; i++) {
        int shared = cli_engine_arg(CMD, argc, argv, &i, &r->a);
        if (shared < 0) return EXIT_USAGE;
        if (shared) continue;
        const char *flag = argv[i];
        if (!strcmp(flag, "--energy")) {
            r->energy = 1;
            continue;
        }
        if (!strcmp(flag, "--verbose")) {
            r->verbose = 1;
            continue;
        }
        if (!strcmp(flag, "--chat")) {
            r->chat = 1;
            continue;
        }
        if (strcmp(flag, "--precision") && strcmp(flag, "--gen") && strcmp(flag, "--prompt") &&
            strcmp(flag, "--idle") && strcmp(flag, "--system"))
            return cli_usage_error(CMD, "unknown option '%s'", flag);
        const char *val = cli_flag_value(CMD, argc, argv, &i);
        long v;
        if (!val) return EXIT_USAGE;
        if (!strcmp(flag, "--prompt")) {
            r->prompt = val;
        } else if (!strcmp(flag, "--system")) {
            r->system = val;
        } else if (!strcmp(flag, "--idle")) {
            if (cli_parse_double(CMD, flag, val, 0, 3600, &r->idle_s) != 0) return EXIT_USAGE;
        } else if (!strcmp(flag, "--gen")) {
            if (cli_parse_long(CMD, flag, val, 1, 1 << 20, &v) != 0) return EXIT_USAGE;
            r->gen = (int)v;
        } else if (ec_precision_parse(val, &r->precision) != 0) {
            return cli_usage_error(CMD, "--precision: %s", ec_last_error());
        }
    }
    struct stat st;
    int model_dir = stat(r->a.model ? r->a.model : "", &st) == 0 && S_ISDIR(st.st_mode);
    if (r->prompt && !r->a.tokenizer && !model_dir)
        return cli_usage_error(CMD, "--prompt needs --tokenizer (or a model directory with its own)");
    if (r->chat && (!r->prompt || !model_dir))
        return cli_usage_error(CMD, "--chat needs --prompt and a model directory (its chat template)");
    if (r->system && !r->chat) return cli_usage_error(CMD, "--system goes with --chat");
    r->a.text_needed = r->prompt != NULL;
    if (r->energy && !strcmp(r->a.device, "cpu"))
        return cli_usage_error(CMD, "--energy meters the GPU a run uses: give --device cuda[:N]");
    if ((r->a.tokenizer || r->prompt) && r->a.prompt_len)
        return cli_usage_error(CMD, "--prompt-len is for synthetic prompts; with a tokenizer the "
                                    "prompt is BOS + --prompt");
    int rc = cli_engine_args_check(CMD, &r->a), idx[EC_BENCH_MAX_TP];
    if (rc == 0) r->ranks = ec_device_list(r->a.device, r->a.tp, idx, EC_BENCH_MAX_TP);
    return rc;
}

/* Whether id ends the text: BOS, EOS, the chat's end-of-turn, or an end-of-sequence id of the
 * model (generation_config.json: Llama-3.1-Instruct lists <|end_of_text|>, <|eom_id|> and
 * <|eot_id|>). */
static int ends_text(const ec_model *m, const ec_tokenizer *tok, int stop_id, int id)
{
    const int *eos;
    int n = ec_model_eos_ids(m, &eos);
    for (int i = 0; i < n; i++)
        if (id == eos[i]) return 1;
    return id == ec_tokenizer_bos(tok) || id == ec_tokenizer_eos(tok) || id == stop_id;
}

/* The text of a run: the prompt and what was generated up to the first token that ends it
 * (llama2.c's run stops at BOS or EOS, transformers' generate at generation_config.json's EOS);
 * with --chat only the answer. Special tokens are left out. A new string. */
static char *decode_text(const run_args *r, const ec_model *m, const ec_tokenizer *tok,
                         int stop_id, const int *seq, int prompt_len, int n)
{
    int end = prompt_len;
    while (end < n && !ends_text(m, tok, stop_id, seq[end]))
        end++;
    int from = r->chat ? prompt_len : 0;
    return ec_tokenizer_decode(tok, seq + from, end - from, 1);
}

/* The meter of an --energy run: a window around each phase, opened by the engine's hooks. */
typedef struct {
    ec_meter *m;
    int window;                /* id of the open window, -1 when none */
    ec_window_result phase[2]; /* [EC_PHASE_PREFILL], [EC_PHASE_DECODE] */
    int failed;
    double min_window_s; /* each phase repeated until its window lasts this long, s */
    int have_calib;
    ec_calibration calib; /* this GPU's saved calibration, for % of roofline */
} run_meter;

static void on_phase(void *ctx, ec_phase p, int begin)
{
    run_meter *rm = ctx;
    if (begin) {
        rm->window =
            ec_meter_window_begin_aligned(rm->m, p == EC_PHASE_PREFILL ? "prefill" : "decode");
        rm->failed |= rm->window < 0;
        return;
    }
    if (rm->window >= 0 && ec_meter_window_end(rm->m, rm->window, &rm->phase[p]) != 0)
        rm->failed = 1;
    rm->window = -1;
}

/* Opens the meter on the run's GPUs (all ranks' under tensor parallelism), measures the idle
 * baseline (with the backend's context alive, as during the run) and loads the first GPU's
 * calibration when there is one. */
static int open_run_meter(const run_args *r, run_meter *rm)
{
    memset(rm, 0, sizeof *rm);
    rm->window = -1;
    char uuids[EC_BENCH_MAX_TP][96], selection[EC_BENCH_MAX_TP * 97] = "", path[1024];
    int n = ec_bench_device_gpus(r->a.device, r->a.tp, uuids, EC_BENCH_MAX_TP);
    if (n < 0) return cli_fail(CMD, "--energy: %s", ec_last_error());
    for (int i = 0; i < n; i++)
        snprintf(selection + strlen(selection), sizeof selection - strlen(selection), "%s%s",
                 i ? "," : "", uuids[i]);
    const char *uuid = uuids[0];
    ec_meter_options o;
    ec_meter_options_default(&o);
    o.gpus = selection;
    rm->m = ec_meter_open(&o);
    if (!rm->m) return cli_fail(CMD, "--energy: %s", ec_last_error());
    if (ec_meter_gpu_count(rm->m) == 0)
        return cli_fail(CMD, "--energy: %s", ec_meter_gpu_unavailable(rm->m));
    if (ec_meter_start(rm->m) != 0) return cli_fail(CMD, "--energy: %s", ec_last_error());
    ec_idle_baseline idle;
    if (r->idle_s > 0) {
        fprintf(stderr, "run: measuring idle power for %.0f s\n", r->idle_s);
        if (ec_meter_idle_baseline(rm->m, r->idle_s, NULL, &idle) != 0)
            return cli_fail(CMD, "--energy: idle baseline: %s", ec_last_error());
    }
    /* Each phase lasts 50 updates of the energy counter (5 s on H100/H200), as in bench. */
    double period = ec_meter_counter_period_s(rm->m);
    rm->min_window_s = isfinite(period) ? EC_MIN_WINDOW_PERIODS * period : 0;
    rm->have_calib = ec_calibration_path(uuid, path, sizeof path) == 0 &&
                     ec_calibration_load(path, &rm->calib) == 0;
    return 0;
}

/* The bytes a decode step cannot avoid reading: the weights and the KV cache at the run's
 * mean context (ec_decode_step_bytes). */
static double step_bytes(const run_args *r, const ec_model_config *c, int prompt_len)
{
    return ec_decode_step_bytes(c, r->precision, r->a.batch, prompt_len + r->gen / 2.0);
}

/* Share of the calibrated read-bandwidth roofline the decode reached: the step's unavoidable
 * bytes over the calibrated bandwidth, against the measured time per step. Tensor-parallel
 * ranks read their shares at once, each at the calibrated rate of the first GPU (the head and
 * norms every rank holds whole are counted once). */
static double roofline_pct(const run_args *r, const run_meter *rm, const ec_model_config *c,
                           const ec_generate_stats *st, int prompt_len)
{
    if (!rm->have_calib || st->decode_tokens <= 0) return NAN;
    double steps = (double)(r->gen - 1);
    return 100.0 * (step_bytes(r, c, prompt_len) / (rm->calib.read.rate * r->ranks)) /
           (st->decode_s / steps);
}

typedef struct {
    const char *key, *label, *fmt;
    double v;
    int priority; /* ec_table_priority: 0 kept in narrow tables, higher left out sooner */
} energy_cell;
enum { ENERGY_CELLS = 13 };

/* The --energy figures of the run, one table cell each (the energy method is added as text). */
static void energy_cells(const run_args *r, const run_meter *rm, const ec_model_config *c,
                         const ec_generate_stats *st, int prompt_len, energy_cell *out)
{
    const ec_window_result *pre = &rm->phase[EC_PHASE_PREFILL], *dec = &rm->phase[EC_PHASE_DECODE];
    /* Each window held prefill_reps / decode_reps phases: the figures are of one. */
    double pk = 1.0 / st->prefill_reps, dk = 1.0 / st->decode_reps;
    double k = 1000.0 / (double)st->decode_tokens;
    double per_request = (pre->gpu_energy_j * pk + dec->gpu_energy_j * dk) / r->a.batch;
    energy_cell cells[ENERGY_CELLS] = {
        {"idle_power_w", "Idle (W)", "%.1f", dec->gpu_idle_power_w, 8},
        {"prefill_energy_j_gross", "Prefill (J gross)", "%.2f", pre->gpu_energy_j * pk, 6},
        {"decode_energy_j_gross", "Decode (J gross)", "%.2f", dec->gpu_energy_j * dk, 7},
        {"decode_energy_j_net", "Decode (J net)", "%.2f", dec->gpu_net_energy_j * dk, 7},
        {"decode_energy_uncert_pct", "Decode energy ± (% 1 sd)", "%.2f",
         100.0 * dec->gpu_energy_uncert_j / dec->gpu_energy_j, 5},
        {"j_per_request_gross", "J/request gross", "%.2f", per_request, 4},
        {"decode_repeats", "Decode repeats", "%.0f", (double)st->decode_reps, 9},
        {"decode_j_per_1k_tok_gross", "Decode (J/1k tok gross)", "%.1f",
         dec->gpu_energy_j * dk * k, 0},
        {"decode_j_per_1k_tok_net", "Decode (J/1k tok net)", "%.1f",
         dec->gpu_net_energy_j * dk * k, 2},
        {"decode_avg_power_w", "Decode avg (W)", "%.1f", dec->gpu_avg_power_w, 3},
        {"decode_peak_power_w", "Decode peak (W)", "%.1f", dec->gpu_peak_power_w, 8},
        {"counter_vs_integrated_pct", "Counter vs integrated (%)", "%+.2f",
         dec->gpu_disagreement_pct, 9},
        {"roofline_pct", "Roofline (% of calibrated read BW)", "%.1f",
         roofline_pct(r, rm, c, st, prompt_len), 6},
    };
    memcpy(out, cells, sizeof cells);
}

static double rate(long tokens, double seconds)
{
    return tokens > 0 ? tokens / seconds : NAN;
}

static void print_table(const run_args *r, const run_meter *rm, const ec_model_config *c,
                        const ec_generate_stats *st, double load_s, int prompt_len,
                        const int *out, const char *text)
{
    ec_table *t = ec_table_new();
    int c_model = ec_table_column(t, "model", "Model");
    int c_prec = ec_table_column(t, "precision", "Precision");
    int c_dev = ec_table_column(t, "device", "Device");
    int c_tp = ec_table_column(t, "tp", "TP");
    int c_kern = ec_table_column(t, "kernels", "Kernels");
    int c_batch = ec_table_column(t, "batch", "Batch (seq)");
    int c_prompt = ec_table_column(t, "prompt_tokens", "Prompt (tok)");
    int c_gen = ec_table_column(t, "new_tokens", "New (tok)");
    int c_load = ec_table_column(t, "load_s", "Load (s)");
    int c_pre_s = ec_table_column(t, "prefill_s", "Prefill (s)");
    int c_pre_r = ec_table_column(t, "prefill_tok_per_s", "Prefill (tok/s)");
    int c_dec_s = ec_table_column(t, "decode_s", "Decode (s)");
    int c_dec_r = ec_table_column(t, "decode_tok_per_s", "Decode (tok/s)");
    int c_dec_ms = ec_table_column(t, "decode_ms_per_step", "Decode (ms/step)");
    int c_step_mb = ec_table_column(t, "decode_step_mb", "Step bytes (MB)");
    int c_ids = ec_table_column(t, "first_token_ids", "First tokens (ids)");
    int c_text = text ? ec_table_column(t, "text", "Text") : -1;
    /* Narrow tables keep the configuration, the rates and the energy per token; timings of
     * each phase, the first ids, and the meter's own checks are left out first. */
    ec_table_priority(t, c_ids, 9);
    ec_table_priority(t, c_load, 8);
    ec_table_priority(t, c_pre_s, 7);
    ec_table_priority(t, c_dec_s, 7);
    ec_table_priority(t, c_dec_ms, 6);
    ec_table_priority(t, c_step_mb, 9);
    ec_table_priority(t, c_kern, 5);
    ec_table_priority(t, c_dev, 4);
    ec_table_priority(t, c_tp, 4);
    ec_table_priority(t, c_prompt, 3);
    if (c_text >= 0) ec_table_wrap(t, c_text);
    energy_cell energy[ENERGY_CELLS];
    int c_energy[ENERGY_CELLS], c_method = -1, c_per_gpu = -1;
    if (rm) {
        energy_cells(r, rm, c, st, prompt_len, energy);
        for (int i = 0; i < ENERGY_CELLS; i++) {
            c_energy[i] = ec_table_column(t, energy[i].key, energy[i].label);
            ec_table_priority(t, c_energy[i], energy[i].priority);
        }
        c_method = ec_table_column(t, "energy_method", "Energy method");
        ec_table_priority(t, c_method, 9);
        /* Tensor parallelism: what each GPU drew (their sum is the decode energy). */
        if (rm->phase[EC_PHASE_DECODE].ngpus > 1) {
            c_per_gpu = ec_table_column(t, "decode_energy_j_per_gpu", "Decode (J gross per GPU)");
            ec_table_priority(t, c_per_gpu, 5);
        }
    }
    ec_table_row(t);
    ec_table_text(t, c_model, "%s", r->a.model);
    ec_table_text(t, c_prec, "%s", ec_precision_name(r->precision));
    ec_table_text(t, c_dev, "%s", r->a.device);
    ec_table_number(t, c_tp, "%.0f", r->ranks);
    ec_table_text(t, c_kern, "%s", ec_kernels_name(r->a.kernels));
    ec_table_number(t, c_batch, "%.0f", r->a.batch);
    ec_table_number(t, c_prompt, "%.0f", prompt_len);
    ec_table_number(t, c_gen, "%.0f", r->gen);
    ec_table_number(t, c_load, "%.3f", load_s);
    ec_table_number(t, c_pre_s, "%.4f", st->prefill_s);
    ec_table_number(t, c_pre_r, "%.1f", rate(st->prefill_tokens, st->prefill_s));
    ec_table_number(t, c_dec_s, "%.4f", st->decode_s);
    ec_table_number(t, c_dec_r, "%.1f", rate(st->decode_tokens, st->decode_s));
    ec_table_number(t, c_dec_ms, "%.3f", r->gen > 1 ? 1e3 * st->decode_s / (r->gen - 1) : NAN);
    ec_table_number(t, c_step_mb, "%.2f", step_bytes(r, c, prompt_len) / 1e6);
    char ids[SHOWN_IDS * 12] = "";
    for (int i = 0; i < r->gen && i < SHOWN_IDS; i++)
        snprintf(ids + strlen(ids), sizeof ids - strlen(ids), i ? " %d" : "%d", out[i]);
    ec_table_text(t, c_ids, "%s", ids);
    if (text) ec_table_text(t, c_text, "%s", text);
    if (rm) {
        for (int i = 0; i < ENERGY_CELLS; i++)
            ec_table_number(t, c_energy[i], energy[i].fmt, energy[i].v);
        ec_table_text(t, c_method, "%s", rm->phase[EC_PHASE_DECODE].gpu_energy_method);
        if (c_per_gpu >= 0) {
            const ec_window_result *dec = &rm->phase[EC_PHASE_DECODE];
            char list[256] = "";
            for (int i = 0; i < dec->ngpus; i++)
                snprintf(list + strlen(list), sizeof list - strlen(list), i ? " %.2f" : "%.2f",
                         dec->gpus[i].energy_j / st->decode_reps);
            ec_table_text(t, c_per_gpu, "%s", list);
        }
    }
    ec_table_print(t, r->a.format, stdout);
    ec_table_free(t);
}

/* The prompt's ids: the text with the tokenizer's BOS, or the chat template's rendering. */
static int encode_prompt(const run_args *r, const ec_tokenizer *tok, const ec_chat_template *tpl,
                         int **ids)
{
    const char *text = r->prompt ? r->prompt : "";
    if (!r->chat) return ec_tokenizer_encode(tok, text, 1, ids);
    char *rendered = ec_chat_render(tpl, tok, r->system, text);
    if (!rendered) return ec_set_error("out of memory");
    int n = ec_tokenizer_encode(tok, rendered, 0, ids);
    free(rendered);
    return n;
}

/* Builds the prompts [batch][*prompt_len]: the encoded text with a tokenizer, else synthetic. */
static int build_prompts(const run_args *r, const ec_model_config *c, const ec_tokenizer *tok,
                         const ec_chat_template *tpl, int **prompts, int *prompt_len)
{
    int *one = NULL;
    *prompt_len = tok ? encode_prompt(r, tok, tpl, &one)
                      : (r->a.prompt_len ? r->a.prompt_len : DEFAULT_PROMPT_LEN);
    if (*prompt_len == 0)
        ec_set_error("the prompt has no tokens (this tokenizer adds no BOS): give --prompt TEXT");
    *prompts = *prompt_len > 0 ? malloc((size_t)r->a.batch * (size_t)*prompt_len * sizeof **prompts)
                               : NULL;
    if (*prompt_len < 1 || !*prompts) {
        free(one);
        free(*prompts);
        return cli_fail(CMD, "cannot build the prompt: %s", ec_last_error());
    }
    if (tok)
        for (int b = 0; b < r->a.batch; b++)
            memcpy(*prompts + (size_t)b * *prompt_len, one, (size_t)*prompt_len * sizeof *one);
    else
        ec_prompt_synthetic(r->a.seed, c->vocab_size, r->a.batch, *prompt_len, *prompts);
    free(one);
    return 0;
}

/* --verbose: per layer, the mean outlier columns per call of each linear input, then the mean. */
static int print_outlier_stats(const run_args *r, ec_backend *b, int n_layers)
{
    if (!ec_qformat_of(r->precision)->outliers) {
        fprintf(stderr, "outlier columns: only counted for int8-mixed (precision is %s)\n",
                ec_precision_name(r->precision));
        return 0;
    }
    if (!b->ops->outlier_stats) {
        fprintf(stderr, "outlier columns: the %s backend does not count them\n", b->ops->name);
        return 0;
    }
    double *avg = malloc((size_t)n_layers * EC_LINEAR_INPUTS * sizeof *avg), sum = 0;
    if (!avg) return cli_fail(CMD, "out of memory");
    if (b->ops->outlier_stats(b, avg) != 0) {
        free(avg);
        return cli_fail(CMD, "%s", ec_last_error());
    }
    fprintf(stderr, "outlier columns per call (|x| >= %g in any token), averaged over calls:\n",
            (double)r->a.int8_threshold);
    fprintf(stderr, "%-6s", "layer");
    for (int i = 0; i < EC_LINEAR_INPUTS; i++)
        fprintf(stderr, " %9s", ec_linear_input_name((ec_linear_input)i));
    fputc('\n', stderr);
    for (int l = 0; l < n_layers; l++) {
        fprintf(stderr, "%-6d", l);
        for (int i = 0; i < EC_LINEAR_INPUTS; i++) {
            double v = avg[(size_t)l * EC_LINEAR_INPUTS + i];
            fprintf(stderr, " %9.2f", v);
            sum += v;
        }
        fputc('\n', stderr);
    }
    fprintf(stderr, "mean over layers and inputs: %.3f outlier columns\n",
            sum / ((double)n_layers * EC_LINEAR_INPUTS));
    free(avg);
    return 0;
}

static int generate_and_report(const run_args *r, const ec_model *m, const ec_tokenizer *tok)
{
    const ec_model_config *c = ec_model_config_of(m);
    int *prompts = NULL, prompt_len = 0, rc;
    ec_chat_template tpl = {EC_CHAT_NONE, "", 0};
    if (r->chat && ec_chat_template_detect(r->a.model, tok, &tpl) != 0)
        return cli_fail(CMD, "--chat: %s", ec_last_error());
    if ((rc = build_prompts(r, c, tok, &tpl, &prompts, &prompt_len)) != 0) return rc;
    int *out = malloc((size_t)r->a.batch * r->gen * sizeof *out);
    int *seq = malloc(((size_t)prompt_len + r->gen) * sizeof *seq);
    ec_backend *b = NULL;
    double t0 = ec_now_s();
    if (!out || !seq)
        rc = cli_fail(CMD, "out of memory");
    else
        rc = cli_open_backend(CMD, &r->a, m, r->precision, r->a.batch, prompt_len + r->gen - 1, &b);
    double load_s = ec_now_s() - t0;
    run_meter rm = {.window = -1};
    ec_phase_hooks hooks = {on_phase, &rm};
    if (rc == 0 && r->energy) rc = open_run_meter(r, &rm);
    ec_generate_stats st;
    if (rc == 0 && ec_generate_repeated(b, prompts, r->a.batch, prompt_len, r->gen, out, 1, 1,
                                        r->energy ? rm.min_window_s : 0, r->energy ? &hooks : NULL,
                                        &st) != 0)
        rc = cli_fail(CMD, "%s", ec_last_error());
    if (rc == 0 && rm.failed) rc = cli_fail(CMD, "--energy: %s", ec_last_error());
    ec_meter_close(rm.m);
    char *text = NULL;
    if (rc == 0 && tok) {
        memcpy(seq, prompts, (size_t)prompt_len * sizeof *seq);
        memcpy(seq + prompt_len, out, (size_t)r->gen * sizeof *seq);
        text = decode_text(r, m, tok, r->chat ? ec_chat_stop_token(&tpl, tok) : -1, seq,
                           prompt_len, prompt_len + r->gen);
        if (!text) rc = cli_fail(CMD, "%s", ec_last_error());
    }
    if (rc == 0 && tok && !r->a.format_given) {
        printf("%s\n", text);
        fprintf(stderr,
                "prefill: %ld tok in %.4f s (%.1f tok/s); decode: %ld tok in %.4f s "
                "(%.1f tok/s)\n",
                st.prefill_tokens, st.prefill_s, rate(st.prefill_tokens, st.prefill_s),
                st.decode_tokens, st.decode_s, rate(st.decode_tokens, st.decode_s));
    } else if (rc == 0) {
        print_table(r, r->energy ? &rm : NULL, c, &st, load_s, prompt_len, out, text);
    }
    if (rc == 0 && r->verbose) rc = print_outlier_stats(r, b, c->n_layers);
    free(text);
    ec_backend_destroy(b);
    free(seq);
    free(out);
    free(prompts);
    return rc;
}

int cmd_run(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage();
        return EXIT_OK;
    }
    run_args r;
    int rc = parse(argc, argv, &r);
    if (rc != 0) return rc;
    ec_model *m;
    ec_tokenizer *tok;
    if ((rc = cli_open_model(CMD, &r.a, &m, &tok)) != 0) return rc;
    rc = generate_and_report(&r, m, tok);
    ec_tokenizer_free(tok);
    ec_model_close(m);
    return rc;
}
