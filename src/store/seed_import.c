/* seed_import.c — maps the seeds' published CSV/JSON files to run records (see seed_import.h).
 *
 * Each file type is recognised by the columns or keys it must have. Facts a file does not carry
 * but its experiment states elsewhere (the GPU and model of the A800 batch sweep, written in the
 * sibling metadata JSON; the GPU of the RTX PRO 6000 runs) are constants of the mapping, cited
 * next to each. Energy definitions follow each source's own measurement script and the identity
 * its numbers satisfy (docs/analysis.md §5): which sources subtracted idle power (net), which
 * did not (gross), and which cannot be told (unknown).
 * Nothing is invented: a value a file does not give stays unknown (NaN / -1 / ""). */
#include "store/seed_import.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/csv.h"
#include "ecocompute/common.h"
#include "ecocompute/model.h"
#include "ecocompute/store.h"

/* Licences of the seed repositories, as each repository (or its site) states them. */
#define LIC_ECO_AI "CC-BY-4.0"      /* hongping-zh/ecocompute-ai: LICENSE file */
#define LIC_DYN_EVAL "MIT"          /* hongping-zh/ecocompute-dynamic-eval */
#define LIC_QUANT_ENERGY "CC-BY-4.0" /* quant-energy: no LICENSE file; its site: data CC BY 4.0 */
#define LIC_GITHUB_IO ""            /* hongping-zh.github.io: no licence stated */

/* The A800 batch-size sweep: its metadata JSON (a800_mistral7b_pure_int8_batch_size_metadata_*)
 * names the model, GPU, quantization and lengths that the CSVs leave out. */
#define A800_SWEEP_GPU "NVIDIA A800-SXM4-80GB"
#define A800_SWEEP_MODEL "Mistral-7B-Instruct-v0.2"
#define A800_SWEEP_SESSION "a800_batch_size_20260215_131345"
#define A800_SWEEP_LEN 256
/* The RTX PRO 6000 folders: metadata.json / final_experiment_metadata.txt. */
#define RTXPRO_GPU "NVIDIA RTX PRO 6000 Blackwell Server Edition"
#define RTXPRO_E2E_MODEL "Qwen2.5-3B"
#define RTXPRO_E2E_PROMPT 128
/* quant-energy's INT8 repeats summary summarises the trials of this session (its runs file's
 * "session" column). */
#define QE_REPEATS_SESSION "2026-08-20 RTX 4090 INT8 repeatability (3 replicates per size)"

typedef struct {
    ec_run_record *v;
    size_t n, cap;
    const char *source, *licence;
} recs;

static void copy(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "");
}
#define COPY(field, src) copy(field, sizeof(field), src)

/* The record's source: the path, or when it does not fit, its folder (which groups the files of
 * one experiment) + "/..." + the end of the file name (which keeps the extension). */
static void set_source(char *dst, size_t cap, const char *path)
{
    size_t len = strlen(path);
    const char *slash = strrchr(path, '/');
    size_t dir = slash ? (size_t)(slash - path) : 0;
    if (len < cap || dir + 5 + 8 >= cap) {
        copy(dst, cap, path);
        return;
    }
    size_t tail = cap - 1 - dir - 4; /* "/..." */
    snprintf(dst, cap, "%.*s/...%s", (int)dir, path, path + len - tail);
}

static ec_run_record *add_rec(recs *rs, ec_energy_definition def)
{
    if (rs->n == rs->cap) {
        size_t nc = rs->cap ? rs->cap * 2 : 32;
        ec_run_record *p = realloc(rs->v, nc * sizeof *p);
        if (!p) {
            ec_set_error("out of memory");
            return NULL;
        }
        rs->v = p;
        rs->cap = nc;
    }
    ec_run_record *r = &rs->v[rs->n++];
    ec_run_record_init(r);
    r->run_index = 0; /* a run unless the mapping says it is a summary (-1) */
    set_source(r->source, sizeof r->source, rs->source);
    COPY(r->licence, rs->licence);
    r->energy_definition = def;
    return r;
}

/* The energy figure in the source's definition, mirrored into our gross/net field of the same
 * definition so code that reads either finds it. */
static void set_energy(ec_run_record *r, double j_per_1k)
{
    r->energy_j_per_1k = j_per_1k;
    if (r->energy_definition == EC_ENERGY_GROSS) r->j_per_1k_gross = j_per_1k;
    if (r->energy_definition == EC_ENERGY_NET) r->j_per_1k_net = j_per_1k;
}

/* Strict number: the whole field must parse; empty or text is NaN ("+0.33" is accepted). */
static double num(const char *s)
{
    if (!s) return NAN;
    while (isspace((unsigned char)*s)) s++;
    if (!*s) return NAN;
    char *end;
    double v = strtod(s, &end);
    while (isspace((unsigned char)*end)) end++;
    return *end || end == s ? NAN : v;
}

/* A count read from a file: a whole number in [0, 1e9]; -1 when absent (unknown); -2 when
 * present but not such a number, which the record check (ec_run_record_check) then refuses.
 * Checked before the cast: converting an out-of-range double to an int is undefined. */
static int whole(double v)
{
    if (isnan(v)) return -1;
    return isfinite(v) && v >= 0 && v <= 1e9 && v == floor(v) ? (int)v : -2;
}

static int inum(const char *s) { return whole(num(s)); }

/* Our precision name for a source's spelling; "" when not recognised (kept unknown). */
static void set_precision(ec_run_record *r, const char *text)
{
    ec_precision p;
    if (text && ec_precision_from_text(text, &p) == 0) COPY(r->precision, ec_precision_name(p));
}

/* The source's model name without an organisation/path prefix. */
static void set_model(ec_run_record *r, const char *name)
{
    const char *s = name ? strrchr(name, '/') : NULL;
    COPY(r->model, s ? s + 1 : name);
    const ec_model_config *c = ec_catalog_match(r->model);
    if (c) r->params_b = (double)ec_model_param_count(c) / 1e9;
}

/* ---------------------------------------------------------------- CSV ---- */

typedef struct {
    const ec_csv *c;
    size_t row;
} csvrow;

static const char *col(const csvrow *r, const char *name)
{
    int i = ec_csv_column(r->c, name);
    if (i < 0 || (size_t)i >= r->c->rows[r->row].nfields) return NULL;
    return r->c->rows[r->row].fields[i];
}
static double dcol(const csvrow *r, const char *name)
{
    return num(col(r, name));
}

static int has_cols(const ec_csv *c, const char *const *names)
{
    for (; *names; names++)
        if (ec_csv_column(c, *names) < 0) return 0;
    return 1;
}

/* Index of run within its configuration: count of earlier rows with the same key. */
static int run_index_of(const recs *rs, const ec_run_record *r)
{
    int k = 0;
    for (size_t i = 0; i + 1 < rs->n; i++)
        if (&rs->v[i] != r && ec_same_config(&rs->v[i], r)) k++;
    return k;
}

static void a800_sweep(ec_run_record *r)
{
    COPY(r->gpu_name, A800_SWEEP_GPU);
    set_model(r, A800_SWEEP_MODEL);
    COPY(r->precision, "int8"); /* llm_int8_threshold = 0: pure INT8 */
    COPY(r->kernels, "bitsandbytes");
    COPY(r->session_id, A800_SWEEP_SESSION);
    r->prompt_len = A800_SWEEP_LEN;
    r->gen_len = A800_SWEEP_LEN;
}

static int csv_batch_raw(const ec_csv *c, recs *rs)
{
    for (size_t i = 1; i < c->nrows; i++) {
        csvrow x = {c, i};
        ec_run_record *r = add_rec(rs, EC_ENERGY_GROSS);
        if (!r) return -1;
        a800_sweep(r);
        r->batch = inum(col(&x, "batch_size"));
        r->total_time_s = r->decode.time_s = dcol(&x, "total_time_s");
        r->tok_s = dcol(&x, "throughput_tok_s");
        r->avg_power_w = dcol(&x, "avg_power_w");
        r->gpu_energy_j = dcol(&x, "total_energy_j");
        double tok = dcol(&x, "tokens_generated");
        r->decode.tokens = whole(tok);
        set_energy(r, dcol(&x, "energy_per_1k_tokens_j"));
        r->run_index = run_index_of(rs, r);
    }
    return 0;
}

/* pandas' to_csv of a frame with two-level columns: header rows (name, stat), then a row naming
 * the index ("batch_size"), then data. Column = the one whose two header cells match. */
static int multi_col(const ec_csv *c, const char *name, const char *stat)
{
    const ec_csv_row *h0 = &c->rows[0], *h1 = &c->rows[1];
    for (size_t i = 1; i < h0->nfields && i < h1->nfields; i++)
        if (!strcmp(h0->fields[i], name) && !strcmp(h1->fields[i], stat)) return (int)i;
    return -1;
}

static int is_batch_summary(const ec_csv *c)
{
    return c->nrows >= 3 && c->rows[0].nfields > 1 && !c->rows[0].fields[0][0] &&
           c->rows[1].nfields > 1 && !strcmp(c->rows[2].fields[0], "batch_size") &&
           multi_col(c, "throughput_tok_s", "mean") > 0 &&
           multi_col(c, "energy_per_1k_tokens_j", "mean") > 0;
}

static double cell(const ec_csv *c, size_t row, int i)
{
    return i >= 0 && (size_t)i < c->rows[row].nfields ? num(c->rows[row].fields[i]) : NAN;
}

static int csv_batch_summary(const ec_csv *c, recs *rs)
{
    int t = multi_col(c, "throughput_tok_s", "mean"), p = multi_col(c, "avg_power_w", "mean");
    int e = multi_col(c, "energy_per_1k_tokens_j", "mean");
    for (size_t i = 3; i < c->nrows; i++) {
        ec_run_record *r = add_rec(rs, EC_ENERGY_GROSS);
        if (!r) return -1;
        a800_sweep(r);
        r->run_index = -1;
        r->batch = inum(c->rows[i].fields[0]);
        r->tok_s = cell(c, i, t);
        r->avg_power_w = cell(c, i, p);
        set_energy(r, cell(c, i, e));
    }
    return 0;
}

/* The dashboard's copy of the same sweep (J per request of A800_SWEEP_LEN tokens each). */
static int csv_dash_batch(const ec_csv *c, recs *rs)
{
    for (size_t i = 1; i < c->nrows; i++) {
        csvrow x = {c, i};
        ec_run_record *r = add_rec(rs, EC_ENERGY_GROSS);
        if (!r) return -1;
        a800_sweep(r);
        r->run_index = -1;
        r->batch = inum(col(&x, "bs"));
        r->tok_s = dcol(&x, "throughput");
        r->avg_power_w = dcol(&x, "power_w");
        set_energy(r, dcol(&x, "energy_per_request_j") / A800_SWEEP_LEN * 1000.0);
    }
    return 0;
}

/* Energy definition of a seed figure by GPU, where one table mixes GPUs: only the RTX 4090D
 * Feb-2026 set is idle-subtracted; the RTX 5090 and A800 sets are P/throughput; T4 is unknown. */
static ec_energy_definition def_by_gpu(const char *gpu)
{
    if (strstr(gpu, "4090D") || strstr(gpu, "4090 D")) return EC_ENERGY_NET;
    if (strstr(gpu, "5090") || strstr(gpu, "A800")) return EC_ENERGY_GROSS;
    return EC_ENERGY_UNKNOWN;
}

/* "... BS=8 ..." in a text: the batch size, else -1. */
static int batch_in(const char *text)
{
    const char *p = text ? strstr(text, "BS=") : NULL;
    if (!p) return -1;
    char *end;
    long v = strtol(p + 3, &end, 10);
    return end > p + 3 && v > 0 && v < 1000000 ? (int)v : -1;
}

static int csv_dash_constants(const ec_csv *c, recs *rs)
{
    for (size_t i = 1; i < c->nrows; i++) {
        csvrow x = {c, i};
        const char *gpu = col(&x, "gpu"), *model = col(&x, "model"), *note = col(&x, "note");
        ec_run_record *r = add_rec(rs, def_by_gpu(gpu ? gpu : ""));
        if (!r) return -1;
        r->run_index = -1;
        COPY(r->gpu_name, gpu);
        /* "Mistral-7B Pure INT8 BS=1": the model is the first word; the batch is written in. */
        char m[64];
        copy(m, sizeof m, model);
        int bs = batch_in(m);
        if (bs < 0) bs = batch_in(note);
        if (strstr(m, " BS=")) *strchr(m, ' ') = '\0';
        set_model(r, m);
        set_precision(r, col(&x, "precision"));
        /* The seeds' per-GPU tables are batch 1 unless a row says otherwise; the T4 rows come
         * from a batch sweep and say it only once, so theirs stays unknown. */
        r->batch = bs > 0 ? bs : (gpu && strstr(gpu, "T4")) ? -1 : 1;
        r->tok_s = dcol(&x, "throughput_tok_s");
        r->avg_power_w = dcol(&x, "power_w");
        set_energy(r, dcol(&x, "energy_j_per_1k"));
    }
    return 0;
}

/* ecocompute-ai/data/{rtx5090,t4}_benchmark_results.csv: the GPU is only in the file name. */
static int csv_bench_results(const ec_csv *c, recs *rs, const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *gpu = strstr(base, "5090") ? "NVIDIA GeForce RTX 5090"
                      : (!strncmp(base, "t4", 2) || strstr(base, "_t4")) ? "Tesla T4" : "";
    for (size_t i = 1; i < c->nrows; i++) {
        csvrow x = {c, i};
        ec_run_record *r = add_rec(rs, def_by_gpu(gpu));
        if (!r) return -1;
        r->run_index = -1;
        COPY(r->gpu_name, gpu);
        set_model(r, col(&x, "model"));
        set_precision(r, col(&x, "config"));
        r->batch = 1;
        r->tok_s = dcol(&x, "throughput_mean");
        r->avg_power_w = dcol(&x, "power_mean");
        set_energy(r, dcol(&x, "energy_per_1k_tokens_mean"));
    }
    return 0;
}

static int csv_a800_summary(const ec_csv *c, recs *rs)
{
    for (size_t i = 1; i < c->nrows; i++) {
        csvrow x = {c, i};
        ec_run_record *r = add_rec(rs, EC_ENERGY_GROSS);
        if (!r) return -1;
        r->run_index = -1;
        COPY(r->gpu_name, col(&x, "gpu"));
        set_model(r, col(&x, "model"));
        set_precision(r, col(&x, "config"));
        COPY(r->kernels, "bitsandbytes");
        r->batch = 1;
        r->tok_s = dcol(&x, "throughput");
        r->avg_power_w = dcol(&x, "power_w");
        r->perplexity = dcol(&x, "ppl");
        set_energy(r, dcol(&x, "energy_j_1k"));
    }
    return 0;
}

/* ppl_yi1.5_6b_wikitext2 (CSV): its JSON twin names the GPU. */
static int csv_ppl(const ec_csv *c, recs *rs)
{
    for (size_t i = 1; i < c->nrows; i++) {
        csvrow x = {c, i};
        ec_run_record *r = add_rec(rs, EC_ENERGY_UNKNOWN);
        if (!r) return -1;
        COPY(r->gpu_name, "NVIDIA GeForce RTX 4090D");
        set_model(r, col(&x, "model_name"));
        set_precision(r, col(&x, "config"));
        r->perplexity = dcol(&x, "perplexity");
    }
    return 0;
}

static int csv_rtxpro_runs(const ec_csv *c, recs *rs)
{
    for (size_t i = 1; i < c->nrows; i++) {
        csvrow x = {c, i};
        ec_run_record *r = add_rec(rs, EC_ENERGY_GROSS);
        if (!r) return -1;
        COPY(r->gpu_name, RTXPRO_GPU);
        set_model(r, RTXPRO_E2E_MODEL);
        set_precision(r, col(&x, "precision"));
        r->batch = inum(col(&x, "batch"));
        r->prompt_len = inum(col(&x, "prompt_tokens_per_sample"));
        r->gen_len = inum(col(&x, "max_new_tokens"));
        double tok = dcol(&x, "generated_tokens_total");
        r->decode.tokens = whole(tok);
        r->total_time_s = dcol(&x, "elapsed_s");
        r->tok_s = dcol(&x, "throughput_tok_s");
        r->gpu_energy_j = dcol(&x, "energy_j");
        r->avg_power_w = dcol(&x, "avg_power_w");
        r->peak_power_w = dcol(&x, "peak_power_w");
        set_energy(r, dcol(&x, "energy_per_1k_tokens_j"));
        int run = inum(col(&x, "run"));
        r->run_index = run > 0 ? run - 1 : run_index_of(rs, r);
    }
    return 0;
}

/* Prefill/decode phase matrices: "active" figures have the idle power (idle_power_w) taken out;
 * each decode call makes decode-length tokens per sequence. */
static int csv_phase_matrix(const ec_csv *c, recs *rs)
{
    for (size_t i = 1; i < c->nrows; i++) {
        csvrow x = {c, i};
        ec_run_record *r = add_rec(rs, EC_ENERGY_NET);
        if (!r) return -1;
        COPY(r->gpu_name, RTXPRO_GPU);
        set_model(r, col(&x, "model"));
        set_precision(r, col(&x, "precision"));
        r->batch = inum(col(&x, "batch_size"));
        r->gen_len = inum(col(&x, "max_new_tokens"));
        r->idle_power_w = dcol(&x, "idle_power_w");
        r->prefill.time_s = dcol(&x, "prefill_duration_s_total");
        r->prefill.gpu_energy_net_j = dcol(&x, "prefill_active_energy_j_total");
        r->prefill.avg_power_w = dcol(&x, "prefill_active_power_w") + r->idle_power_w;
        r->decode.time_s = dcol(&x, "decode_duration_s_total");
        r->decode.gpu_energy_net_j = dcol(&x, "decode_active_energy_j_total");
        r->decode.avg_power_w = dcol(&x, "decode_active_power_w") + r->idle_power_w;
        r->avg_power_w = r->decode.avg_power_w;
        r->tok_s = dcol(&x, "decode_tokens_per_s");
        double per_call = dcol(&x, "decode_active_energy_j_per_32_tokens");
        if (r->batch > 0) set_energy(r, per_call / (32.0 * r->batch) * 1000.0);
    }
    return 0;
}

static int csv_phase_summary(const ec_csv *c, recs *rs)
{
    for (size_t i = 1; i < c->nrows; i++) {
        csvrow x = {c, i};
        ec_run_record *r = add_rec(rs, EC_ENERGY_NET);
        if (!r) return -1;
        r->run_index = -1;
        COPY(r->gpu_name, RTXPRO_GPU);
        set_model(r, col(&x, "model"));
        set_precision(r, col(&x, "precision"));
        r->batch = inum(col(&x, "batch_size"));
        r->gen_len = 32; /* the matrices' max_new_tokens, which the column name carries */
        r->tok_s = dcol(&x, "decode_tokens_per_s");
        double per_call = dcol(&x, "decode_active_energy_j_per_32_tokens");
        if (r->batch > 0) set_energy(r, per_call / (32.0 * r->batch) * 1000.0);
    }
    return 0;
}

/* quant-energy rows carry the FP16 energy they were compared with; it becomes a record of its
 * own (precision fp16) so Δ vs fp16 can be recomputed — once per distinct value in a file. */
static int add_fp16_companion(recs *rs, const ec_run_record *q, double j1k, double ppl)
{
    if (!isfinite(j1k)) return 0;
    for (size_t i = 0; i < rs->n; i++) {
        const ec_run_record *o = &rs->v[i];
        if (!strcmp(o->precision, "fp16") && !strcmp(o->gpu_name, q->gpu_name) &&
            !strcmp(o->model, q->model) && o->energy_j_per_1k == j1k &&
            o->run_index == q->run_index)
            return 0;
    }
    ec_run_record keep = *q;
    ec_run_record *r = add_rec(rs, q->energy_definition);
    if (!r) return -1;
    *r = keep;
    COPY(r->precision, "fp16");
    r->kernels[0] = '\0';
    r->tok_s = r->avg_power_w = r->gpu_energy_j = r->total_time_s = NAN;
    r->j_per_1k_gross = r->j_per_1k_net = NAN;
    r->perplexity = ppl;
    set_energy(r, j1k);
    return 0;
}

static int csv_qe_measured(const ec_csv *c, recs *rs)
{
    for (size_t i = 1; i < c->nrows; i++) {
        csvrow x = {c, i};
        /* A curated table across sessions and sources with different definitions. */
        ec_run_record *r = add_rec(rs, EC_ENERGY_UNKNOWN);
        if (!r) return -1;
        r->run_index = -1;
        COPY(r->gpu_name, col(&x, "gpu"));
        COPY(r->gpu_arch, col(&x, "arch"));
        set_model(r, col(&x, "model"));
        r->params_b = dcol(&x, "params_b");
        set_precision(r, col(&x, "precision"));
        set_energy(r, dcol(&x, "energy_quant_j1k"));
        ec_run_record q = *r;
        if (add_fp16_companion(rs, &q, dcol(&x, "energy_fp16_j1k"), NAN)) return -1;
    }
    return 0;
}

static void qe_backend(ec_run_record *r, const char *backend)
{
    if (backend && strstr(backend, "bitsandbytes")) COPY(r->kernels, "bitsandbytes");
}

/* quant-energy per-trial rows (paired energy+quality, and the INT8 repeats). */
static int csv_qe_runs(const ec_csv *c, recs *rs)
{
    for (size_t i = 1; i < c->nrows; i++) {
        csvrow x = {c, i};
        ec_run_record *r = add_rec(rs, EC_ENERGY_GROSS); /* direct NVML, no idle subtraction */
        if (!r) return -1;
        COPY(r->gpu_name, col(&x, "gpu"));
        COPY(r->gpu_arch, col(&x, "gpu_arch"));
        COPY(r->session_id, col(&x, "session"));
        COPY(r->timestamp_utc, col(&x, "timestamp_utc"));
        COPY(r->driver, col(&x, "nvidia_driver"));
        set_model(r, col(&x, "model"));
        r->params_b = dcol(&x, "params_b");
        set_precision(r, col(&x, "precision"));
        qe_backend(r, col(&x, "quantization_backend"));
        r->batch = inum(col(&x, "batch_size"));
        r->gen_len = inum(col(&x, "generated_tokens_per_iter"));
        r->tok_s = dcol(&x, "throughput_tok_s");
        r->avg_power_w = dcol(&x, "avg_power_w");
        r->gpu_energy_j = dcol(&x, "total_energy_j");
        r->perplexity = dcol(&x, "perplexity");
        set_energy(r, dcol(&x, "energy_j_per_1k_tok"));
        int rep = inum(col(&x, "replicate"));
        r->run_index = rep > 0 ? rep - 1 : 0;
        ec_run_record q = *r;
        if (add_fp16_companion(rs, &q, dcol(&x, "fp16_energy_j_per_1k_tok"),
                               dcol(&x, "fp16_perplexity")))
            return -1;
    }
    return 0;
}

/* The summary of the INT8 repeats (same GPU, batch 1, 256 tokens, as the repeats file says). */
static int csv_qe_summary(const ec_csv *c, recs *rs)
{
    for (size_t i = 1; i < c->nrows; i++) {
        csvrow x = {c, i};
        ec_run_record *r = add_rec(rs, EC_ENERGY_GROSS);
        if (!r) return -1;
        r->run_index = -1;
        COPY(r->gpu_name, "NVIDIA GeForce RTX 4090");
        COPY(r->session_id, QE_REPEATS_SESSION);
        set_model(r, col(&x, "model"));
        r->params_b = dcol(&x, "params_b");
        set_precision(r, col(&x, "precision"));
        COPY(r->kernels, "bitsandbytes");
        r->batch = 1;
        r->gen_len = 256;
        r->tok_s = dcol(&x, "throughput_tok_s_mean");
        r->avg_power_w = dcol(&x, "avg_power_w_mean");
        set_energy(r, dcol(&x, "energy_j_per_1k_tok_mean"));
        ec_run_record q = *r;
        if (add_fp16_companion(rs, &q, dcol(&x, "fp16_energy_j_per_1k_tok_mean"), NAN)) return -1;
    }
    return 0;
}

typedef enum {
    CSV_BATCH_RAW, CSV_DASH_BATCH, CSV_DASH_CONST, CSV_BENCH, CSV_A800_SUMMARY, CSV_PPL,
    CSV_RTXPRO_RUNS, CSV_PHASE_MATRIX, CSV_PHASE_SUMMARY, CSV_QE_MEASURED, CSV_QE_RUNS,
    CSV_QE_SUMMARY, CSV_NTYPES
} csv_type;

/* The columns that identify each CSV type (a file must have all of them). */
static const struct {
    const char *name, *licence;
    const char *cols[10]; /* NULL-terminated */
} csv_types[CSV_NTYPES] = {
    [CSV_BATCH_RAW] = {"A800 batch-size sweep, per run", LIC_DYN_EVAL,
                       {"batch_size", "total_time_s", "throughput_tok_s", "avg_power_w",
                        "total_energy_j", "energy_per_1k_tokens_j", "tokens_generated"}},
    [CSV_DASH_BATCH] = {"dashboard batch-size table", LIC_DYN_EVAL,
                        {"bs", "throughput", "energy_per_request_j", "power_w"}},
    [CSV_DASH_CONST] = {"dashboard measured rows", LIC_DYN_EVAL,
                        {"gpu", "model", "precision", "throughput_tok_s", "power_w",
                         "energy_j_per_1k"}},
    [CSV_BENCH] = {"per-GPU benchmark summary", LIC_ECO_AI,
                   {"model", "config", "throughput_mean", "power_mean",
                    "energy_per_1k_tokens_mean", "n_runs"}},
    [CSV_A800_SUMMARY] = {"A800 large-model summary", LIC_ECO_AI,
                          {"model", "config", "gpu", "energy_j_1k", "throughput", "power_w"}},
    [CSV_PPL] = {"perplexity table", LIC_ECO_AI,
                 {"model_name", "config", "precision", "perplexity"}},
    [CSV_RTXPRO_RUNS] = {"RTX PRO 6000 end-to-end runs", LIC_GITHUB_IO,
                         {"precision", "batch", "max_new_tokens", "run", "generated_tokens_total",
                          "energy_j", "energy_per_1k_tokens_j", "avg_power_w"}},
    [CSV_PHASE_MATRIX] = {"RTX PRO 6000 phase matrix", LIC_GITHUB_IO,
                          {"model", "precision", "batch_size", "idle_power_w",
                           "decode_active_energy_j_per_32_tokens", "decode_tokens_per_s",
                           "prefill_active_energy_j_total"}},
    [CSV_PHASE_SUMMARY] = {"RTX PRO 6000 phase summary", LIC_GITHUB_IO,
                           {"model", "batch_size", "precision",
                            "decode_active_energy_j_per_32_tokens", "decode_energy_ratio_vs_fp16"}},
    [CSV_QE_MEASURED] = {"quant-energy curated table", LIC_QUANT_ENERGY,
                         {"gpu", "model", "params_b", "precision", "energy_fp16_j1k",
                          "energy_quant_j1k"}},
    [CSV_QE_RUNS] = {"quant-energy trials", LIC_QUANT_ENERGY,
                     {"run_id", "gpu", "model", "precision", "energy_j_per_1k_tok",
                      "fp16_energy_j_per_1k_tok", "throughput_tok_s", "avg_power_w"}},
    [CSV_QE_SUMMARY] = {"quant-energy INT8 repeats summary", LIC_QUANT_ENERGY,
                        {"model", "precision", "n_trials", "energy_j_per_1k_tok_mean",
                         "fp16_energy_j_per_1k_tok_mean", "throughput_tok_s_mean"}},
};

static int read_csv(const char *path, recs *rs)
{
    ec_csv c;
    if (ec_csv_read_file(path, &c)) return -1;
    int rc;
    if (c.nrows && is_batch_summary(&c)) {
        rs->licence = LIC_DYN_EVAL;
        rc = csv_batch_summary(&c, rs);
        ec_csv_free(&c);
        return rc;
    }
    int type = -1;
    /* The identifying column sets are chosen so that no file has two of them. */
    for (int t = 0; t < CSV_NTYPES && type < 0; t++)
        if (c.nrows && has_cols(&c, csv_types[t].cols)) type = t;
    if (type < 0) {
        char head[160] = "";
        size_t len = 0;
        for (size_t i = 0; c.nrows && i < c.rows[0].nfields && i < 6 && len < sizeof head; i++)
            len += (size_t)snprintf(head + len, sizeof head - len, "%s%s", i ? "," : "",
                                    c.rows[0].fields[i]);
        ec_csv_free(&c);
        return ec_set_error("%s: not a recognised seed-data file (CSV columns %s%s)", path,
                            head[0] ? head : "(none)", len >= 6 ? ",..." : "");
    }
    rs->licence = csv_types[type].licence;
    switch ((csv_type)type) {
    case CSV_BATCH_RAW: rc = csv_batch_raw(&c, rs); break;
    case CSV_DASH_BATCH: rc = csv_dash_batch(&c, rs); break;
    case CSV_DASH_CONST: rc = csv_dash_constants(&c, rs); break;
    case CSV_BENCH: rc = csv_bench_results(&c, rs, path); break;
    case CSV_A800_SUMMARY: rc = csv_a800_summary(&c, rs); break;
    case CSV_PPL: rc = csv_ppl(&c, rs); break;
    case CSV_RTXPRO_RUNS: rc = csv_rtxpro_runs(&c, rs); break;
    case CSV_PHASE_MATRIX: rc = csv_phase_matrix(&c, rs); break;
    case CSV_PHASE_SUMMARY: rc = csv_phase_summary(&c, rs); break;
    case CSV_QE_MEASURED: rc = csv_qe_measured(&c, rs); break;
    case CSV_QE_RUNS: rc = csv_qe_runs(&c, rs); break;
    case CSV_QE_SUMMARY: rc = csv_qe_summary(&c, rs); break;
    default: rc = ec_set_error("%s: internal: unmapped CSV type", path); break;
    }
    ec_csv_free(&c);
    return rc;
}

/* --------------------------------------------------------------- JSON ---- */

static double jnum(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}
static const char *jstr(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}
static const cJSON *jget(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* The A800 large-model JSONs name the model by a cache path ("/root/.../mistral_7b"); the
 * summary CSV of the same experiment (a800_summary.csv) names them properly. */
static const char *a800_model_name(const char *m)
{
    static const struct {
        const char *dir, *name;
    } names[] = {{"mistral_7b", "Mistral-7B-v0.1"}, {"qwen25_14b", "Qwen2.5-14B"},
                 {"yi15_9b", "Yi-1.5-9B"}};
    const char *base = m ? strrchr(m, '/') : NULL;
    base = base ? base + 1 : m;
    for (size_t i = 0; base && i < sizeof names / sizeof *names; i++)
        if (!strcmp(base, names[i].dir)) return names[i].name;
    return m;
}

static ec_run_record *a800_json_rec(recs *rs, const cJSON *root, ec_energy_definition def)
{
    ec_run_record *r = add_rec(rs, def);
    if (!r) return NULL;
    COPY(r->gpu_name, jstr(root, "gpu"));
    set_model(r, a800_model_name(jstr(root, "model")));
    set_precision(r, jstr(root, "config"));
    COPY(r->kernels, "bitsandbytes");
    r->batch = 1;
    return r;
}

static int json_a800_energy(const cJSON *root, recs *rs)
{
    const cJSON *runs = jget(root, "raw_runs"), *res = jget(root, "results"), *x;
    int k = 0;
    cJSON_ArrayForEach(x, runs)
    {
        ec_run_record *r = a800_json_rec(rs, root, EC_ENERGY_GROSS);
        if (!r) return -1;
        r->run_index = k++;
        double tok = jnum(x, "tokens");
        /* Generation stopped at EOS: the count differs by configuration (not length-pinned). */
        r->decode.tokens = whole(tok);
        r->tok_s = jnum(x, "throughput_tok_s");
        r->avg_power_w = jnum(x, "avg_power_w");
        set_energy(r, jnum(x, "energy_per_1k_tokens"));
    }
    if (cJSON_IsObject(res)) {
        ec_run_record *r = a800_json_rec(rs, root, EC_ENERGY_GROSS);
        if (!r) return -1;
        r->run_index = -1;
        r->tok_s = jnum(res, "throughput_mean");
        r->avg_power_w = jnum(res, "power_mean");
        set_energy(r, jnum(res, "energy_per_1k_tokens_mean"));
    }
    return 0;
}

static int json_a800_ppl(const cJSON *root, recs *rs)
{
    ec_run_record *r = a800_json_rec(rs, root, EC_ENERGY_UNKNOWN);
    if (!r) return -1;
    r->batch = -1;
    r->perplexity = jnum(jget(root, "results"), "perplexity");
    return 0;
}

static int json_ppl_experiment(const cJSON *root, recs *rs)
{
    const cJSON *res = jget(root, "results"), *x;
    const char *gpu = jstr(jget(root, "hardware"), "gpu");
    const char *model = jstr(jget(root, "model"), "name");
    cJSON_ArrayForEach(x, res)
    {
        if (!cJSON_IsObject(x)) continue;
        ec_run_record *r = add_rec(rs, EC_ENERGY_UNKNOWN);
        if (!r) return -1;
        COPY(r->gpu_name, gpu);
        set_model(r, model);
        set_precision(r, x->string); /* "fp16", "int8_default", "int8_pure" */
        r->perplexity = jnum(x, "perplexity");
    }
    return 0;
}

static int json_rtxpro_summary(const cJSON *root, recs *rs)
{
    ec_run_record *r = add_rec(rs, EC_ENERGY_GROSS);
    if (!r) return -1;
    r->run_index = -1;
    COPY(r->gpu_name, RTXPRO_GPU);
    set_model(r, RTXPRO_E2E_MODEL);
    set_precision(r, jstr(root, "precision"));
    double b = jnum(root, "batch"), g = jnum(root, "max_new_tokens");
    r->batch = whole(b);
    r->gen_len = whole(g);
    r->prompt_len = RTXPRO_E2E_PROMPT;
    r->tok_s = jnum(root, "throughput_tok_s_mean");
    r->avg_power_w = jnum(root, "avg_power_w_mean");
    set_energy(r, jnum(root, "energy_per_1k_tokens_j_mean"));
    return 0;
}

/* a800_metadata.json / pure_int8_metadata.json: results by batch size or by model, then by
 * configuration, each {throughput_mean, power_mean, energy_per_1k}. */
static int json_meta_results(const cJSON *root, recs *rs)
{
    const cJSON *hw = jget(jget(root, "hardware"), "gpu");
    const char *gpu = jstr(hw, "full_name") ? jstr(hw, "full_name") : jstr(hw, "model");
    const cJSON *gen = jget(jget(root, "measurement_protocol"), "generation_settings");
    double gen_len = jnum(gen, "max_new_tokens");
    const char *single_model = jstr(jget(root, "model_tested"), "name");
    const cJSON *tested = jget(root, "models_tested"), *grp, *cfg;
    cJSON_ArrayForEach(grp, jget(root, "results"))
    {
        if (!cJSON_IsObject(grp)) continue;
        int batch = 1;
        const char *model = single_model;
        if (!strncmp(grp->string, "batch_size_", 11)) {
            batch = atoi(grp->string + 11);
        } else {
            /* keyed by model_id: the models_tested entry gives its name */
            const cJSON *m;
            model = NULL;
            cJSON_ArrayForEach(m, tested)
            {
                const char *id = jstr(m, "model_id");
                if (id && !strcmp(id, grp->string)) model = jstr(m, "name");
            }
            if (!model) continue; /* "cross_model_summary": derived ratios, not measurements */
        }
        cJSON_ArrayForEach(cfg, grp)
        {
            if (!cJSON_IsObject(cfg) || !isfinite(jnum(cfg, "energy_per_1k"))) continue;
            ec_run_record *r = add_rec(rs, def_by_gpu(gpu ? gpu : ""));
            if (!r) return -1;
            r->run_index = -1;
            COPY(r->gpu_name, gpu);
            set_model(r, model);
            /* "fp16_baseline" is FP16 */
            char prec[32];
            copy(prec, sizeof prec, cfg->string);
            char *u = strstr(prec, "_baseline");
            if (u) *u = '\0';
            set_precision(r, prec);
            COPY(r->kernels, "bitsandbytes");
            r->batch = batch;
            r->gen_len = whole(gen_len);
            r->tok_s = jnum(cfg, "throughput_mean");
            r->avg_power_w = jnum(cfg, "power_mean");
            set_energy(r, jnum(cfg, "energy_per_1k"));
        }
    }
    return 0;
}

/* github.io benchmarks.js (ECO_DATA): the RTX 4090D "leaderboard" energies by model and series. */
static int json_eco_data(const cJSON *root, recs *rs)
{
    const cJSON *e = jget(root, "energy4090d"), *models = jget(e, "models"), *s;
    cJSON_ArrayForEach(s, jget(e, "series"))
    {
        int k = 0;
        const cJSON *v;
        cJSON_ArrayForEach(v, s)
        {
            const cJSON *m = cJSON_GetArrayItem(models, k++);
            if (!cJSON_IsNumber(v) || !cJSON_IsString(m)) continue;
            ec_run_record *r = add_rec(rs, EC_ENERGY_UNKNOWN);
            if (!r) return -1;
            r->run_index = -1;
            COPY(r->gpu_name, "RTX 4090D");
            set_model(r, m->valuestring);
            set_precision(r, s->string);
            set_energy(r, v->valuedouble);
        }
    }
    return 0;
}

/* github.io compare.html's benchmarkData: model → precision → {energy, ppl}; no GPU named. */
static int json_compare(const cJSON *root, recs *rs)
{
    const cJSON *m, *p;
    cJSON_ArrayForEach(m, jget(root, "benchmarkData"))
    {
        cJSON_ArrayForEach(p, m)
        {
            if (!cJSON_IsObject(p)) continue;
            ec_run_record *r = add_rec(rs, EC_ENERGY_UNKNOWN);
            if (!r) return -1;
            r->run_index = -1;
            set_model(r, m->string);
            set_precision(r, p->string);
            set_energy(r, jnum(p, "energy"));
            r->perplexity = jnum(p, "ppl");
        }
    }
    return 0;
}

static int read_json(const char *path, const char *text, recs *rs)
{
    cJSON *root = cJSON_Parse(text);
    if (!root) return ec_set_error("%s: not valid JSON", path);
    int rc;
    const cJSON *res = jget(root, "results");
    if (!cJSON_IsObject(root)) {
        rc = ec_set_error("%s: not a recognised seed-data file (JSON but not an object)", path);
    } else if (jstr(root, "config") && jstr(root, "gpu") && cJSON_IsArray(jget(root, "raw_runs"))) {
        rs->licence = LIC_ECO_AI;
        rc = json_a800_energy(root, rs);
    } else if (jstr(root, "config") && jstr(root, "gpu") && isfinite(jnum(res, "perplexity"))) {
        rs->licence = LIC_ECO_AI;
        rc = json_a800_ppl(root, rs);
    } else if (jstr(root, "experiment_id") && cJSON_IsObject(jget(res, "fp16")) &&
               isfinite(jnum(jget(res, "fp16"), "perplexity"))) {
        rs->licence = LIC_ECO_AI;
        rc = json_ppl_experiment(root, rs);
    } else if (jstr(root, "experiment_id") && cJSON_IsObject(res) && jget(root, "hardware")) {
        rs->licence = LIC_DYN_EVAL;
        rc = json_meta_results(root, rs);
    } else if (isfinite(jnum(root, "throughput_tok_s_mean")) &&
               isfinite(jnum(root, "energy_per_1k_tokens_j_mean"))) {
        rs->licence = LIC_GITHUB_IO;
        rc = json_rtxpro_summary(root, rs);
    } else if (cJSON_IsObject(jget(jget(root, "energy4090d"), "series"))) {
        rs->licence = LIC_GITHUB_IO;
        rc = json_eco_data(root, rs);
    } else if (cJSON_IsObject(jget(root, "benchmarkData"))) {
        rs->licence = LIC_GITHUB_IO;
        rc = json_compare(root, rs);
    } else {
        char keys[160] = "";
        size_t len = 0;
        int k = 0;
        const cJSON *x;
        cJSON_ArrayForEach(x, root)
        {
            if (k++ == 5 || len >= sizeof keys) break;
            len += (size_t)snprintf(keys + len, sizeof keys - len, "%s%s", len ? "," : "",
                                    x->string ? x->string : "");
        }
        rc = ec_set_error("%s: not a recognised seed-data file (JSON keys %s%s; environment "
                          "metadata and fitted curves carry no measurements)",
                          path, keys[0] ? keys : "(none)", k > 5 ? ",..." : "");
    }
    cJSON_Delete(root);
    return rc;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = ec_fopen_regular(path);
    if (!f) return NULL;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n + 1 >= cap) {
            size_t nc = cap ? cap * 2 : 65536;
            char *p = nc <= ((size_t)1 << 28) ? realloc(buf, nc) : NULL;
            if (!p) {
                free(buf);
                fclose(f);
                ec_set_error("%s: too large or out of memory", path);
                return NULL;
            }
            buf = p;
            cap = nc;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (!got) break;
    }
    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
}

int ec_seed_read(const char *path, ec_run_record **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    /* Source: the path below the last "seed-data/" (what research notes and docs cite). */
    const char *rel = NULL;
    for (const char *p = strstr(path, "seed-data/"); p; p = strstr(p + 1, "seed-data/"))
        rel = p + strlen("seed-data/");
    recs rs = {NULL, 0, 0, rel ? rel : path, ""};
    size_t len;
    char *text = slurp(path, &len);
    if (!text) return -1;
    size_t i = 0;
    while (i < len && isspace((unsigned char)text[i])) i++;
    int rc;
    if (i < len && (text[i] == '{' || text[i] == '[')) {
        rc = read_json(path, text, &rs);
    } else {
        free(text);
        text = NULL;
        rc = read_csv(path, &rs);
    }
    free(text);
    if (rc) {
        free(rs.v);
        return -1;
    }
    if (rs.n == 0) {
        free(rs.v);
        return ec_set_error("%s: a recognised seed-data file with no data rows", path);
    }
    *out = rs.v;
    *n = rs.n;
    return 0;
}
