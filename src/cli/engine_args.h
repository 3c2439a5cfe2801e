/* engine_args.h — the flags `run` and `eval` share (model, device, tensor-parallel ranks, kernel
 * family, batch, seed,
 * threads, outliers, int8 threshold, head quantization, tokenizer, output format), and opening the model
 * and a loaded backend from them. */
#ifndef ECOCOMPUTE_CLI_ENGINE_ARGS_H
#define ECOCOMPUTE_CLI_ENGINE_ARGS_H

#include "ecocompute/engine.h"
#include "ecocompute/tokenizer.h"

#include <stdint.h>

typedef struct {
    const char *model;           /* --model NAME|DIR|FILE.bin (required) */
    const char *device;          /* --device cpu|cuda[:N]|cuda:0,1,.. (default cpu) */
    int tp;                      /* --tp N: tensor-parallel ranks (0 = the device list's length) */
    const char *tokenizer;       /* --tokenizer FILE|DIR (tokenizer.json, .model, llama2.c .bin) */
    int text_needed;             /* the command reads or writes text: without --tokenizer, a model
                                  * directory's own tokenizer is opened */
    int batch;                   /* --batch B (default 1) */
    int prompt_len;              /* --prompt-len L; 0 = not given */
    uint64_t seed;               /* --seed S: synthetic weights and synthetic prompt tokens */
    int threads;                 /* --threads T (0 = all cores) */
    ec_model_options model_opts; /* --outliers K[:MAG], --seed */
    float int8_threshold;        /* --int8-threshold T */
    ec_kernels kernels;          /* --kernels reference|fused (CUDA only; default fused) */
    int quantize_head;           /* --quantize-head */
    ec_format format;            /* --format */
    int format_given;            /* --format appeared (run prints text without it) */
} cli_engine_args;

void cli_engine_args_default(cli_engine_args *a);
/* Handles argv[*i] when it is a shared flag, consuming its value (advancing *i).
 * Returns 1 when handled, 0 when it is not a shared flag, -1 after printing a usage error. */
int cli_engine_arg(const char *cmd, int argc, char **argv, int *i, cli_engine_args *a);
/* --outliers K[:MAG] (run, eval, bench): K outlier hidden dims of magnitude MAG in synthetic
 * weights; *mag is left alone without ":MAG". Returns 0, or -1 after printing a usage error. */
int cli_parse_outliers(const char *cmd, const char *text, int *outliers, float *mag);
/* The value of flag argv[*i] (advancing *i), or NULL after printing a usage error. */
const char *cli_flag_value(const char *cmd, int argc, char **argv, int *i);
/* Checks what the shared flags cannot check one by one (a device list and --tp agree), and
 * that the device's backend exists. Returns 0, EXIT_USAGE or EXIT_FAIL (message printed). */
int cli_engine_args_check(const char *cmd, const cli_engine_args *a);
/* --device D with --tp N, as a usage error names them: the devices' count, or -1 after printing
 * the usage error (a malformed list, repeated GPUs, a --tp the list disagrees with). */
int cli_device_ranks(const char *cmd, const char *device, int tp);
/* Fails (printed, EXIT_FAIL) when the backend of `device`'s devices is not built, before time
 * goes into opening a model; 0 when it is. */
int cli_probe_backend(const char *cmd, const char *device, int tp);
/* The help lines of --device and --tp, shared by run, eval and bench. */
#define CLI_DEVICE_HELP                                                                          \
    "  --device D           cpu | cuda[:N] | a list of GPUs cuda:0,1[,...] (default cpu)\n"      \
    "  --tp N               tensor-parallel ranks, 1..8: the model's heads and MLP split over\n"  \
    "                       N devices (cuda: GPUs 0..N-1, cuda:K: K..K+N-1, cpu: N CPU ranks;\n" \
    "                       a list sets N itself; default 1)\n"

/* Opens the model of --model with the synthetic-weight options and its tokenizer: --tokenizer,
 * else with text_needed the model directory's own, else none (*tok = NULL). Returns 0, or
 * EXIT_FAIL (printed) with nothing left open. */
int cli_open_model(const char *cmd, const cli_engine_args *a, ec_model **m, ec_tokenizer **tok);
/* Creates the --device backend and loads m in precision p for max_batch sequences of max_seq
 * positions. Returns 0, or EXIT_FAIL (printed). */
int cli_open_backend(const char *cmd, const cli_engine_args *a, const ec_model *m, ec_precision p,
                     int max_batch, int max_seq, ec_backend **out);

#endif
