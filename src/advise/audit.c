/* audit.c — the static audit of Python inference code and its requirements: energy traps found on
 * the token stream (pytokens.c), each with its file:line, the fix, and the measured impact with
 * its source rows from the reference dataset. Keyword arguments count wherever they are written:
 * in a call across lines, in a dict literal or dict(...) passed on as **kwargs. */
#include "ecocompute/advise.h"

#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "ecocompute/analysis.h"
#include "ecocompute/common.h"
#include "ecocompute/model.h"

/* Below this size NF4 cost energy in the seeds' measured rows (RTX 5090: Qwen2-1.5B +29 %,
 * Qwen2.5-3B +12 %) and above it saved energy (RTX 4090D: Yi-1.5-6B −29 %, Mistral-7B −35 %);
 * their own crossover fits put it at 3.4-5.2 B depending on the architecture. */
#define NF4_CROSSOVER_B 5.0

enum {
    R_INT8_DEFAULT = 0,
    R_NF4_SMALL,
    R_BATCH1_LOOP,
    R_FP8_EAGER,
    R_NIGHTLY_PIN,
    R_FP32_LOAD,
    R_CPU_OFFLOAD,
    R_NO_INFERENCE_MODE,
    R_UNREADABLE,
    R_COUNT
};

static const ec_audit_rule rules[R_COUNT] = {
    {"int8-default", "LLM.int8() default: load_in_8bit=True without llm_int8_threshold=0.0",
     "BitsAndBytesConfig(load_in_8bit=True, llm_int8_threshold=0.0) (pure INT8; check accuracy: "
     "+25 % perplexity on Yi-1.5-6B in the seeds), or fp16/bf16 when the model fits",
     EC_AUDIT_RED},
    {"nf4-small-model", "4-bit (NF4) on a model below the energy crossover (~5 B parameters)",
     "load the model in fp16/bf16: below the crossover NF4's dequantization costs more energy "
     "than the bytes it saves",
     EC_AUDIT_ORANGE},
    {"batch1-loop", "generate() called once per request inside a loop (batch 1)",
     "collect requests and call generate() on a padded batch (or serve with continuous batching)",
     EC_AUDIT_YELLOW},
    {"fp8-eager", "FP8 through torchao without torch.compile (eager dequantization every call)",
     "wrap the model in torch.compile(...) after quantize_(), or use fp16/bf16", EC_AUDIT_ORANGE},
    {"nightly-pin", "nightly / dev / pre-release build of torch, torchao or bitsandbytes pinned",
     "pin a released version; nightly builds changed energy by several x in the seeds' reports",
     EC_AUDIT_YELLOW},
    {"fp32-load", "model weights loaded in float32", "pass torch_dtype=torch.bfloat16 (or float16)",
     EC_AUDIT_YELLOW},
    {"cpu-offload", "layers offloaded to the CPU or disk through device_map / offload options",
     "use a GPU with enough memory, or a 4-bit/8-bit load that fits, instead of offloading",
     EC_AUDIT_ORANGE},
    {"no-inference-mode", "forward passes without torch.inference_mode() / torch.no_grad()",
     "run inference under `with torch.inference_mode():`", EC_AUDIT_YELLOW},
    {"unreadable", "a file the audit could not tokenize as Python (nothing in it was checked)",
     "check the file parses (python -m py_compile FILE)", EC_AUDIT_GRAY},
};

const ec_audit_rule *ec_audit_rules(size_t *n)
{
    *n = R_COUNT;
    return rules;
}

static const char *const severity_names[] = {"gray", "green", "yellow", "orange", "red"};

const char *ec_audit_severity_name(ec_audit_severity s)
{
    return (unsigned)s <= EC_AUDIT_RED ? severity_names[s] : "?";
}

int ec_audit_severity_parse(const char *text, ec_audit_severity *out)
{
    for (int i = 0; i <= EC_AUDIT_RED; i++)
        if (!strcmp(text, severity_names[i])) {
            *out = (ec_audit_severity)i;
            return 0;
        }
    return ec_set_error("unknown severity '%s' (gray, green, yellow, orange, red)", text);
}

void ec_audit_findings_free(ec_audit_findings *f)
{
    free(f->v);
    memset(f, 0, sizeof *f);
}

static int add(ec_audit_findings *f, int rule, ec_audit_severity sev, const char *file, int line,
               const char *message, const char *impact)
{
    if (f->n == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 16;
        ec_audit_finding *v = realloc(f->v, cap * sizeof *v);
        if (!v) return ec_set_error("out of memory");
        f->v = v;
        f->cap = cap;
    }
    ec_audit_finding *x = &f->v[f->n++];
    memset(x, 0, sizeof *x);
    x->rule = &rules[rule];
    x->severity = sev;
    snprintf(x->file, sizeof x->file, "%s", file);
    x->line = line;
    snprintf(x->message, sizeof x->message, "%s", message);
    snprintf(x->impact, sizeof x->impact, "%s", impact);
    return 0;
}

/* ---- measured impacts from the reference points ---- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int same_family(const char *a, const char *b)
{
    char ka[96], kb[96];
    ec_model_family_key(a, ka, sizeof ka);
    ec_model_family_key(b, kb, sizeof kb);
    return !strcmp(ka, kb);
}

static int comparable(const ec_ref_point *p)
{
    return p->verdict != (int)EC_SEV_ERROR && p->j_per_1k > 0 &&
           (p->def == EC_ENERGY_GROSS || p->def == EC_ENERGY_NET);
}

/* Median change of energy between pairs of points that differ only in precision (base fp16) or
 * only in batch (base batch 1), with the pairs listed. */
static int delta(const ec_advisor *a, const char *stack, const char *precision, int batch,
                 double min_b, double max_b, double *median, char *text, size_t cap)
{
    *median = NAN;
    text[0] = 0;
    if (!a) {
        snprintf(text, cap, "no reference data loaded");
        return 0;
    }
    static double v[512];
    static char keys[512][256];
    size_t n = 0, used = 0, nkeys = 0;
    char list[2048] = "";
    for (size_t i = 0; i < a->npts && n < 512; i++) {
        const ec_ref_point *p = &a->pts[i];
        if (!comparable(p) || strcmp(p->stack, stack)) continue;
        if (precision && strcmp(p->precision, precision)) continue;
        if (batch && p->batch != batch) continue;
        if (!(p->params_b >= min_b && p->params_b <= max_b)) continue;
        for (size_t j = 0; j < a->npts; j++) {
            const ec_ref_point *b = &a->pts[j];
            if (j == i || !comparable(b) || strcmp(b->stack, stack) || b->def != p->def ||
                strcmp(b->gpu_name, p->gpu_name) || !same_family(b->model, p->model))
                continue;
            if (precision && (strcmp(b->precision, "fp16") || b->batch != p->batch)) continue;
            if (batch && (b->batch != 1 || strcmp(b->precision, p->precision))) continue;
            double d = 100.0 * (p->j_per_1k / b->j_per_1k - 1);
            /* The seeds publish one measurement in several files (raw, summary, dashboard):
             * a pair equal to one already counted (GPU, model, batch, Δ to 0.1 %) is the same. */
            char key[256], have[96];
            ec_model_family_key(p->model, have, sizeof have);
            snprintf(key, sizeof key, "%s|%s|%d|%.1f", p->gpu[0] ? p->gpu : p->gpu_name, have,
                     p->batch, d);
            int seen = 0;
            for (size_t k = 0; k < nkeys && !seen; k++)
                seen = !strcmp(keys[k], key);
            if (seen || nkeys >= 512) break;
            memcpy(keys[nkeys++], key, sizeof key);
            v[n++] = d;
            size_t l = strlen(list);
            if (used < 6 && l + 200 < sizeof list) {
                snprintf(list + l, sizeof list - l, "%s%s %s b%d %+.0f%% (%s)", used ? "; " : "",
                         p->gpu[0] ? p->gpu : p->gpu_name, p->model, p->batch, d, p->source);
                used++;
            }
            break;
        }
    }
    if (!n) {
        snprintf(text, cap, "no measured pair in the reference dataset");
        return 0;
    }
    qsort(v, n, sizeof *v, cmp_double);
    *median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    snprintf(text, cap, "measured: median %+.0f%% energy per token over %zu pairs (%s%s)", *median,
             n, list, n > used ? "; ..." : "");
    return 0;
}

int ec_measured_delta(const ec_advisor *a, const char *stack, const char *precision,
                      double max_params_b, double min_params_b, double *median_pct, char *text,
                      size_t cap)
{
    return delta(a, stack, precision, 0, min_params_b, max_params_b, median_pct, text, cap);
}

/* ---- keyword arguments wherever they are written ---- */

typedef struct {
    const char *key; /* keyword name or dict key */
    size_t v0, v1;   /* value tokens [v0, v1) */
    int line;
    const char *callee; /* the called name, or "{" for a dict literal */
} kwpair;

typedef struct {
    kwpair *v;
    size_t n, cap;
} kwlist;

static void kw_push(kwlist *l, kwpair p)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 32;
        kwpair *v = realloc(l->v, cap * sizeof *v);
        if (!v) return;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = p;
}

static int op(const ec_pytoken *t, const char *s)
{
    return t->kind == EC_PYT_OP && !strcmp(t->text, s);
}

static int name(const ec_pytoken *t, const char *s)
{
    return t->kind == EC_PYT_NAME && !strcmp(t->text, s);
}

/* Index of the bracket closing the one at open, or n. */
static size_t closing(const ec_pytoken *t, size_t n, size_t open)
{
    int depth = 0;
    for (size_t i = open; i < n; i++) {
        if (t[i].kind != EC_PYT_OP) continue;
        if (strchr("([{", t[i].text[0]) && !t[i].text[1])
            depth++;
        else if (strchr(")]}", t[i].text[0]) && !t[i].text[1] && --depth == 0)
            return i;
    }
    return n;
}

/* Splits [a, b) at top-level commas and records keyword / dict entries. */
static void collect_pairs(const ec_pytoken *t, size_t n, kwlist *out)
{
    for (size_t i = 0; i < n; i++) {
        if (!(op(&t[i], "(") || op(&t[i], "{"))) continue;
        int is_dict = op(&t[i], "{");
        const char *callee =
            is_dict ? "{" : (i > 0 && t[i - 1].kind == EC_PYT_NAME ? t[i - 1].text : "(");
        size_t end = closing(t, n, i);
        size_t start = i + 1;
        for (size_t j = i + 1; j <= end && j < n; j++) {
            int top = 0;
            if (j == end)
                top = 1;
            else if (op(&t[j], ",")) {
                /* a comma at this bracket's own level */
                int depth = 0;
                for (size_t k = i + 1; k < j; k++) {
                    if (t[k].kind != EC_PYT_OP || t[k].text[1]) continue;
                    if (strchr("([{", t[k].text[0]))
                        depth++;
                    else if (strchr(")]}", t[k].text[0]))
                        depth--;
                }
                top = depth == 0;
            }
            if (!top) continue;
            if (j > start) {
                if (!is_dict && j - start >= 3 && t[start].kind == EC_PYT_NAME &&
                    op(&t[start + 1], "="))
                    kw_push(out, (kwpair){t[start].text, start + 2, j, t[start].line, callee});
                if (is_dict && j - start >= 3 && t[start].kind == EC_PYT_STRING &&
                    op(&t[start + 1], ":"))
                    kw_push(out, (kwpair){t[start].text, start + 2, j, t[start].line, callee});
            }
            start = j + 1;
        }
    }
}

static int value_is_true(const ec_pytoken *t, const kwpair *p)
{
    return p->v1 == p->v0 + 1 && name(&t[p->v0], "True");
}

static int value_is_zero(const ec_pytoken *t, const kwpair *p)
{
    if (p->v1 != p->v0 + 1 || t[p->v0].kind != EC_PYT_NUMBER) return 0;
    char *end;
    double x = strtod(t[p->v0].text, &end);
    return *end == 0 && x == 0.0;
}

/* Whether the value mentions a string or name containing one of the words. */
static int value_mentions(const ec_pytoken *t, const kwpair *p, const char *const *words)
{
    for (size_t i = p->v0; i < p->v1; i++)
        if (t[i].kind == EC_PYT_STRING || t[i].kind == EC_PYT_NAME)
            for (const char *const *w = words; *w; w++)
                if (!strcasecmp(t[i].text, *w)) return 1;
    return 0;
}

static const kwpair *find_key(const kwlist *l, const char *key)
{
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->v[i].key, key)) return &l->v[i];
    return NULL;
}

/* ---- model size from a model id string ---- */

static double params_of_id(const char *id)
{
    const ec_model_config *c = ec_catalog_match(id);
    if (c) return (double)ec_model_param_count(c) / 1e9;
    /* A size token "7B", "1.5b", "0.5B" after a separator. */
    for (const char *s = id; *s; s++) {
        if (!isdigit((unsigned char)*s) || (s > id && !strchr("-_/ ", s[-1]))) continue;
        char *end;
        double x = strtod(s, &end);
        if ((*end == 'B' || *end == 'b') && !isalnum((unsigned char)end[1]) && x > 0) return x;
    }
    return NAN;
}

/* The model ids a file names: the first argument of from_pretrained(...) / pipeline(model=...),
 * or a string assigned to a name containing "model". */
static double file_model_params(const ec_pytoken *t, size_t n, const kwlist *kw, char *id,
                                size_t cap)
{
    for (size_t i = 0; i + 2 < n; i++) {
        const ec_pytoken *s = NULL;
        if (t[i].kind == EC_PYT_NAME && strstr(t[i].text, "from_pretrained") &&
            op(&t[i + 1], "(") && t[i + 2].kind == EC_PYT_STRING)
            s = &t[i + 2];
        if (t[i].kind == EC_PYT_NAME && op(&t[i + 1], "=") && t[i + 2].kind == EC_PYT_STRING &&
            (i + 3 >= n || t[i + 3].kind == EC_PYT_NEWLINE)) {
            char low[96];
            size_t k = 0;
            for (; t[i].text[k] && k + 1 < sizeof low; k++)
                low[k] = (char)tolower((unsigned char)t[i].text[k]);
            low[k] = 0;
            if (strstr(low, "model")) s = &t[i + 2];
        }
        if (s && isfinite(params_of_id(s->text))) {
            snprintf(id, cap, "%s", s->text);
            return params_of_id(s->text);
        }
    }
    const kwpair *m = find_key(kw, "model");
    if (m && m->v1 == m->v0 + 1 && t[m->v0].kind == EC_PYT_STRING) {
        snprintf(id, cap, "%s", t[m->v0].text);
        return params_of_id(t[m->v0].text);
    }
    id[0] = 0;
    return NAN;
}

/* ---- the Python rules ---- */

static int audit_python(const ec_advisor *a, const char *file, const ec_pytoken *t, size_t n,
                        ec_audit_findings *f)
{
    kwlist kw = {0};
    collect_pairs(t, n, &kw);
    char msg[384], impact[768], id[128];
    double med;
    int rc = 0;

    /* int8-default */
    const kwpair *thr = find_key(&kw, "llm_int8_threshold");
    int pure = thr && value_is_zero(t, thr);
    for (size_t i = 0; i < kw.n && !rc; i++)
        if (!strcmp(kw.v[i].key, "load_in_8bit") && value_is_true(t, &kw.v[i]) && !pure) {
            delta(a, "hf-bnb", "int8-mixed", 0, 0, 1e9, &med, impact, sizeof impact);
            snprintf(msg, sizeof msg,
                     "load_in_8bit=True%s: bitsandbytes runs LLM.int8() with its "
                     "outlier threshold 6.0 (a 16-bit side path and host syncs every layer)",
                     thr ? " with a nonzero llm_int8_threshold"
                         : " without llm_int8_threshold=0.0");
            rc = add(f, R_INT8_DEFAULT, EC_AUDIT_RED, file, kw.v[i].line, msg, impact);
        }

    /* nf4-small-model */
    for (size_t i = 0; i < kw.n && !rc; i++) {
        int four = !strcmp(kw.v[i].key, "load_in_4bit") && value_is_true(t, &kw.v[i]);
        if (!four) continue;
        double pb = file_model_params(t, n, &kw, id, sizeof id);
        if (isnan(pb)) {
            delta(a, "hf-bnb", "nf4", 0, 0, NF4_CROSSOVER_B, &med, impact, sizeof impact);
            snprintf(msg, sizeof msg,
                     "4-bit load of a model whose size the audit cannot tell; below "
                     "~%.0f B parameters NF4 costs energy",
                     NF4_CROSSOVER_B);
            rc = add(f, R_NF4_SMALL, EC_AUDIT_GRAY, file, kw.v[i].line, msg, impact);
        } else if (pb < NF4_CROSSOVER_B) {
            delta(a, "hf-bnb", "nf4", 0, 0, NF4_CROSSOVER_B, &med, impact, sizeof impact);
            snprintf(msg, sizeof msg,
                     "4-bit load of %s (%.2g B parameters), below the ~%.0f B "
                     "crossover",
                     id, pb, NF4_CROSSOVER_B);
            rc = add(f, R_NF4_SMALL, EC_AUDIT_ORANGE, file, kw.v[i].line, msg, impact);
        } else {
            delta(a, "hf-bnb", "nf4", 0, NF4_CROSSOVER_B, 1e9, &med, impact, sizeof impact);
            snprintf(msg, sizeof msg,
                     "4-bit load of %s (%.2g B parameters), above the ~%.0f B "
                     "crossover: NF4 saves energy here",
                     id, pb, NF4_CROSSOVER_B);
            rc = add(f, R_NF4_SMALL, EC_AUDIT_GREEN, file, kw.v[i].line, msg, impact);
        }
    }

    /* cpu-offload */
    static const char *const offload_words[] = {"cpu", "disk", NULL};
    for (size_t i = 0; i < kw.n && !rc; i++) {
        const kwpair *p = &kw.v[i];
        int hit = (!strcmp(p->key, "device_map") && value_mentions(t, p, offload_words)) ||
                  !strcmp(p->key, "offload_folder") ||
                  (!strcmp(p->key, "llm_int8_enable_fp32_cpu_offload") && value_is_true(t, p));
        if (!hit) continue;
        snprintf(msg, sizeof msg,
                 "%s offloads weights off the GPU: those layers run at host "
                 "memory / PCIe bandwidth (tens of GB/s against TB/s of HBM)",
                 p->key);
        rc = add(f, R_CPU_OFFLOAD, EC_AUDIT_ORANGE, file, p->line, msg,
                 "no measured rows in the reference dataset (the physical model does not cover "
                 "offloading)");
    }

    /* fp32-load: an explicit float32 dtype, or a model load with no dtype at all */
    static const char *const f32_words[] = {"float32", "float", NULL};
    for (size_t i = 0; i < kw.n && !rc; i++) {
        const kwpair *p = &kw.v[i];
        if ((!strcmp(p->key, "torch_dtype") || !strcmp(p->key, "dtype")) &&
            value_mentions(t, p, f32_words)) {
            rc = add(f, R_FP32_LOAD, EC_AUDIT_ORANGE, file, p->line,
                     "float32 weights: twice the bytes of fp16 for every decode step",
                     "no float32 rows in the reference dataset; decode is memory-bound, so the "
                     "physical model gives about 2x the time and the byte energy of fp16");
        }
    }
    for (size_t i = 0; i + 1 < n && !rc; i++) {
        if (!(t[i].kind == EC_PYT_NAME && !strcmp(t[i].text, "from_pretrained") &&
              op(&t[i + 1], "(")))
            continue;
        /* Only models: the object is AutoModel..., ...ForCausalLM, ...Model. */
        if (i < 2 || !op(&t[i - 1], ".") || t[i - 2].kind != EC_PYT_NAME ||
            !(strstr(t[i - 2].text, "Model") || strstr(t[i - 2].text, "ForCausalLM")))
            continue;
        size_t end = closing(t, n, i + 1);
        int has_dtype = 0;
        for (size_t j = i + 2; j < end; j++)
            if ((t[j].kind == EC_PYT_NAME &&
                 (!strcmp(t[j].text, "torch_dtype") || !strcmp(t[j].text, "dtype") ||
                  !strcmp(t[j].text, "quantization_config") || !strcmp(t[j].text, "load_in_8bit") ||
                  !strcmp(t[j].text, "load_in_4bit"))) ||
                op(&t[j], "**"))
                has_dtype = 1;
        if (!has_dtype)
            rc = add(f, R_FP32_LOAD, EC_AUDIT_YELLOW, file, t[i].line,
                     "from_pretrained() without a dtype: transformers 4.x loads float32 unless "
                     "told otherwise (5.x defaults to the checkpoint's dtype)",
                     "no float32 rows in the reference dataset; decode is memory-bound, so the "
                     "physical model gives about 2x the time and the byte energy of fp16");
    }

    /* fp8-eager */
    static const char *const fp8_names[] = {"Float8WeightOnlyConfig",
                                            "float8_weight_only",
                                            "Float8DynamicActivationFloat8WeightConfig",
                                            "float8_dynamic_activation_float8_weight",
                                            "Float8StaticActivationFloat8WeightConfig",
                                            NULL};
    int compiled = 0, fp8_line = 0;
    for (size_t i = 0; i < n; i++) {
        if (name(&t[i], "compile") && i > 0 && op(&t[i - 1], ".")) compiled = 1;
        for (const char *const *w = fp8_names; *w && !fp8_line; w++)
            if (name(&t[i], *w)) fp8_line = t[i].line;
    }
    if (!rc && fp8_line && !compiled) {
        delta(a, "reference", "fp8", 0, 0, 1e9, &med, impact, sizeof impact);
        char tagged[1024];
        snprintf(tagged, sizeof tagged,
                 "ecocompute's reference kernels (torchao's eager dataflow: "
                 "dequantize the whole weight every call) on H100, %s",
                 impact);
        rc = add(f, R_FP8_EAGER, EC_AUDIT_ORANGE, file, fp8_line,
                 "torchao float8 quantization and no torch.compile in this file: eager mode "
                 "dequantizes every weight on every call",
                 tagged);
    }

    /* batch1-loop: generate() inside a for/while body */
    int loop_indent[64], nloops = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        int first = i == 0 || t[i - 1].kind == EC_PYT_NEWLINE;
        if (first) {
            while (nloops && t[i].indent <= loop_indent[nloops - 1])
                nloops--;
            size_t k = name(&t[i], "async") && i + 1 < n ? i + 1 : i;
            if ((name(&t[k], "for") || name(&t[k], "while")) && nloops < 64)
                loop_indent[nloops++] = t[i].indent;
        }
        if (nloops && name(&t[i], "generate") && i > 0 && op(&t[i - 1], ".") && i + 1 < n &&
            op(&t[i + 1], "(")) {
            delta(a, "hf-bnb", NULL, 8, 0, 1e9, &med, impact, sizeof impact);
            char tagged[1024];
            snprintf(tagged, sizeof tagged, "batch 8 vs batch 1, %s", impact);
            rc = add(f, R_BATCH1_LOOP, EC_AUDIT_YELLOW, file, t[i].line,
                     "generate() inside a loop: one request per call keeps the GPU at batch 1",
                     tagged);
        }
    }

    /* no-inference-mode */
    int guarded = 0, gen_line = 0, forward_line = 0;
    for (size_t i = 0; i < n; i++) {
        if (name(&t[i], "inference_mode") || name(&t[i], "no_grad")) guarded = 1;
        if (!gen_line && name(&t[i], "generate") && i > 0 && op(&t[i - 1], "."))
            gen_line = t[i].line;
        if (!forward_line && name(&t[i], "model") && i + 1 < n && op(&t[i + 1], "(") &&
            (i == 0 || !op(&t[i - 1], ".")))
            forward_line = t[i].line;
    }
    if (!rc && !guarded && forward_line)
        rc = add(f, R_NO_INFERENCE_MODE, EC_AUDIT_YELLOW, file, forward_line,
                 "model(...) called without torch.inference_mode()/no_grad(): autograd keeps "
                 "activations and bookkeeping for a backward pass that never comes",
                 "no measured rows in the reference dataset");
    else if (!rc && !guarded && gen_line)
        rc = add(f, R_NO_INFERENCE_MODE, EC_AUDIT_GREEN, file, gen_line,
                 "generate() without torch.inference_mode(): harmless, transformers' generate() "
                 "already runs under torch.no_grad()",
                 "none expected");
    free(kw.v);
    return rc;
}

/* ---- requirements.txt / pyproject.toml ---- */

static int audit_requirements(const char *file, const char *text, size_t len, ec_audit_findings *f)
{
    static const char *const pkgs[] = {"torch", "torchao", "bitsandbytes", NULL};
    static const char *const marks[] = {"dev", "nightly", "rc", "git+", "--pre", NULL};
    size_t i = 0;
    int line = 0;
    while (i < len) {
        size_t e = i;
        while (e < len && text[e] != '\n')
            e++;
        line++;
        char buf[512];
        size_t l = e - i < sizeof buf - 1 ? e - i : sizeof buf - 1;
        memcpy(buf, text + i, l);
        buf[l] = 0;
        char *hash = strchr(buf, '#');
        if (hash) *hash = 0;
        for (char *p = buf; *p; p++)
            *p = (char)tolower((unsigned char)*p);
        int pkg = 0;
        for (const char *const *k = pkgs; *k && !pkg; k++) {
            const char *s = strstr(buf, *k);
            /* the package name as a word: "torch" but not "torchvision" */
            while (s && !pkg) {
                char after = s[strlen(*k)];
                int start_ok =
                    s == buf || !(isalnum((unsigned char)s[-1]) || s[-1] == '-' || s[-1] == '_');
                if (start_ok && !(isalnum((unsigned char)after) || after == '-' || after == '_'))
                    pkg = 1;
                s = strstr(s + 1, *k);
            }
        }
        int mark = strstr(buf, "--pre") || strstr(buf, "/nightly") || strstr(buf, "nightly/");
        if (pkg)
            for (const char *const *m = marks; *m && !mark; m++) {
                const char *s = strstr(buf, *m);
                if (!s) continue;
                /* "rc" only as a pre-release tag after a digit: 2.5.0rc1 */
                if (!strcmp(*m, "rc") && !(s > buf && isdigit((unsigned char)s[-1]))) continue;
                if (!strcmp(*m, "dev") &&
                    !(s > buf && (s[-1] == '.' || isdigit((unsigned char)s[-1]))))
                    continue;
                mark = 1;
            }
        if (mark) {
            char msg[384];
            snprintf(msg, sizeof msg, "pre-release or nightly pin: %.300s", buf);
            if (add(f, R_NIGHTLY_PIN, EC_AUDIT_YELLOW, file, line, msg,
                    "not in the reference dataset; the seeds' RTX 5090 FP8 result (+158..+701 %) "
                    "came from PyTorch 2.12.0.dev / torchao 0.17.0.dev nightlies and was not "
                    "reproduced"))
                return -1;
        }
        i = e + 1;
    }
    return 0;
}

int ec_audit_source(const ec_advisor *a, const char *name_, const char *text, size_t len,
                    int is_python, ec_audit_findings *f)
{
    if (!is_python) return audit_requirements(name_, text, len, f);
    ec_pytoken *t;
    size_t n;
    /* One file the tokenizer cannot read does not stop the audit of the others: it is a gray
     * finding, so the report says which file went unchecked. */
    if (ec_py_tokenize(text, len, &t, &n)) {
        char msg[384];
        snprintf(msg, sizeof msg, "not checked: %.300s", ec_last_error());
        const char *l = strstr(ec_last_error(), "line ");
        return add(f, R_UNREADABLE, EC_AUDIT_GRAY, name_, l ? atoi(l + 5) : 1, msg,
                   "none: the file was not checked");
    }
    int rc = audit_python(a, name_, t, n, f);
    ec_py_tokens_free(t, n);
    return rc;
}

static int kind_of(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t l = strlen(base);
    if (l > 3 && !strcmp(base + l - 3, ".py")) return 1;
    if (!strncmp(base, "requirements", 12) && l > 4 && !strcmp(base + l - 4, ".txt")) return 2;
    if (!strcmp(base, "pyproject.toml")) return 2;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int audit_file(const ec_advisor *a, const char *path, int kind, ec_audit_findings *f)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return ec_set_error("%s: cannot open", path);
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 65536 > cap) {
            cap = cap ? 2 * cap : 65536;
            if (cap > (64u << 20)) {
                free(buf);
                fclose(fp);
                return ec_set_error("%s: larger than 64 MiB", path);
            }
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(fp);
                return ec_set_error("out of memory");
            }
            buf = nb;
        }
        size_t r = fread(buf + len, 1, cap - len, fp);
        len += r;
        if (r == 0) break;
    }
    fclose(fp);
    if (memchr(buf, 0, len)) {
        free(buf);
        return ec_set_error("%s: a binary file, not source", path);
    }
    int rc = ec_audit_source(a, path, buf, len, kind == 1, f);
    free(buf);
    return rc;
}

static int walk(const ec_advisor *a, const char *dir, int depth, ec_audit_findings *f)
{
    if (depth > 32) return 0;
    DIR *dp = opendir(dir);
    if (!dp) return ec_set_error("%s: cannot open folder", dir);
    char **names = NULL;
    size_t nn = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(dp))) {
        if (e->d_name[0] == '.') continue; /* ., .., .git, .venv */
        if (nn == cap) {
            cap = cap ? 2 * cap : 64;
            char **v = realloc(names, cap * sizeof *v);
            if (!v) break;
            names = v;
        }
        names[nn++] = strdup(e->d_name);
    }
    closedir(dp);
    if (nn) qsort(names, nn, sizeof *names, by_name);
    int rc = 0;
    for (size_t i = 0; i < nn; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        struct stat st;
        if (!rc && lstat(path, &st) == 0) {
            if (S_ISDIR(st.st_mode) && strcmp(names[i], "__pycache__") &&
                strcmp(names[i], "node_modules"))
                rc = walk(a, path, depth + 1, f);
            else if (S_ISREG(st.st_mode) && kind_of(path))
                rc = audit_file(a, path, kind_of(path), f);
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

int ec_audit_path(const ec_advisor *a, const char *path, ec_audit_findings *f)
{
    struct stat st;
    if (stat(path, &st)) return ec_set_error("%s: no such file or folder", path);
    if (S_ISDIR(st.st_mode)) return walk(a, path, 0, f);
    /* A file named explicitly is audited as Python unless it is a requirements/pyproject file. */
    return audit_file(a, path, kind_of(path) == 2 ? 2 : 1, f);
}
