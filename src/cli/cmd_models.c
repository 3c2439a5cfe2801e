/* cmd_models.c — `ecocompute models`: the built-in catalog with shapes, parameter counts and the
 * weight bytes each precision needs (linear layers in the precision, the rest 16-bit). */
#include "cli.h"

#include <string.h>

#include "ecocompute/model.h"

static const ec_precision shown[] = {EC_PREC_FP16, EC_PREC_INT8, EC_PREC_NF4, EC_PREC_NF4_DQ,
                                     EC_PREC_FP8};

static void usage(void)
{
    printf("usage: ecocompute models [--format table|json|csv]\n\n"
           "Lists the built-in models (exact shapes from each model's config.json, synthetic\n"
           "weights) with their parameter count and the weight memory per precision, in GB\n"
           "(1e9 bytes): linear layers in that precision, embedding, head and norms in 16-bit\n"
           "(the engine's default; see --quantize-head on run/eval). Names match\n"
           "case-insensitively wherever a model is named.\n\n"
           "options:\n"
           "  --format F   table (default), json or csv\n\n"
           "examples:\n"
           "  ecocompute models\n"
           "  ecocompute models --format json\n");
}

int cmd_models(int argc, char **argv)
{
    ec_format fmt = EC_FORMAT_TABLE;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage();
            return EXIT_OK;
        } else if (!strcmp(argv[i], "--format")) {
            if (i + 1 >= argc) return cli_usage_error("models", "--format needs a value");
            if (cli_parse_format("models", argv[++i], &fmt)) return EXIT_USAGE;
        } else {
            return cli_usage_error("models", "unknown option '%s'", argv[i]);
        }
    }
    ec_table *t = ec_table_new();
    int c_name = ec_table_column(t, "name", "Model");
    int c_params = ec_table_column(t, "params_b", "Params (B)");
    int c_layers = ec_table_column(t, "layers", "Layers");
    int c_dim = ec_table_column(t, "dim", "Dim");
    int c_hidden = ec_table_column(t, "hidden_dim", "FFN");
    int c_heads = ec_table_column(t, "heads", "Heads");
    int c_kv = ec_table_column(t, "kv_heads", "KV");
    int c_vocab = ec_table_column(t, "vocab", "Vocab");
    int c_ctx = ec_table_column(t, "max_seq_len", "Context");
    int c_prec[sizeof shown / sizeof *shown];
    for (size_t p = 0; p < sizeof shown / sizeof *shown; p++) {
        char key[32], label[32];
        snprintf(key, sizeof key, "%s_gb", ec_precision_name(shown[p]));
        snprintf(label, sizeof label, "%s (GB)", ec_precision_name(shown[p]));
        c_prec[p] = ec_table_column(t, key, label);
        /* nf4-dq is within a few % of nf4: the first size a narrow table leaves out */
        if (shown[p] == EC_PREC_NF4_DQ) ec_table_priority(t, c_prec[p], 2);
    }
    ec_table_priority(t, c_hidden, 1);
    for (size_t i = 0; i < ec_catalog_count(); i++) {
        const ec_model_config *c = ec_catalog_get(i);
        ec_table_row(t);
        ec_table_text(t, c_name, "%s", c->name);
        ec_table_number(t, c_params, "%.3f", (double)ec_model_param_count(c) / 1e9);
        ec_table_number(t, c_layers, "%.0f", c->n_layers);
        ec_table_number(t, c_dim, "%.0f", c->dim);
        ec_table_number(t, c_hidden, "%.0f", c->hidden_dim);
        ec_table_number(t, c_heads, "%.0f", c->n_heads);
        ec_table_number(t, c_kv, "%.0f", c->n_kv_heads);
        ec_table_number(t, c_vocab, "%.0f", c->vocab_size);
        ec_table_number(t, c_ctx, "%.0f", c->max_seq_len);
        for (size_t p = 0; p < sizeof shown / sizeof *shown; p++)
            ec_table_number(t, c_prec[p], "%.3f",
                            (double)ec_model_weight_bytes(c, shown[p]) / 1e9);
    }
    ec_table_print(t, fmt, stdout);
    ec_table_free(t);
    return EXIT_OK;
}
