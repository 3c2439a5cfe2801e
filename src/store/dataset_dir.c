/* dataset_dir.c — `export --dataset DIR`: the runs as a directory ready to publish (for example
 * as a Hugging Face dataset repository): runs.jsonl, one run per line, and README.md, a dataset
 * card whose YAML header names the licence and the data file, and whose text says what every
 * column holds and in which unit, how the energy was measured and defined, and where each row
 * came from. Nothing in DIR is written over unless a previous --dataset wrote it. */
#include "ecocompute/store.h"
#include "store/export_internal.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The card's first lines; a comment inside the YAML header, so the card stays valid. */
#define CARD_HEAD "---\n# ecocompute dataset card: written by `ecocompute export --dataset`\n"

static int is_own(const ec_run_record *r)
{
    return !strcmp(r->source, "ecocompute");
}

/* The licence of a row as published: its own, or for own measurements the one chosen. */
static const char *row_licence(const ec_run_record *r, const char *licence)
{
    if (*r->licence) return r->licence;
    return is_own(r) && licence ? licence : "";
}

/* ---- grouping rows by a key of text fields: small tables for the card ---- */

#define MAX_KEY 5
typedef struct {
    const char *f[MAX_KEY];
    size_t rows;
} group;
typedef struct {
    group *g;
    size_t n, cap;
} groups;

static int add_group(groups *gs, const char *const *key, size_t nk)
{
    for (size_t i = 0; i < gs->n; i++) {
        size_t k = 0;
        while (k < nk && !strcmp(gs->g[i].f[k], key[k]))
            k++;
        if (k == nk) {
            gs->g[i].rows++;
            return 0;
        }
    }
    if (gs->n == gs->cap) {
        size_t cap = gs->cap ? 2 * gs->cap : 16;
        group *g = realloc(gs->g, cap * sizeof *g);
        if (!g) return ec_set_error("out of memory");
        gs->g = g;
        gs->cap = cap;
    }
    group *g = &gs->g[gs->n++];
    memset(g, 0, sizeof *g);
    for (size_t k = 0; k < nk; k++)
        g->f[k] = key[k];
    g->rows = 1;
    return 0;
}

/* A Markdown cell: '|' escaped, empty shown as "-". */
static void md_cell(FILE *out, const char *text)
{
    fputs("| ", out);
    if (!*text) fputc('-', out);
    for (; *text; text++) {
        if (*text == '|') fputc('\\', out);
        fputc(*text == '\n' ? ' ' : *text, out);
    }
    fputc(' ', out);
}

/* The YAML `license:` value: the lower-case SPDX id when every row has the same one, "other"
 * when they differ, "unknown" when a row has none. */
static void yaml_licence(FILE *out, const groups *lic)
{
    int unknown = 0;
    for (size_t i = 0; i < lic->n; i++)
        unknown |= !*lic->g[i].f[0];
    fputs("license: ", out);
    if (unknown || lic->n == 0) fputs("unknown", out);
    else if (lic->n > 1) fputs("other", out);
    else
        for (const char *s = lic->g[0].f[0]; *s; s++)
            fputc(isalnum((unsigned char)*s) || *s == '.' || *s == '-' ? tolower((unsigned char)*s)
                                                                        : '-',
                  out);
    fputc('\n', out);
}

static int write_card(FILE *out, const ec_run_record *r, size_t n, const char *licence)
{
    groups lic = {0}, prov = {0}, defs = {0}, what = {0};
    int rc = 0;
    size_t own = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        own += (size_t)is_own(&r[i]);
        const char *l[] = {r[i].source, row_licence(&r[i], licence)};
        const char *p[] = {r[i].source, r[i].ecocompute_version, r[i].git_commit, r[i].gpu_name,
                           r[i].driver};
        const char *d[] = {r[i].source, ec_energy_definition_name(r[i].energy_definition)};
        const char *w[] = {r[i].model, r[i].precision, r[i].device};
        if (add_group(&lic, l, 2) || add_group(&prov, p, 5) || add_group(&defs, d, 2) ||
            add_group(&what, w, 3))
            rc = -1;
    }
    if (rc != 0) goto done;
    groups licences = {0}; /* distinct licences alone, for the YAML header */
    for (size_t i = 0; i < lic.n && rc == 0; i++)
        rc = add_group(&licences, &lic.g[i].f[1], 1);
    if (rc == 0) {
        fputs(CARD_HEAD, out);
        yaml_licence(out, &licences);
        fputs("pretty_name: LLM inference energy measured with ecocompute\n"
              "tags:\n- energy\n- llm-inference\n- gpu\n- quantization\n"
              "configs:\n- config_name: default\n  data_files: runs.jsonl\n---\n\n",
              out);
    }
    free(licences.g);
    if (rc != 0) goto done;

    fprintf(out,
            "# LLM inference energy: %zu runs\n\n"
            "`runs.jsonl` holds one measured run per line (JSON Lines, UTF-8): %zu configurations "
            "of model, precision and device, %zu of the runs measured with ecocompute and %zu "
            "imported from other sources. Written by ecocompute %s (commit %s).\n\n"
            "Read it with `ecocompute import runs.jsonl` (into a results database, losslessly), "
            "`ecocompute analyze runs.jsonl`, or `pandas.read_json(\"runs.jsonl\", lines=True)`.\n\n",
            n, what.n, own, n - own, ec_version(), ec_git_commit());

    fputs("## Energy: gross and net\n\n"
          "- **Gross** energy is what the GPU board drew in the measured window: the NVML energy "
          "counter's difference, or the trapezoid integral of instant power where a GPU has no "
          "counter (`gpu_energy_method`: counter, integrated, mixed).\n"
          "- **Net** energy is gross minus the session's idle power (`idle_power_w`, measured "
          "before the runs with the model loaded) times the window's duration; it may be "
          "slightly negative for short, light windows. Net columns are empty when no idle "
          "baseline was measured.\n"
          "- **J per 1k tokens** is whole-run GPU energy x 1000 / (batch x gen_len), gross "
          "(`j_per_1k_gross`) and net (`j_per_1k_net`). CPU package + DRAM energy (RAPL) is "
          "separate (`*_cpu_energy_j`), empty where unreadable.\n"
          "- **Imported rows** carry their source's own figure in `energy_j_per_1k`, and "
          "`energy_definition` says whether that source measured it gross, net or did not say "
          "(unknown): never compare them as one quantity.\n"
          "- Unknown numbers are `null` (never 0); unknown counts are -1.\n\n",
          out);
    fputs("| source | energy_definition | rows |\n|---|---|---:|\n", out);
    for (size_t i = 0; i < defs.n; i++) {
        md_cell(out, defs.g[i].f[0]);
        md_cell(out, defs.g[i].f[1]);
        fprintf(out, "| %zu |\n", defs.g[i].rows);
    }

    fputs("\n## Measurement protocol (rows with source `ecocompute`)\n\n"
          "`ecocompute bench` measures every configuration after an idle baseline (once per "
          "session), a thermal stabilization wait and warm-up generations not stored. Each "
          "measured run is one prefill and one decode phase of `batch` sequences of "
          "`prompt_len` prompt and exactly `gen_len` new tokens (greedy, never stopping "
          "early); each phase has its own meter window, aligned to the GPU energy counter's "
          "updates and repeated inside the window until it is long enough to measure "
          "(`prefill_repeats`, `decode_repeats`; figures are per phase), with a stated 1-sd "
          "uncertainty (`*_uncert_j`). A configuration's runs pass quality gates (CV of "
          "tok/s and of power, largest uncertainty) or are measured again as a whole; `gate` "
          "says the outcome, and failed sets are kept and marked, never dropped. The full "
          "protocol is ecocompute's docs/measurement.md.\n\n",
          out);

    fputs("## Licence\n\n", out);
    if (own && !licence)
        fputs("The rows measured with ecocompute have no licence chosen yet (export again with "
              "`--licence ID`, e.g. `--licence CC-BY-4.0`). ",
              out);
    fputs("Each row's licence is its `licence` column:\n\n| source | licence | rows |\n"
          "|---|---|---:|\n",
          out);
    for (size_t i = 0; i < lic.n; i++) {
        md_cell(out, lic.g[i].f[0]);
        md_cell(out, *lic.g[i].f[1] ? lic.g[i].f[1] : "not stated");
        fprintf(out, "| %zu |\n", lic.g[i].rows);
    }

    fputs("\n## Provenance\n\n"
          "Every row names its `source` (`ecocompute` for own measurements, else the imported "
          "source), the ecocompute version and commit that measured it, the GPU, driver, CUDA "
          "toolkit, power limit, host CPU, session and start time. By source, build and GPU:\n\n"
          "| source | ecocompute | commit | GPU | driver | rows |\n"
          "|---|---|---|---|---|---:|\n",
          out);
    for (size_t i = 0; i < prov.n; i++) {
        for (size_t k = 0; k < 5; k++)
            md_cell(out, prov.g[i].f[k]);
        fprintf(out, "| %zu |\n", prov.g[i].rows);
    }

    fputs("\n## Columns\n\nIn file order (a row has every column as a key):\n\n"
          "| column | unit | meaning |\n|---|---|---|\n",
          out);
    size_t nc;
    const ec_column *c = ec_run_columns(&nc);
    for (size_t j = 0; j < nc; j++) {
        fprintf(out, "| `%s` ", c[j].name);
        md_cell(out, c[j].unit);
        md_cell(out, c[j].description);
        fputs("|\n", out);
    }
done:
    free(lic.g);
    free(prov.g);
    free(defs.g);
    free(what.g);
    return rc;
}

/* Writes path completely or not at all: a temporary file beside it, renamed over it. */
static int write_file(const char *path, int (*fill)(FILE *, const ec_run_record *, size_t,
                                                    const char *),
                      const ec_run_record *r, size_t n, const char *licence)
{
    char tmp[4096 + 32]; /* path is at most 4095 characters (ec_dataset_dir_check) */
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) return ec_set_error("cannot write %s: %s", tmp, strerror(errno));
    int rc = fill(f, r, n, licence);
    if (rc == 0 && (fflush(f) != 0 || ferror(f)))
        rc = ec_set_error("writing %s: %s", tmp, strerror(errno));
    if (fclose(f) != 0 && rc == 0) rc = ec_set_error("closing %s: %s", tmp, strerror(errno));
    if (rc == 0 && rename(tmp, path) != 0)
        rc = ec_set_error("cannot write %s: %s", path, strerror(errno));
    if (rc != 0) unlink(tmp);
    return rc;
}

/* runs.jsonl with the chosen licence filled into own rows that have none. */
static int fill_runs(FILE *f, const ec_run_record *r, size_t n, const char *licence)
{
    ec_run_record *copy = n ? malloc(n * sizeof *copy) : NULL;
    if (n && !copy) return ec_set_error("out of memory");
    for (size_t i = 0; i < n; i++) {
        copy[i] = r[i];
        snprintf(copy[i].licence, sizeof copy[i].licence, "%s", row_licence(&r[i], licence));
    }
    int rc = ec_dataset_write(f, EC_EXPORT_JSONL, copy, n);
    free(copy);
    return rc;
}

static int dir_is_empty(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return ec_set_error("%s: cannot read the directory: %s", dir, strerror(errno));
    int empty = 1;
    const struct dirent *e;
    while (empty && (e = readdir(d)))
        empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
    closedir(d);
    return empty;
}

int ec_dataset_dir_check(const char *dir)
{
    char card[4096], runs[4096];
    if (snprintf(card, sizeof card, "%s/README.md", dir) >= (int)sizeof card ||
        snprintf(runs, sizeof runs, "%s/runs.jsonl", dir) >= (int)sizeof runs)
        return ec_set_error("%s: path too long", dir);
    struct stat st;
    if (stat(dir, &st) != 0) {
        if (errno == ENOENT) return 0;
        return ec_set_error("%s: %s", dir, strerror(errno));
    }
    if (!S_ISDIR(st.st_mode)) return ec_set_error("%s exists and is not a directory", dir);
    int empty = dir_is_empty(dir);
    if (empty < 0) return -1;
    struct stat cs;
    if (!empty && lstat(card, &cs) != 0)
        return ec_set_error("%s is not empty and has no dataset card of an earlier "
                            "`export --dataset`; refusing to write into it (choose a new or "
                            "empty directory)",
                            dir);
    /* Each file we write must be absent or ours: the card, and runs that are JSONL. */
    static const char *const card_sig[] = {CARD_HEAD, NULL};
    static const char *const runs_sig[] = {"{\"source\":", NULL};
    if (ec_output_check(card, "a dataset card", card_sig, -1) != 0 ||
        ec_output_check(runs, "runs.jsonl", runs_sig, -1) != 0)
        return -1;
    return 0;
}

int ec_dataset_publish(const char *dir, const ec_run_record *r, size_t n, const char *licence)
{
    if (ec_dataset_dir_check(dir) != 0) return -1;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return ec_set_error("cannot create %s: %s", dir, strerror(errno));
    char card[4096], runs[4096];
    snprintf(card, sizeof card, "%s/README.md", dir);
    snprintf(runs, sizeof runs, "%s/runs.jsonl", dir);
    if (write_file(runs, fill_runs, r, n, licence) != 0) return -1;
    return write_file(card, write_card, r, n, licence);
}
