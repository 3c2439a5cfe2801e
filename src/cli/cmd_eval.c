/* cmd_eval.c — `ecocompute eval`: accuracy of each precision against the float32 model on the
 * same inputs (KL divergence, top-1 agreement, largest logit error, by teacher forcing one token
 * sequence through both), and perplexity over a text file under the sliding-window protocol;
 * with --db, each precision's result is stored as an accuracy row (eval_store.c). Method in
 * docs/engine.md. */
#include "cli.h"
#include "engine_args.h"
#include "eval_store.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CMD "eval"
enum { DEFAULT_TOKENS = 64, DEFAULT_PROMPT_LEN = 16 };

typedef struct {
    cli_engine_args a;
    ec_precision precs[EC_PREC_COUNT];
    int n_precs;
    int tokens;           /* --tokens T: positions compared per sequence */
    const char *ppl_file; /* --ppl FILE */
    int window, stride;   /* --window W, --stride S (0: the defaults, known once the model is) */
    const char *db;       /* --db PATH: store the results (NULL: print only) */
} eval_args;

static void usage(void)
{
    char precs[128];
    printf(
        "usage: ecocompute eval --model NAME|DIR|FILE.bin [options]\n\n"
        "Measures how far each precision's next-token distribution is from the float32 model's\n"
        "(always computed by the CPU backend; --device picks where the precisions run).\n"
        "A seeded synthetic prompt is continued greedily by the f32 model to --tokens positions;\n"
        "that sequence is teacher-forced through every precision and, at each position, compared\n"
        "with f32: mean KL(p_f32 || p_P) in nats, top-1 agreement in %%, max |logit difference|.\n"
        "With --ppl, also the perplexity over a text file by the sliding-window protocol: the\n"
        "text (after BOS, when the tokenizer has one) is read in windows of --window tokens\n"
        "starting every --stride tokens; each window scores only the tokens no earlier window\n"
        "scored, so every token but the first is predicted once, with up to window-1 tokens of\n"
        "context. With --db, each precision's results are stored as an accuracy row (model,\n"
        "precision, kernels, device/GPU, tokenizer, text file and SHA-256, window, stride,\n"
        "tokens scored, version and commit); `analyze --accuracy` joins them to energy.\n\n"
        "options:\n"
        "  --model M            catalog name (synthetic weights), Hugging Face dir, llama2.c .bin\n"
        "  --precision P[,P..]  precisions to evaluate, of %s\n"
        "                       (default: all but f32, the reference)\n"
        CLI_DEVICE_HELP
        "  --kernels K          CUDA kernel family: fused (default; our fused kernels, CUDA graph)\n"
        "                       or reference (the libraries' dataflow: one cuBLAS call per linear,\n"
        "                       LLM.int8()'s separate kernels and host syncs, no graph); the CPU\n"
        "                       backend has one implementation and ignores it\n"
        "  --tokens T           positions compared per sequence (default %d)\n"
        "  --prompt-len L       of which synthetic prompt tokens (default %d, at most T)\n"
        "  --batch B            sequences, each from its own seeded prompt (default 1)\n"
        "  --seed S             synthetic weights and prompt tokens (default 1)\n"
        "  --threads T          CPU threads, 0 = all cores (default 0)\n"
        "  --ppl FILE           text file for perplexity (needs a tokenizer)\n"
        "  --window W           perplexity context in tokens (default: the model's max_seq_len)\n"
        "  --stride S           tokens each window advances by (default: half the window)\n"
        "  --db PATH            store the results in this results database (created if absent;\n"
        "                       never a file that is not one)\n"
        "  --tokenizer TOK      the model's tokenizer: tokenizer.json, tokenizer.model, llama2.c\n"
        "                       .bin, or a directory (default: the model directory's own)\n"
        "  --outliers K[:MAG]   synthetic weights: K outlier hidden dims of magnitude MAG\n"
        "  --int8-threshold T   int8-mixed outlier threshold (default %.1f)\n"
        "  --quantize-head      store the output head in P too (default: 16-bit)\n"
        "  --format F           table | json | csv\n\n"
        "examples:\n"
        "  ecocompute eval --model small --precision fp16,int8,int8-mixed,nf4 --outliers 4:40\n"
        "  ecocompute eval --model stories260K.bin --precision f32,fp16,int8,nf4 \\\n"
        "      --ppl tinystories_sample.txt --tokenizer tok512.bin --format json\n"
        "  ecocompute eval --model small --device cuda --kernels reference --precision int8-mixed\n"
        "  ecocompute eval --model small --device cuda:0,1 --precision fp16   # split over 2 GPUs\n"
        "  ecocompute eval --model ./Llama-2-7b-hf --device cuda --precision fp16,int8,int8-mixed \\\n"
        "      --ppl wiki.test.raw --window 1024 --stride 512 --db results.db\n",
        ec_qformat_names(EC_QFORMAT_CPU | EC_QFORMAT_CUDA, ",", precs, sizeof precs),
        DEFAULT_TOKENS, DEFAULT_PROMPT_LEN, (double)EC_INT8_THRESHOLD);
}

static int parse_precisions(const char *list, eval_args *e)
{
    char buf[256];
    if (strlen(list) >= sizeof buf) return cli_usage_error(CMD, "--precision list too long");
    strcpy(buf, list);
    e->n_precs = 0;
    char *save = NULL;
    for (char *p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        if (e->n_precs == EC_PREC_COUNT)
            return cli_usage_error(CMD, "--precision: at most %d precisions", EC_PREC_COUNT);
        if (ec_precision_parse(p, &e->precs[e->n_precs++]) != 0)
            return cli_usage_error(CMD, "--precision: %s", ec_last_error());
    }
    if (e->n_precs == 0) return cli_usage_error(CMD, "--precision: empty list");
    return 0;
}

static int parse(int argc, char **argv, eval_args *e)
{
    cli_engine_args_default(&e->a);
    e->tokens = DEFAULT_TOKENS;
    e->ppl_file = NULL;
    e->n_precs = 0;
    for (int p = 0; p < EC_PREC_COUNT; p++)
        if (p != EC_PREC_F32) e->precs[e->n_precs++] = (ec_precision)p;
    e->window = e->stride = 0;
    e->db = NULL;
    int rc = 0;
    for (int i = 1; rc == 0 && i < argc; i++) {
        int shared = cli_engine_arg(CMD, argc, argv, &i, &e->a);
        if (shared < 0) return EXIT_USAGE;
        if (shared) continue;
        const char *flag = argv[i];
        if (strcmp(flag, "--precision") && strcmp(flag, "--tokens") && strcmp(flag, "--ppl") &&
            strcmp(flag, "--window") && strcmp(flag, "--stride") && strcmp(flag, "--db"))
            return cli_usage_error(CMD, "unknown option '%s'", flag);
        const char *val = cli_flag_value(CMD, argc, argv, &i);
        long v;
        if (!val) return EXIT_USAGE;
        if (!strcmp(flag, "--ppl")) {
            e->ppl_file = val;
        } else if (!strcmp(flag, "--db")) {
            e->db = val;
        } else if (!strcmp(flag, "--window") || !strcmp(flag, "--stride")) {
            if (cli_parse_long(CMD, flag, val, flag[2] == 'w' ? 2 : 1, 1 << 20, &v) != 0)
                return EXIT_USAGE;
            *(flag[2] == 'w' ? &e->window : &e->stride) = (int)v;
        } else if (!strcmp(flag, "--tokens")) {
            if (cli_parse_long(CMD, flag, val, 1, 1 << 20, &v) != 0) return EXIT_USAGE;
            e->tokens = (int)v;
        } else {
            rc = parse_precisions(val, e);
        }
    }
    if (rc != 0) return rc;
    if (!e->a.prompt_len)
        e->a.prompt_len = e->tokens < DEFAULT_PROMPT_LEN ? e->tokens : DEFAULT_PROMPT_LEN;
    if (e->a.prompt_len > e->tokens)
        return cli_usage_error(CMD, "--prompt-len (%d) exceeds --tokens (%d)", e->a.prompt_len,
                               e->tokens);
    if (e->a.tokenizer && !e->ppl_file) return cli_usage_error(CMD, "--tokenizer needs --ppl");
    if ((e->window || e->stride) && !e->ppl_file)
        return cli_usage_error(CMD, "--window and --stride need --ppl");
    if (e->window && e->stride > e->window)
        return cli_usage_error(CMD, "--stride (%d) exceeds --window (%d): tokens would be skipped",
                               e->stride, e->window);
    struct stat st;
    if (e->ppl_file && !e->a.tokenizer && (stat(e->a.model, &st) != 0 || !S_ISDIR(st.st_mode)))
        return cli_usage_error(CMD, "--ppl needs --tokenizer (or a model directory with its own)");
    e->a.text_needed = e->ppl_file != NULL;
    return cli_engine_args_check(CMD, &e->a);
}

/* Feeds seq [batch][T] one position at a time, seq[.][t] at cache position pos0 + t, and hands
 * each step's logits [batch][vocab] to on_step: logits at step t predict token t+1. */
typedef void (*step_fn)(void *ctx, int t, const float *logits);
static int teacher_force(ec_backend *b, const int *seq, int batch, int T, int pos0, int vocab,
                         step_fn on_step, void *ctx)
{
    int *step = malloc((size_t)batch * sizeof *step), *next = malloc((size_t)batch * sizeof *next);
    float *logits = malloc((size_t)batch * vocab * sizeof *logits);
    int rc = step && next && logits ? 0 : ec_set_error("out of memory");
    for (int t = 0; rc == 0 && t < T; t++) {
        for (int i = 0; i < batch; i++)
            step[i] = seq[(size_t)i * T + t];
        rc = b->ops->forward(b, step, batch, 1, pos0 + t, next, logits);
        /* A NaN compares false with everything: KL and top-1 would come out perfect. */
        for (size_t k = 0; rc == 0 && k < (size_t)batch * vocab; k++)
            if (!isfinite(logits[k]))
                rc = ec_set_error("position %d of sequence %zu: logit of token %zu is %g; the "
                                  "model's activations overflow at this precision",
                                  t, k / (size_t)vocab, k % (size_t)vocab, (double)logits[k]);
        if (rc == 0) on_step(ctx, t, logits);
    }
    free(step);
    free(next);
    free(logits);
    return rc;
}

/* ---- accuracy against float32 ---- */
typedef struct {
    float *ref; /* [T][batch][vocab] float32 logits */
    int batch, vocab;
    double kl_sum, max_dlogit;
    long agree, count;
} accuracy;

static void compare_with_reference(void *ctx, int t, const float *logits)
{
    accuracy *acc = ctx;
    for (int i = 0; i < acc->batch; i++) {
        const float *p = acc->ref + ((size_t)t * acc->batch + i) * acc->vocab;
        const float *q = logits + (size_t)i * acc->vocab;
        acc->kl_sum += ec_logits_kl(p, q, acc->vocab);
        acc->agree += ec_argmax(p, acc->vocab) == ec_argmax(q, acc->vocab);
        acc->count++;
        for (int v = 0; v < acc->vocab; v++) {
            double d = fabs((double)p[v] - q[v]);
            if (d > acc->max_dlogit) acc->max_dlogit = d;
        }
    }
}

/* ---- perplexity ---- */
typedef struct {
    const int *window; /* the tokens being fed: window[t + 1] is what step t predicts */
    int vocab;
    double nll_sum;
    long count;
} perplexity;

static void add_nll(void *ctx, int t, const float *logits)
{
    perplexity *pp = ctx;
    pp->nll_sum += ec_logits_nll(logits, pp->vocab, pp->window[t + 1]);
    pp->count++;
}

/* Reads the text file and tokenizes it into BOS (when the tokenizer has one) + the text, the
 * token stream that the windows slide over. */
static int load_text_tokens(const eval_args *e, const ec_tokenizer *tok, int **tokens, int *n)
{
    FILE *f = ec_fopen_regular(e->ppl_file);
    if (!f) return cli_fail(CMD, "--ppl: %s", ec_last_error());
    char *text = NULL;
    size_t len = 0, cap = 0, got;
    char chunk[65536];
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        char *grown = len + got + 1 > cap ? realloc(text, cap = 2 * (len + got + 1)) : text;
        if (!grown) break;
        text = grown;
        memcpy(text + len, chunk, got);
        len += got;
    }
    int read_error = ferror(f) || got > 0;
    fclose(f);
    if (read_error || !text) {
        free(text);
        return cli_fail(CMD, "--ppl: cannot read %s (empty or unreadable)", e->ppl_file);
    }
    text[len] = '\0';
    int *body = NULL, bos = ec_tokenizer_bos(tok), nb = ec_tokenizer_encode(tok, text, 0, &body);
    free(text);
    if (nb < 1) {
        free(body);
        return cli_fail(CMD, "--ppl: cannot tokenize %s: %s", e->ppl_file, ec_last_error());
    }
    int lead = bos >= 0;
    *tokens = malloc(((size_t)nb + 1) * sizeof **tokens);
    if (!*tokens) {
        free(body);
        return cli_fail(CMD, "out of memory");
    }
    (*tokens)[0] = bos;
    memcpy(*tokens + lead, body, (size_t)nb * sizeof *body);
    free(body);
    *n = nb + lead;
    if (*n < 2) return cli_fail(CMD, "--ppl: %s is a single token: nothing to predict", e->ppl_file);
    return 0;
}

/* Perplexity of the token stream ids [n], batch 1, by the sliding-window protocol of Hugging
 * Face's "Perplexity of fixed-length models": windows of `window` tokens start every `stride`
 * tokens, and each scores only the tokens after the previous window's end (all but the stream's
 * first token, each once). A window's tokens before its first scored one are context: one
 * prefill call, whose logits are not needed. *scored gets the number of tokens scored. */
static int text_perplexity(ec_backend *b, const int *ids, int n, int window, int stride, int vocab,
                           double *ppl, long *scored)
{
    int next;
    perplexity pp = {ids, vocab, 0.0, 0};
    int rc = 0;
    for (int begin = 0, prev_end = 0; rc == 0 && prev_end < n; begin += stride) {
        int end = begin + window < n ? begin + window : n;
        int first = prev_end > begin + 1 ? prev_end : begin + 1; /* first token scored */
        int context = first - 1 - begin;                         /* tokens before its input */
        if (context > 0) rc = b->ops->forward(b, ids + begin, 1, context, 0, &next, NULL);
        pp.window = ids + first - 1;
        if (rc == 0) rc = teacher_force(b, pp.window, 1, end - first, context, vocab, add_nll, &pp);
        prev_end = end;
    }
    *ppl = exp(pp.nll_sum / (double)pp.count);
    *scored = pp.count;
    return rc;
}

static void print_rows(const eval_args *e, const ec_accuracy_record *rows)
{
    ec_table *t = ec_table_new();
    int c_prec = ec_table_column(t, "precision", "Precision");
    int c_pos = ec_table_column(t, "positions", "Positions (tok)");
    int c_kl = ec_table_column(t, "mean_kl_nats", "Mean KL (nats)");
    int c_top1 = ec_table_column(t, "top1_agreement_pct", "Top-1 agreement (%)");
    int c_dl = ec_table_column(t, "max_abs_dlogit", "Max |dlogit| (logit)");
    int c_ppl = e->ppl_file ? ec_table_column(t, "perplexity", "Perplexity (per token)") : -1;
    int c_pt = e->ppl_file ? ec_table_column(t, "ppl_tokens", "PPL scored (tok)") : -1;
    int c_win = e->ppl_file ? ec_table_column(t, "window", "Window (tok)") : -1;
    int c_str = e->ppl_file ? ec_table_column(t, "stride", "Stride (tok)") : -1;
    for (int i = 0; i < e->n_precs; i++) {
        const ec_accuracy_record *r = &rows[i];
        ec_table_row(t);
        ec_table_text(t, c_prec, "%s", r->precision);
        ec_table_number(t, c_pos, "%.0f", (double)r->kl_positions);
        ec_table_number(t, c_kl, "%.3e", r->kl_vs_f32);
        ec_table_number(t, c_top1, "%.2f", r->top1_agreement_pct);
        ec_table_number(t, c_dl, "%.4g", r->max_abs_dlogit);
        if (e->ppl_file) {
            ec_table_number(t, c_ppl, "%.4f", r->perplexity);
            ec_table_number(t, c_pt, "%.0f", (double)r->ppl_tokens);
            ec_table_number(t, c_win, "%.0f", r->window);
            ec_table_number(t, c_str, "%.0f", r->stride);
        }
    }
    ec_table_print(t, e->a.format, stdout);
    ec_table_free(t);
}

/* The reference pass: each step keeps the f32 logits and, past the prompt, appends their
 * greedy token to the sequence, so generating and teacher forcing are one pass. */
typedef struct {
    accuracy *acc;
    int *seq; /* [batch][T] */
    int T, prompt_len;
} reference;

static void keep_and_extend(void *ctx, int t, const float *logits)
{
    reference *r = ctx;
    accuracy *acc = r->acc;
    size_t n = (size_t)acc->batch * acc->vocab;
    memcpy(acc->ref + (size_t)t * n, logits, n * sizeof *logits);
    if (t + 1 < r->prompt_len || t + 1 >= r->T) return;
    for (int i = 0; i < acc->batch; i++)
        r->seq[(size_t)i * r->T + t + 1] = ec_argmax(logits + (size_t)i * acc->vocab, acc->vocab);
}

/* Seeded prompts continued greedily by f32 to T tokens (seq), and f32's logits (acc->ref).
 * The f32 model always runs on the CPU backend (the numerical reference), whatever --device the
 * evaluated precisions use. */
static int reference_pass(const eval_args *e, const ec_model *m, int *seq, accuracy *acc)
{
    const ec_model_config *c = ec_model_config_of(m);
    int B = e->a.batch, T = e->tokens, L = e->a.prompt_len;
    int *prompt = malloc((size_t)B * L * sizeof *prompt);
    ec_backend *b = NULL;
    cli_engine_args on_cpu = e->a;
    on_cpu.device = "cpu";
    on_cpu.tp = 0; /* the reference is the unsplit model */
    int rc = prompt ? 0 : cli_fail(CMD, "out of memory");
    if (rc == 0) rc = cli_open_backend(CMD, &on_cpu, m, EC_PREC_F32, B, T, &b);
    if (rc == 0) {
        ec_prompt_synthetic(e->a.seed, c->vocab_size, B, L, prompt);
        for (int i = 0; i < B; i++)
            memcpy(seq + (size_t)i * T, prompt + (size_t)i * L, (size_t)L * sizeof *seq);
        reference r = {acc, seq, T, L};
        if (teacher_force(b, seq, B, T, 0, c->vocab_size, keep_and_extend, &r) != 0)
            rc = cli_fail(CMD, "%s", ec_last_error());
    }
    ec_backend_destroy(b);
    free(prompt);
    return rc;
}

/* The perplexity window and stride: the flags, else the model's context and half of it. */
static int ppl_geometry(const eval_args *e, const ec_model_config *c, int *window, int *stride)
{
    *window = e->window ? e->window : c->max_seq_len;
    if (*window > c->max_seq_len)
        return cli_usage_error(CMD, "--window %d exceeds the model's context (%d tokens)",
                               *window, c->max_seq_len);
    if (*window < 2) return cli_fail(CMD, "the model's context (%d tokens) is too short for "
                                          "perplexity", c->max_seq_len);
    *stride = e->stride ? e->stride : *window / 2;
    if (*stride > *window)
        return cli_usage_error(CMD, "--stride (%d) exceeds the window (%d): tokens would be "
                                    "skipped", *stride, *window);
    return 0;
}

static int evaluate(const eval_args *e, const ec_model *m, const ec_tokenizer *tok,
                    ec_accuracy_record *rows)
{
    const ec_model_config *c = ec_model_config_of(m);
    int B = e->a.batch, T = e->tokens, V = c->vocab_size, window = 0, stride = 0;
    int *seq = malloc((size_t)B * T * sizeof *seq), *text = NULL, n_text = 0;
    accuracy acc = {malloc((size_t)T * B * V * sizeof(float)), B, V, 0, 0, 0, 0};
    int rc = seq && acc.ref ? 0 : cli_fail(CMD, "out of memory");
    if (rc == 0 && tok) rc = ppl_geometry(e, c, &window, &stride);
    if (rc == 0 && tok) rc = load_text_tokens(e, tok, &text, &n_text);
    if (rc == 0) rc = reference_pass(e, m, seq, &acc);
    int max_seq = tok && window > T ? window : T;
    for (int i = 0; rc == 0 && i < e->n_precs; i++) {
        ec_backend *b = NULL;
        ec_accuracy_record *r = &rows[i];
        acc.kl_sum = acc.max_dlogit = 0.0;
        acc.agree = acc.count = 0;
        snprintf(r->precision, sizeof r->precision, "%s", ec_precision_name(e->precs[i]));
        rc = cli_open_backend(CMD, &e->a, m, e->precs[i], B, max_seq, &b);
        if (rc == 0 &&
            (teacher_force(b, seq, B, T, 0, V, compare_with_reference, &acc) != 0 ||
             (tok && text_perplexity(b, text, n_text, window, stride, V, &r->perplexity,
                                     &r->ppl_tokens) != 0)))
            rc = cli_fail(CMD, "%s: %s", r->precision, ec_last_error());
        r->kl_vs_f32 = acc.kl_sum / (double)acc.count;
        r->top1_agreement_pct = 100.0 * (double)acc.agree / (double)acc.count;
        r->max_abs_dlogit = acc.max_dlogit;
        r->kl_positions = acc.count;
        r->kl_seed = (long)e->a.seed;
        r->int8_threshold = e->precs[i] == EC_PREC_INT8_MIXED ? e->a.int8_threshold : NAN;
        if (tok) {
            r->window = window;
            r->stride = stride;
        }
        ec_backend_destroy(b);
    }
    free(text);
    free(acc.ref);
    free(seq);
    return rc;
}

int cmd_eval(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage();
        return EXIT_OK;
    }
    eval_args e;
    int rc = parse(argc, argv, &e);
    if (rc != 0) return rc;
    ec_model *m;
    ec_tokenizer *tok;
    /* The database is opened (and checked) before the evaluation, so a file that cannot take
     * the results fails at once rather than after it. */
    ec_store *st = NULL;
    if (e.db && ec_store_open(&st, e.db, 0) != 0) return cli_fail(CMD, "--db: %s", ec_last_error());
    if ((rc = cli_open_model(CMD, &e.a, &m, &tok)) != 0) {
        ec_store_close(st);
        return rc;
    }
    ec_accuracy_record rows[EC_PREC_COUNT], base;
    rc = cli_eval_provenance(CMD, &e.a, m, tok, e.ppl_file, &base);
    for (int i = 0; i < e.n_precs; i++)
        rows[i] = base;
    if (rc == 0) rc = evaluate(&e, m, tok, rows);
    if (rc == 0) print_rows(&e, rows);
    if (rc == 0 && st) rc = cli_eval_store(CMD, st, e.db, rows, e.n_precs);
    ec_store_close(st);
    ec_tokenizer_free(tok);
    ec_model_close(m);
    return rc;
}
