/* cmd_advise.c — `ecocompute advise SUBCOMMAND`: dispatches to the advisor's subcommands (one file
 * each, cmd_advise_NAME.c). */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static const cli_command advise_commands[] = {
    {"optimize", "rank precision x batch x stack for a model on a GPU; the greenest that fits",
     cmd_advise_optimize},
    {"diagnose", "traps a configuration hits, distance to the roofline, the fix and its impact",
     cmd_advise_diagnose},
    {"compare", "2 to 4 configurations side by side, with a chart", cmd_advise_compare},
    {"estimate", "kWh, $ and kgCO2 of a workload (tokens, requests, characters, users)",
     cmd_advise_estimate},
    {"audit", "static audit of Python inference code and requirements for energy traps",
     cmd_advise_audit},
    {"model", "the physical model's fitted parameters and its leave-one-out error",
     cmd_advise_model},
    {NULL, NULL, NULL},
};

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: ecocompute advise <subcommand> [options]\n\n"
        "Answers from data: your results database (--db), the reference dataset shipped in\n"
        "data/reference (the seeds' published rows and this project's runs, each with its\n"
        "source and licence), and a physical model fitted to them. Every figure says whether\n"
        "it is measured, interpolated or modelled, its source rows and its ±.\n\nsubcommands:\n");
    for (const cli_command *c = advise_commands; c->name; c++)
        fprintf(out, "  %-9s %s\n", c->name, c->summary);
    fprintf(
        out,
        "\nexamples:\n"
        "  ecocompute advise optimize --model Mistral-7B --gpu A800\n"
        "  ecocompute advise estimate --model Llama-2-7B --gpu H100 --precision fp16 --batch 8 \\\n"
        "      --requests 1000000 --tokens-per-request 300 --per month --region us\n"
        "  ecocompute advise audit --format sarif --fail-on orange src/\n\n"
        "'ecocompute advise <subcommand> --help' shows its options.\n");
}

int cmd_advise(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return EXIT_OK;
    }
    for (const cli_command *c = advise_commands; c->name; c++)
        if (!strcmp(argv[1], c->name)) return c->run(argc - 1, argv + 1);
    return cli_usage_error("advise", "unknown subcommand '%s'", argv[1]);
}
