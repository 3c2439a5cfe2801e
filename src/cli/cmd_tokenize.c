/* cmd_tokenize.c — `ecocompute tokenize`: text to token ids with any supported tokenizer
 * (tokenizer.json, tokenizer.model, llama2.c .bin, or a model directory), and ids back to text
 * with --decode; the debugging aid users of tokenizers expect, and what the tokenizer tests
 * drive. */
#include "cli.h"
#include "engine_args.h"

#include "ecocompute/tokenizer.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CMD "tokenize"

typedef struct {
    const char *tokenizer; /* --tokenizer FILE|DIR */
    const char *text;      /* TEXT */
    const char *file;      /* --file PATH: the text from a file ("-" = stdin) */
    int special;           /* --special: add the tokenizer's special tokens / keep them in text */
    int decode;            /* --decode: the arguments are ids */
    int *ids;              /* --decode's ids */
    int n_ids;
    ec_format format;
} tokenize_args;

static void usage(void)
{
    printf(
        "usage: ecocompute tokenize --tokenizer FILE|DIR [options] TEXT\n"
        "       ecocompute tokenize --tokenizer FILE|DIR --decode ID...\n\n"
        "Encodes TEXT into token ids (and the vocabulary entry of each), or decodes ids into\n"
        "text, exactly as the reference libraries do (Hugging Face tokenizers, sentencepiece,\n"
        "llama2.c). Special tokens written in TEXT (\"<|im_start|>\", \"<s>\") are always\n"
        "recognised.\n\n"
        "options:\n"
        "  --tokenizer T   tokenizer.json (or .json.gz), tokenizer.model (SentencePiece),\n"
        "                  llama2.c tokenizer .bin, or a model directory holding one of them\n"
        "  --special       encode: add what the tokenizer adds around a text (BOS for Llama-2,\n"
        "                  nothing for Qwen2); decode: keep special tokens in the text\n"
        "  --decode        the arguments are token ids; prints their text\n"
        "  --file PATH     encode the text of a file instead of TEXT (- = standard input)\n"
        "  --format F      table (default) | json | csv; json: {\"ids\": [...], \"tokens\":\n"
        "                  [...]} when encoding, {\"text\": ...} when decoding\n\n"
        "examples:\n"
        "  ecocompute tokenize --tokenizer ./Llama-2-7b-hf \"Hello world\"\n"
        "  ecocompute tokenize --tokenizer tokenizer.json --special --format json "
        "\"<|im_start|>user\"\n"
        "  ecocompute tokenize --tokenizer ./Qwen2.5-0.5B --decode 9707 1879\n"
        "  ecocompute tokenize --tokenizer tok512.bin --file story.txt --format csv\n");
}

static int parse_id(const char *text, int *out)
{
    long v;
    if (cli_parse_long(CMD, "--decode", text, 0, (1L << 31) - 1, &v) != 0) return -1;
    *out = (int)v;
    return 0;
}

static int parse(int argc, char **argv, tokenize_args *a)
{
    memset(a, 0, sizeof *a);
    a->format = EC_FORMAT_TABLE;
    int n_positional = 0;
    char **positional = calloc((size_t)argc + 1, sizeof *positional);
    if (!positional) return cli_fail(CMD, "out of memory");
    int rc = 0;
    for (int i = 1; rc == 0 && i < argc; i++) {
        const char *flag = argv[i], *val;
        if (!strcmp(flag, "--special")) {
            a->special = 1;
        } else if (!strcmp(flag, "--decode")) {
            a->decode = 1;
        } else if (!strcmp(flag, "--tokenizer") || !strcmp(flag, "--format") || !strcmp(flag, "--file")) {
            if (!(val = cli_flag_value(CMD, argc, argv, &i))) rc = EXIT_USAGE;
            else if (!strcmp(flag, "--tokenizer")) a->tokenizer = val;
            else if (!strcmp(flag, "--file")) a->file = val;
            else if (cli_parse_format(CMD, val, &a->format) != 0) rc = EXIT_USAGE;
        } else if (!strcmp(flag, "--")) {
            while (++i < argc) positional[n_positional++] = argv[i];
        } else if (flag[0] == '-' && flag[1] == '-') {
            rc = cli_usage_error(CMD, "unknown option '%s'", flag);
        } else {
            positional[n_positional++] = argv[i];
        }
    }
    if (rc == 0 && !a->tokenizer) rc = cli_usage_error(CMD, "--tokenizer FILE|DIR is required");
    if (rc == 0 && a->decode) {
        if (a->file) rc = cli_usage_error(CMD, "--file is for encoding; --decode takes ids");
        else if (n_positional == 0) rc = cli_usage_error(CMD, "--decode needs at least one id");
        a->ids = rc == 0 ? malloc((size_t)n_positional * sizeof *a->ids) : NULL;
        for (int k = 0; rc == 0 && k < n_positional; k++)
            if (parse_id(positional[k], &a->ids[k]) != 0) rc = EXIT_USAGE;
        a->n_ids = n_positional;
    } else if (rc == 0) {
        if (a->file ? n_positional != 0 : n_positional != 1)
            rc = cli_usage_error(CMD, "give the text as one argument (quote it) or --file PATH");
        else if (!a->file)
            a->text = positional[0];
    }
    free(positional);
    return rc;
}

/* The whole of a file (or stdin) as a string. */
static char *read_text(const char *path)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) {
        cli_fail(CMD, "--file: cannot open %s", path);
        return NULL;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    char chunk[65536];
    size_t got;
    while (mem && (got = fread(chunk, 1, sizeof chunk, f)) > 0) fwrite(chunk, 1, got, mem);
    int bad = ferror(f) || !mem;
    if (mem) fclose(mem);
    if (f != stdin) fclose(f);
    if (bad || !text) {
        free(text);
        cli_fail(CMD, "--file: cannot read %s", path);
        return NULL;
    }
    return text;
}

/* A table cell for a piece of text: control characters written as escapes so rows stay rows. */
static char *escaped(const char *s)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (!f) return NULL;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '\n') fputs("\\n", f);
        else if (*p == '\t') fputs("\\t", f);
        else if (*p == '\r') fputs("\\r", f);
        else if (*p < 0x20 || *p == 0x7f) fprintf(f, "\\x%02x", *p);
        else fputc(*p, f);
    }
    fclose(f);
    return out;
}

static void print_json_ids(const ec_tokenizer *t, const int *ids, int n)
{
    cJSON *root = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(root, "ids");
    cJSON *toks = cJSON_AddArrayToObject(root, "tokens");
    for (int i = 0; i < n; i++) {
        cJSON_AddItemToArray(arr, cJSON_CreateNumber(ids[i]));
        cJSON_AddItemToArray(toks, cJSON_CreateString(ec_tokenizer_piece(t, ids[i])));
    }
    char *s = cJSON_PrintUnformatted(root);
    if (s) printf("%s\n", s);
    free(s);
    cJSON_Delete(root);
}

/* One row per token: position, id, the vocabulary entry, and the text it decodes to alone. */
static int print_ids(const ec_tokenizer *t, const int *ids, int n, ec_format format)
{
    if (format == EC_FORMAT_JSON) {
        print_json_ids(t, ids, n);
        return 0;
    }
    ec_table *tab = ec_table_new();
    int c_pos = ec_table_column(tab, "index", "Index");
    int c_id = ec_table_column(tab, "id", "Id");
    int c_tok = ec_table_column(tab, "token", "Token (vocabulary entry)");
    int c_text = ec_table_column(tab, "text", "Text");
    int c_special = ec_table_column(tab, "special", "Special");
    for (int i = 0; i < n; i++) {
        char *text = ec_tokenizer_decode(t, ids + i, 1, 0);
        char *tok = escaped(ec_tokenizer_piece(t, ids[i]));
        char *txt = text ? escaped(text) : NULL;
        ec_table_row(tab);
        ec_table_number(tab, c_pos, "%.0f", i);
        ec_table_number(tab, c_id, "%.0f", ids[i]);
        ec_table_text(tab, c_tok, "%s", format == EC_FORMAT_CSV ? ec_tokenizer_piece(t, ids[i]) : tok ? tok : "");
        ec_table_text(tab, c_text, "%s", format == EC_FORMAT_CSV ? (text ? text : "") : txt ? txt : "");
        ec_table_text(tab, c_special, "%s", ec_tokenizer_is_special(t, ids[i]) ? "yes" : "no");
        free(text);
        free(tok);
        free(txt);
    }
    ec_table_print(tab, format, stdout);
    ec_table_free(tab);
    return 0;
}

static int print_text(const char *text, ec_format format)
{
    if (format == EC_FORMAT_TABLE) {
        printf("%s\n", text);
        return 0;
    }
    if (format == EC_FORMAT_CSV) {
        printf("text\n");
        ec_csv_field(stdout, text);
        printf("\n");
        return 0;
    }
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "text", text);
    char *s = cJSON_PrintUnformatted(root);
    if (s) printf("%s\n", s);
    free(s);
    cJSON_Delete(root);
    return 0;
}

int cmd_tokenize(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage();
        return EXIT_OK;
    }
    tokenize_args a;
    int rc = parse(argc, argv, &a);
    if (rc != 0) {
        free(a.ids);
        return rc;
    }
    ec_tokenizer *t = NULL;
    char *file_text = NULL;
    if (ec_tokenizer_open(&t, a.tokenizer, 0) != 0) {
        rc = cli_fail(CMD, "%s", ec_last_error());
    } else if (a.decode) {
        char *text = ec_tokenizer_decode(t, a.ids, a.n_ids, !a.special);
        rc = text ? print_text(text, a.format) : cli_fail(CMD, "%s", ec_last_error());
        free(text);
    } else if (!a.file || (file_text = read_text(a.file))) {
        int *ids, n = ec_tokenizer_encode(t, a.file ? file_text : a.text, a.special, &ids);
        rc = n < 0 ? cli_fail(CMD, "%s", ec_last_error()) : print_ids(t, ids, n, a.format);
        if (n >= 0) fprintf(stderr, "%d tokens (%s tokenizer %s)\n", n,
                            ec_tokenizer_format_name(ec_tokenizer_format_of(t)), ec_tokenizer_path(t));
        if (n >= 0) free(ids);
    } else {
        rc = EXIT_FAIL;
    }
    free(file_text);
    free(a.ids);
    ec_tokenizer_free(t);
    return rc;
}
