/* main.c — the ecocompute binary: dispatches git-style subcommands (one file each). */
#include "cli.h"

#include <string.h>

const cli_command cli_commands[] = {
    {"gpus", "list the GPUs, what they can measure, and their power now", cmd_gpus},
    {"meter", "run a command and measure the energy it costs", cmd_meter},
    {"calibrate", "measure the GPU's ceilings: idle W, read/copy GB/s, fp16 TFLOP/s, pJ/byte",
     cmd_calibrate},
    {"models", "list the built-in models: shapes, parameters, weight bytes per precision",
     cmd_models},
    {"run", "generate greedily with the engine; prefill/decode tok/s (or text)", cmd_run},
    {"tokenize", "text to token ids and back with a model's tokenizer (tokenizer.json, ...)",
     cmd_tokenize},
    {"eval", "accuracy of precisions vs float32 (KL, top-1, perplexity)", cmd_eval},
    {"bench", "sweep configurations under the measurement protocol; store every run", cmd_bench},
    {"export", "write stored runs (or per-configuration summaries) as CSV or JSON", cmd_export},
    {"import", "store runs from export files and the seeds' published data", cmd_import},
    {"analyze", "statistics, deltas vs a baseline, scaling and crossover fits over datasets",
     cmd_analyze},
    {"validate", "check a dataset for internal consistency (energy, roofline, summaries)",
     cmd_validate},
    {"compare", "energy-regression gate: per configuration, NEW vs BASE with Welch tests",
     cmd_compare},
    {"exporter", "serve live GPU/CPU energy telemetry to Prometheus (or a textfile)", cmd_exporter},
    {"report", "a self-contained HTML dashboard (or Markdown) of a database or export files",
     cmd_report},
    {"advise", "the greenest configuration, a diagnosis, a cost/CO2 estimate, a code audit",
     cmd_advise},
    {"version", "print the version and the commit it was built from", cmd_version},
    {NULL, NULL, NULL},
};

static void usage(FILE *out)
{
    fprintf(out, "ecocompute — measure, explain and lower the energy of LLM inference on NVIDIA "
                 "GPUs\n\nusage: ecocompute <command> [options]\n\ncommands:\n");
    for (const cli_command *c = cli_commands; c->name; c++)
        fprintf(out, "  %-10s %s\n", c->name, c->summary);
    fprintf(out,
            "\noption of every command:\n"
            "  --wide     tables show every column (by default a table fits %d characters:\n"
            "             its least important columns are left out, long names shortened;\n"
            "             json and csv always hold every field)\n",
            CLI_TABLE_WIDTH);
    fprintf(out, "\n'ecocompute <command> --help' shows a command's options and examples.\n");
}

/* --wide anywhere before a `--` (after which the arguments are another program's) is taken out
 * of argv here, so every command accepts it the same way. Returns the new argc. */
static int take_wide(int argc, char **argv, int *wide)
{
    int n = 0, rest = 0;
    for (int i = 0; i < argc; i++) {
        if (!rest && !strcmp(argv[i], "--")) rest = 1;
        if (!rest && i > 0 && !strcmp(argv[i], "--wide")) {
            *wide = 1;
            continue;
        }
        argv[n++] = argv[i];
    }
    argv[n] = NULL;
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return EXIT_OK;
    }
    int wide = 0;
    argc = take_wide(argc, argv, &wide);
    ec_table_set_text_width(wide ? 0 : CLI_TABLE_WIDTH);
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--version")) return cmd_version(1, argv + 1);
    for (const cli_command *c = cli_commands; c->name; c++)
        if (!strcmp(argv[1], c->name)) return c->run(argc - 1, argv + 1);
    fprintf(stderr, "ecocompute: unknown command '%s' (see 'ecocompute --help')\n", argv[1]);
    return EXIT_USAGE;
}
