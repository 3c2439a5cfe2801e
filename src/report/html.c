/* html.c — the HTML report page: head (generator marker, inline style), header with the data's
 * coverage, the view tabs, the overview, compare and runs views (the JSON the script reads is
 * embedded here), the provenance blocks, and the small HTML helpers the other views share. The
 * charted views are in html_views.c. */
#include "report/report_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ecocompute/common.h"

const char *rp_num(char *buf, size_t len, double v)
{
    double a = fabs(v);
    if (!isfinite(v)) snprintf(buf, len, "–");
    else if (a >= 1e3) {
        /* thousands separated: 12,345 */
        char t[32];
        snprintf(t, sizeof t, "%.0f", v);
        size_t n = strlen(t), o = 0, d = (t[0] == '-');
        for (size_t i = 0; i < n && o + 2 < len; i++) {
            buf[o++] = t[i];
            size_t left = n - 1 - i;
            if (i >= d && left && left % 3 == 0) buf[o++] = ',';
        }
        buf[o] = '\0';
    } else if (a >= 100) snprintf(buf, len, "%.0f", v);
    else if (a >= 10) snprintf(buf, len, "%.1f", v);
    else if (a >= 1 || a == 0) snprintf(buf, len, "%.2f", v);
    else snprintf(buf, len, "%.3g", v);
    return buf;
}

void rp_html_text(FILE *out, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '&': fputs("&amp;", out); break;
        case '"': fputs("&quot;", out); break;
        default: fputc(*s, out);
        }
    }
}

void rp_empty(FILE *out, const char *why)
{
    fprintf(out, "<p class=\"empty\" role=\"status\">%s</p>\n", why);
}

void rp_td_num(FILE *out, double v)
{
    char b[40];
    if (isfinite(v)) fprintf(out, "<td class=\"num\" data-v=\"%.6g\">%s</td>", v, rp_num(b, sizeof b, v));
    else fputs("<td class=\"num\" data-v=\"\">–</td>", out);
}

void rp_td_int(FILE *out, long v)
{
    if (v >= 0) fprintf(out, "<td class=\"num\" data-v=\"%ld\">%ld</td>", v, v);
    else fputs("<td class=\"num\" data-v=\"\">–</td>", out);
}

void rp_td_ci(FILE *out, double lo, double hi)
{
    char a[40], b[40];
    if (isfinite(lo) && isfinite(hi))
        fprintf(out, "<td>%s – %s</td>", rp_num(a, sizeof a, lo), rp_num(b, sizeof b, hi));
    else
        fputs("<td>–</td>", out);
}

void rp_td_text(FILE *out, const char *s)
{
    fputs("<td>", out);
    rp_html_text(out, s);
    fputs("</td>", out);
}

void rp_th(FILE *out, const char *label, int numeric)
{
    fputs(numeric ? "<th scope=\"col\" class=\"num\">" : "<th scope=\"col\">", out);
    rp_html_text(out, label);
    fputs("</th>", out);
}

void rp_mark_config(const rp_model *m, const rp_config *c, char *used)
{
    for (size_t j = 0; j < c->nrows; j++) used[m->run_env[c->rows[j]]] = 1;
}

static const char *or_unknown(const char *s)
{
    return s[0] ? s : "unknown";
}

void rp_provenance(FILE *out, const rp_model *m, const char *used)
{
    size_t envs = 0, runs = 0;
    for (size_t i = 0; i < m->nenv; i++)
        if (!used || used[i]) envs++, runs += m->env[i].runs;
    if (!envs) return;
    fprintf(out, "<details class=\"prov\"><summary>Provenance: %zu run%s from %zu environment%s "
                 "(GPU, driver, commit, source)</summary><div class=\"wrap\"><table><thead><tr>",
            runs, runs == 1 ? "" : "s", envs, envs == 1 ? "" : "s");
    static const char *const h[] = {"GPU", "Driver", "CUDA", "Power limit (W)", "Host CPU",
                                    "ecocompute", "Commit", "Source", "Licence", "Sessions",
                                    "Runs"};
    for (int i = 0; i < 11; i++) rp_th(out, h[i], i == 3 || i >= 9);
    fputs("</tr></thead><tbody>", out);
    for (size_t i = 0; i < m->nenv; i++) {
        if (used && !used[i]) continue;
        const ec_run_record *k = m->env[i].key;
        fputs("<tr>", out);
        rp_td_text(out, or_unknown(k->gpu_name));
        rp_td_text(out, or_unknown(k->driver));
        rp_td_text(out, or_unknown(k->cuda));
        rp_td_num(out, k->power_limit_w);
        rp_td_text(out, or_unknown(k->host_cpu));
        rp_td_text(out, or_unknown(k->ecocompute_version));
        rp_td_text(out, or_unknown(k->git_commit));
        rp_td_text(out, k->source);
        rp_td_text(out, k->licence[0] ? k->licence : "ours");
        rp_td_int(out, (long)m->env[i].sessions);
        rp_td_int(out, (long)m->env[i].runs);
        fputs("</tr>", out);
    }
    fputs("</tbody></table></div><p class=\"note\">Protocol of each configuration (prompt and "
          "output length, batch, runs, quality gate) is in the view's table and the Runs view. "
          "Gross energy is what the board drew; net subtracts the session's idle power × "
          "duration (docs/measurement.md).</p></details>\n",
          out);
}

/* ---- header and overview ---- */

static void page_header(FILE *out, const rp_model *m)
{
    fputs("<header><h1>", out);
    rp_html_text(out, m->title);
    fputs("</h1><p class=\"sub\">", out);
    size_t defs[3] = {0, 0, 0};
    for (size_t i = 0; i < m->nc; i++)
        if (m->c[i].e.n) defs[m->c[i].def] += m->c[i].e.n;
    fprintf(out, "%zu run%s, %zu configuration%s", m->n, m->n == 1 ? "" : "s", m->nc,
            m->nc == 1 ? "" : "s");
    if (m->input[0]) {
        fputs(" from ", out);
        rp_html_text(out, m->input);
    }
    fprintf(out, ". Energies: %zu gross, %zu net, %zu of unknown definition (never mixed in one "
                 "comparison). Generated by " EC_REPORT_GENERATOR " %s.</p></header>\n",
            defs[0], defs[1], defs[2], ec_version());
}

static const char *const view_ids[] = {"overview", "precisions", "batch",   "crossover",
                                       "accuracy", "traces",     "compare", "runs"};
static const char *const view_names[] = {"Overview",          "Precisions",   "Batch size",
                                         "Crossover",         "Energy × accuracy",
                                         "Power traces",      "Compare",      "Runs"};
#define NVIEWS 8

static void nav(FILE *out)
{
    fputs("<nav aria-label=\"Views\"><ul>", out);
    for (int i = 0; i < NVIEWS; i++)
        fprintf(out, "<li><a href=\"#view-%s\" data-view=\"view-%s\">%s</a></li>", view_ids[i],
                view_ids[i], view_names[i]);
    fputs("</ul></nav>\n", out);
}

static int view_overview(FILE *out, const rp_model *m)
{
    fputs("<p class=\"note\">Per GPU × model, the configuration with the lowest mean energy per "
          "1000 generated tokens among those measured (in the first energy definition the pair "
          "has: gross, else net, else the source's own). Δ perplexity is against fp16 of the "
          "same model and batch when stored.</p>\n",
          out);
    if (!m->nbest) {
        rp_empty(out, m->n ? "No configuration carries an energy figure (the records hold "
                             "accuracy only): measure with <code>ecocompute bench</code>."
                           : "The input holds no runs. Measure some with <code>ecocompute bench"
                             "</code>, or report an export: <code>ecocompute report "
                             "docs/results/sweep-2026-11-26-packed-b1-b8.csv</code>.");
    } else {
        fputs("<div class=\"wrap\"><table class=\"sortable\" id=\"overview-table\"><thead><tr>",
              out);
        static const char *const h[] = {"GPU",        "Model",          "Greenest",
                                        "Energy def", "J/1k tok",       "95% CI (J/1k)",
                                        "tok/s",      "Δ vs fp16 (%)",  "Δ perplexity",
                                        "Configs",    "Runs"};
        for (int i = 0; i < 11; i++) rp_th(out, h[i], i >= 4 && i != 5);
        fputs("</tr></thead><tbody>", out);
        for (size_t b = 0; b < m->nbest; b++) {
            const rp_config *c = &m->c[m->best[b]];
            size_t configs = 0, runs = 0;
            for (size_t i = 0; i < m->nc; i++)
                if (!strcmp(m->c[i].key->gpu_name, c->key->gpu_name) &&
                    !strcmp(m->c[i].key->model, c->key->model))
                    configs++, runs += m->c[i].nrows;
            fputs("<tr>", out);
            rp_td_text(out, or_unknown(c->key->gpu_name));
            rp_td_text(out, c->key->model);
            rp_td_text(out, c->label);
            rp_td_text(out, rp_def_name(c->def, c->mixed));
            rp_td_num(out, c->e.mean);
            rp_td_ci(out, c->e.ci_lo, c->e.ci_hi);
            rp_td_num(out, c->tok.mean);
            rp_td_num(out, c->has_delta ? c->delta.pct : NAN);
            rp_td_num(out, c->d_ppl);
            rp_td_int(out, (long)configs);
            rp_td_int(out, (long)runs);
            fputs("</tr>", out);
        }
        fputs("</tbody></table></div>\n", out);
    }
    /* coverage */
    fputs("<h3>Coverage</h3><div class=\"wrap\"><table><tbody>", out);
    const struct {
        const char *label;
        size_t off;
    } dims[] = {
        {"GPUs", offsetof(ec_run_record, gpu_name)},
        {"Models", offsetof(ec_run_record, model)},
        {"Precisions", offsetof(ec_run_record, precision)},
        {"Kernel families", offsetof(ec_run_record, kernels)},
        {"Sessions", offsetof(ec_run_record, session_id)},
        {"Sources", offsetof(ec_run_record, source)},
    };
    for (size_t i = 0; i < sizeof dims / sizeof *dims; i++) {
        fputs("<tr><th scope=\"row\">", out);
        fputs(dims[i].label, out);
        fputs("</th>", out);
        size_t d;
        if (rp_count_distinct(m, dims[i].off, 0, &d)) return -1;
        rp_td_int(out, (long)d);
        fputs("</tr>", out);
    }
    int bmin = 0, bmax = 0;
    size_t gates[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < m->n; i++) {
        int b = m->r[i].batch;
        if (b > 0 && (!bmin || b < bmin)) bmin = b;
        if (b > bmax) bmax = b;
        gates[m->r[i].gate]++;
    }
    fprintf(out, "<tr><th scope=\"row\">Batch sizes</th><td>%d – %d</td></tr>", bmin, bmax);
    fprintf(out, "<tr><th scope=\"row\">Quality gate (runs)</th><td>%zu pass, %zu fail, %zu "
                 "pending, %zu unknown</td></tr>",
            gates[0], gates[1], gates[2], gates[3]);
    fprintf(out, "<tr><th scope=\"row\">Configurations with accuracy</th>");
    rp_td_int(out, (long)m->naccuracy);
    fputs("</tr></tbody></table></div>\n", out);
    rp_provenance(out, m, NULL);
    return 0;
}

/* ---- compare ---- */

static void json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        /* <, > and & escaped: the JSON sits inside a <script> element */
        if (ch == '"' || ch == '\\') fprintf(out, "\\%c", ch);
        else if (ch < 0x20 || ch == '<' || ch == '>' || ch == '&') fprintf(out, "\\u%04x", ch);
        else fputc(ch, out);
    }
    fputc('"', out);
}

static void json_number(FILE *out, double v)
{
    if (isfinite(v)) fprintf(out, "%.6g", v);
    else fputs("null", out);
}

static int view_compare(FILE *out, const rp_model *m)
{
    size_t shown = 0;
    for (size_t i = 0; i < m->nc; i++) shown += m->c[i].e.n > 0;
    fputs("<p class=\"note\">Pick 2–4 configurations: their energies (gross and net, per 1000 "
          "tokens and per request), Δ vs fp16, throughput and power side by side. Bars are "
          "scaled to the largest value of each row; alternate columns are hatched.</p>\n",
          out);
    if (shown < 2) {
        rp_empty(out, shown ? "Only one configuration carries an energy figure: there is "
                              "nothing to compare it with. Measure more with <code>ecocompute "
                              "bench --precision fp16,int8</code>."
                            : "No configuration carries an energy figure, so there is nothing "
                              "to compare. Measure with <code>ecocompute bench</code>.");
        return 0;
    }
    fputs("<div class=\"controls\" id=\"compare-ui\">", out);
    for (int i = 0; i < 4; i++)
        fprintf(out, "<label>Configuration %d <select id=\"cmp-%d\"></select></label>", i + 1,
                i);
    fputs("</div><div id=\"compare-out\"></div>\n<script type=\"application/json\" "
          "id=\"ec-configs\">{\"cols\":[\"name\",\"gpu\",\"model\",\"precision\",\"kernels\","
          "\"batch\",\"lengths\",\"definition\",\"e\",\"e_gross\",\"e_net\",\"req_gross\","
          "\"req_net\",\"delta_pct\",\"tok_s\",\"power_w\",\"ppl\",\"runs\"],\"rows\":[",
          out);
    /* Defaults: the greenest configuration of the first GPU × model and its fp16 baseline. */
    long d0 = -1, d1 = -1;
    size_t k = 0;
    char name[320], len[64];
    char *used = calloc(m->nenv ? m->nenv : 1, 1);
    for (size_t i = 0; i < m->nc; i++) {
        const rp_config *c = &m->c[i];
        if (!c->e.n) continue;
        if (m->nbest && i == m->best[0]) d0 = (long)k;
        if (used) rp_mark_config(m, c, used);
        snprintf(name, sizeof name, "%s · %s · %s", or_unknown(c->key->gpu_name), c->key->model,
                 c->label);
        snprintf(len, sizeof len, "prompt %d, %d new tok", c->key->prompt_len, c->key->gen_len);
        fputs(k ? ",[" : "[", out);
        json_string(out, name);
        fputc(',', out);
        json_string(out, or_unknown(c->key->gpu_name));
        fputc(',', out);
        json_string(out, c->key->model);
        fputc(',', out);
        json_string(out, c->key->precision);
        fputc(',', out);
        json_string(out, c->key->kernels);
        fprintf(out, ",%d,", c->key->batch);
        json_string(out, len);
        fputc(',', out);
        json_string(out, rp_def_name(c->def, c->mixed));
        const double v[] = {c->e.mean,        c->e_gross.mean,
                            c->e_net.mean,    c->req_gross.mean,
                            c->req_net.mean,  c->has_delta ? c->delta.pct : NAN,
                            c->tok.mean,      c->w.mean,
                            c->ppl.mean,      (double)c->nrows};
        for (size_t j = 0; j < sizeof v / sizeof *v; j++) {
            fputc(',', out);
            json_number(out, v[j]);
        }
        fputc(']', out);
        k++;
    }
    /* the second default: the baseline of the first, else the next configuration */
    if (d0 < 0) d0 = 0;
    k = 0;
    for (size_t i = 0; i < m->nc && d1 < 0; i++) {
        if (!m->c[i].e.n) continue;
        if (m->nbest && m->c[m->best[0]].baseline == (long)i) d1 = (long)k;
        k++;
    }
    if (d1 < 0 || d1 == d0) d1 = d0 == 0 ? 1 : 0;
    fprintf(out, "],\"defaults\":[%ld,%ld]}</script>\n", d0, d1);
    rp_provenance(out, m, used);
    free(used);
    return 0;
}

/* ---- runs ---- */

/* A dictionary of the repeated texts of the runs JSON (GPU, driver, commit...): each run stores
 * indices, so 10,000 runs stay within a few MB. */
typedef struct {
    const char **v;
    size_t n, cap;
    size_t *hash; /* open addressing: index + 1 */
    size_t hcap;
} dict;

static size_t str_hash(const char *s)
{
    size_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static long dict_id(dict *d, const char *s)
{
    if (d->n * 2 >= d->hcap) {
        size_t nc = d->hcap ? d->hcap * 2 : 256;
        size_t *h = calloc(nc, sizeof *h);
        if (!h) return -1;
        for (size_t i = 0; i < d->n; i++) {
            size_t p = str_hash(d->v[i]) & (nc - 1);
            while (h[p]) p = (p + 1) & (nc - 1);
            h[p] = i + 1;
        }
        free(d->hash);
        d->hash = h;
        d->hcap = nc;
    }
    size_t p = str_hash(s) & (d->hcap - 1);
    while (d->hash[p]) {
        if (!strcmp(d->v[d->hash[p] - 1], s)) return (long)(d->hash[p] - 1);
        p = (p + 1) & (d->hcap - 1);
    }
    if (d->n == d->cap) {
        size_t nc = d->cap ? d->cap * 2 : 64;
        const char **v = realloc(d->v, nc * sizeof *v);
        if (!v) return -1;
        d->v = v;
        d->cap = nc;
    }
    d->v[d->n] = s;
    d->hash[p] = ++d->n;
    return (long)d->n - 1;
}

enum { RC_TEXT, RC_DICT, RC_NUM };
typedef struct {
    const char *key, *label;
    int kind;
    size_t off; /* text field (RC_TEXT, RC_DICT) */
} run_col;

#define TEXT_COL(k, l, f, kind) {k, l, kind, offsetof(ec_run_record, f)}
static const run_col run_cols[] = {
    {"id", "Run id", RC_NUM, 0},
    TEXT_COL("gpu", "GPU", gpu_name, RC_DICT),
    TEXT_COL("model", "Model", model, RC_DICT),
    TEXT_COL("precision", "Precision", precision, RC_DICT),
    TEXT_COL("kernels", "Kernels", kernels, RC_DICT),
    {"batch", "Batch", RC_NUM, 0},
    {"tp", "TP", RC_NUM, 0},
    {"prompt", "Prompt (tok)", RC_NUM, 0},
    {"gen", "Gen (tok)", RC_NUM, 0},
    {"run", "Run #", RC_NUM, 0},
    {"gate", "Gate", RC_DICT, 0},
    {"def", "Energy def", RC_DICT, 0},
    {"e", "J/1k tok (as def)", RC_NUM, 0},
    {"e_gross", "J/1k gross", RC_NUM, 0},
    {"e_net", "J/1k net", RC_NUM, 0},
    {"tok_s", "tok/s", RC_NUM, 0},
    {"power", "Power (W)", RC_NUM, 0},
    {"gap", "Meter gap (%)", RC_NUM, 0},
    {"ppl", "Perplexity", RC_NUM, 0},
    TEXT_COL("driver", "Driver", driver, RC_DICT),
    TEXT_COL("commit", "Commit", git_commit, RC_DICT),
    TEXT_COL("session", "Session", session_id, RC_DICT),
    TEXT_COL("time", "Start (UTC)", timestamp_utc, RC_TEXT),
    TEXT_COL("source", "Source", source, RC_DICT),
};
#define NRUNCOLS (sizeof run_cols / sizeof *run_cols)

static double run_number(const ec_run_record *r, const char *key)
{
    ec_energy_definition d;
    if (!strcmp(key, "id")) return r->run_id >= 0 ? (double)r->run_id : NAN;
    if (!strcmp(key, "batch")) return r->batch > 0 ? r->batch : NAN;
    if (!strcmp(key, "tp")) return ec_record_gpus(r);
    if (!strcmp(key, "prompt")) return r->prompt_len >= 0 ? r->prompt_len : NAN;
    if (!strcmp(key, "gen")) return r->gen_len > 0 ? r->gen_len : NAN;
    if (!strcmp(key, "run")) return r->run_index;
    if (!strcmp(key, "e")) return ec_record_energy_per_1k(r, &d);
    if (!strcmp(key, "e_gross")) return r->j_per_1k_gross;
    if (!strcmp(key, "e_net")) return r->j_per_1k_net;
    if (!strcmp(key, "tok_s")) return r->tok_s;
    if (!strcmp(key, "power")) return r->avg_power_w;
    if (!strcmp(key, "gap")) return r->disagreement_pct;
    return r->perplexity;
}

static const char *run_text(const ec_run_record *r, const run_col *c)
{
    ec_energy_definition d;
    if (!strcmp(c->key, "gate")) return ec_gate_status_name(r->gate);
    if (!strcmp(c->key, "def")) {
        ec_record_energy_per_1k(r, &d);
        return ec_energy_definition_name(d);
    }
    return (const char *)r + c->off;
}

static int view_runs(FILE *out, const rp_model *m)
{
    fputs("<p class=\"note\">Every run with its GPU, driver, commit, protocol (prompt and output "
          "length, batch, run number) and the quality gate of its configuration. Search matches "
          "all words in any column; click a header to sort. Energies are J per 1000 generated "
          "tokens; “as def” is the figure in the row's own definition.</p>\n",
          out);
    if (!m->n) {
        rp_empty(out, "No runs in the input: there is nothing to list. Measure with "
                      "<code>ecocompute bench</code> or import data with <code>ecocompute "
                      "import</code>.");
        return 0;
    }
    fputs("<div class=\"controls\"><label>Search runs <input type=\"search\" id=\"runs-search\" "
          "placeholder=\"e.g. h100 int8 fail\"></label><button type=\"button\" id=\"runs-prev\">"
          "Previous</button><button type=\"button\" id=\"runs-next\">Next</button><span "
          "id=\"runs-count\" role=\"status\"></span></div>\n<div class=\"wrap\"><table "
          "class=\"sortable\" id=\"runs-table\"><thead><tr>",
          out);
    for (size_t i = 0; i < NRUNCOLS; i++) rp_th(out, run_cols[i].label, run_cols[i].kind == RC_NUM);
    fputs("</tr></thead><tbody></tbody></table></div>\n<script type=\"application/json\" "
          "id=\"ec-runs\">{\"cols\":[",
          out);
    for (size_t i = 0; i < NRUNCOLS; i++)
        fprintf(out, "%s{\"k\":\"%s\",\"n\":%d,\"d\":%d}", i ? "," : "", run_cols[i].key,
                run_cols[i].kind == RC_NUM, run_cols[i].kind == RC_DICT);
    fputs("],\"rows\":[", out);
    dict d = {0};
    int rc = 0;
    for (size_t i = 0; i < m->n && !rc; i++) {
        const ec_run_record *r = &m->r[i];
        fputs(i ? ",[" : "[", out);
        for (size_t j = 0; j < NRUNCOLS; j++) {
            if (j) fputc(',', out);
            const run_col *c = &run_cols[j];
            if (c->kind == RC_NUM) json_number(out, run_number(r, c->key));
            else if (c->kind == RC_TEXT) json_string(out, run_text(r, c));
            else {
                long id = dict_id(&d, run_text(r, c));
                if (id < 0) rc = ec_set_error("out of memory");
                fprintf(out, "%ld", id);
            }
        }
        fputc(']', out);
    }
    fputs("],\"dict\":[", out);
    for (size_t i = 0; i < d.n; i++) {
        if (i) fputc(',', out);
        json_string(out, d.v[i]);
    }
    fputs("]}</script>\n", out);
    free(d.v);
    free(d.hash);
    rp_provenance(out, m, NULL);
    return rc;
}

/* ---- the page ---- */

static const char *const view_intro[] = {
    "The greenest configuration per GPU and model, and what the data covers.",
    "Energy per 1000 tokens and per request by precision, gross and net with 95 % confidence "
    "intervals (Student t over the runs), Δ vs fp16 with Welch's 95 % CI; reference and fused "
    "kernels side by side.",
    "Energy per request and throughput against batch size (log axes) with the fitted scaling "
    "law J/request ≈ a·B<sup>−b</sup> and its 95 % band.",
    "Δ energy vs fp16 against model size per GPU, kernels and precision; the fitted line "
    "Δ% = c + s·ln(params) and where it crosses zero, with its 95 % interval.",
    "Energy per 1000 tokens against Δ perplexity (vs fp16) or KL divergence from float32.",
    "Stored sampler traces: GPU power against time with the runs' prefill and decode phases "
    "shaded and the session's idle power as a line.",
    "Two to four configurations side by side.",
    "Every run, searchable.",
};

int rp_write_html(FILE *out, const rp_model *m)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta name=\"generator\" content=\"" EC_REPORT_GENERATOR " ",
          out);
    rp_html_text(out, ec_version());
    fputs("\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
          "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n<title>",
          out);
    rp_html_text(out, m->title);
    fprintf(out, "</title>\n<style>\n%s</style>\n</head><body>\n", rp_css);
    /* Fill patterns the bar charts share: hatched = reference kernels. */
    fputs("<svg width=\"0\" height=\"0\" aria-hidden=\"true\" style=\"position:absolute\"><defs>"
          "<pattern id=\"hatch\" patternUnits=\"userSpaceOnUse\" width=\"6\" height=\"6\" "
          "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#fff\"/>"
          "<rect width=\"3\" height=\"6\" fill=\"#D55E00\"/></pattern></defs></svg>\n",
          out);
    page_header(out, m);
    nav(out);
    fputs("<main>\n", out);
    int (*const views[NVIEWS])(FILE *, const rp_model *) = {
        view_overview,       rp_view_precisions, rp_view_batch, rp_view_crossover,
        rp_view_accuracy,    rp_view_traces,     view_compare,  view_runs};
    for (int i = 0; i < NVIEWS; i++) {
        fprintf(out, "<section class=\"view\" id=\"view-%s\" aria-labelledby=\"h-%s\">"
                     "<h2 id=\"h-%s\">%s</h2><p class=\"note\">%s</p>\n",
                view_ids[i], view_ids[i], view_ids[i], view_names[i], view_intro[i]);
        if (views[i](out, m)) return -1;
        fputs("</section>\n", out);
    }
    fprintf(out, "</main>\n<script>\n%s</script>\n</body></html>\n", rp_js);
    return 0;
}
