/* spec.c — the sweep specification: defaults, its JSON form (stored with every session so that
 * `bench --resume` can run the last sweep again; also the format of `bench --config FILE`, the
 * sweep files of bench/sweeps/) and the protocol key that, with a configuration's own values,
 * identifies it across resumes. */
#include "ecocompute/bench.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void ec_bench_spec_default(ec_bench_spec *s)
{
    memset(s, 0, sizeof *s);
    s->precisions[0] = EC_PREC_FP16;
    s->nprecisions = 1;
    s->kernels[0] = EC_KERNELS_FUSED;
    s->nkernels = 1;
    s->batches[0] = 1;
    s->nbatches = 1;
    s->prompt_lens[0] = EC_BENCH_DEFAULT_PROMPT_LEN;
    s->nprompt_lens = 1;
    s->gens[0] = EC_BENCH_DEFAULT_GEN;
    s->ngens = 1;
    s->tps[0] = 1;
    s->ntps = 1;
    snprintf(s->device, sizeof s->device, "cpu");
    s->warmup = EC_BENCH_DEFAULT_WARMUP;
    s->runs = EC_BENCH_DEFAULT_RUNS;
    s->cv_tok_pct = EC_BENCH_DEFAULT_CV_TOK_PCT;
    s->cv_power_pct = EC_BENCH_DEFAULT_CV_POWER_PCT;
    s->max_reruns = EC_BENCH_DEFAULT_RERUNS;
    s->min_window_s = EC_BENCH_MIN_WINDOW_AUTO;
    s->max_uncert_pct = EC_BENCH_DEFAULT_MAX_UNCERT_PCT;
    s->idle_s = EC_BENCH_DEFAULT_IDLE_S;
    s->stabilize_s = EC_BENCH_DEFAULT_STABILIZE_S;
    s->stabilize_max_s = EC_BENCH_DEFAULT_STABILIZE_MAX_S;
    s->seed = 1;
    s->int8_threshold = EC_INT8_THRESHOLD;
    s->outliers = -1;
}

int ec_bench_spec_parse_shard(const char *text, ec_bench_spec *s)
{
    char *end;
    long i = strtol(text, &end, 10), n = 0;
    if (end != text && *end == '/') {
        const char *d = end + 1;
        n = strtol(d, &end, 10);
        if (end == d) n = 0;
    }
    if (*end || n < 1 || n > 100000 || i < 1 || i > n)
        return ec_set_error("shard '%s': expected I/N with 1 <= I <= N (e.g. 2/8)", text);
    s->shard_index = (int)i;
    s->shard_count = (int)n;
    return 0;
}

int ec_bench_spec_check_devices(const ec_bench_spec *s)
{
    int idx[EC_BENCH_MAX_TP];
    for (int i = 0; i < s->ntps; i++)
        if (ec_device_list(s->device, s->tps[i], idx, EC_BENCH_MAX_TP) < 0) return -1;
    return 0;
}

int ec_bench_in_shard(const ec_bench_spec *s, int k)
{
    return s->shard_count <= 1 || k % s->shard_count == s->shard_index - 1;
}

void ec_bench_protocol_key(const ec_bench_spec *s, char *out, size_t len)
{
    /* Idle and stabilization are left out: they shape a session, not what a run measures, so a
     * resumed sweep may use other values and still continue the same configurations. */
    int n = snprintf(out, len,
                     "runs=%d warmup=%d cv_tok=%g cv_power=%g reruns=%d seed=%llu threads=%d "
                     "int8_threshold=%g",
                     s->runs, s->warmup, s->cv_tok_pct, s->cv_power_pct, s->max_reruns,
                     (unsigned long long)s->seed, s->threads, (double)s->int8_threshold);
    /* Other weights are another measurement; only named when set, so the keys of sweeps stored
     * before the option existed still match. */
    if (n > 0 && (size_t)n < len && (s->outliers >= 0 || s->outlier_mag > 0.0f))
        n += snprintf(out + n, len - (size_t)n, " outliers=%d:%g", s->outliers,
                      (double)s->outlier_mag);
    /* Repeated phases measure the same thing more surely; a sweep with min_window 0 keeps the
     * keys of sweeps stored before windows were lengthened. */
    if (n > 0 && (size_t)n < len && s->min_window_s != 0) {
        char window[32] = "auto";
        if (s->min_window_s > 0) snprintf(window, sizeof window, "%g", s->min_window_s);
        snprintf(out + n, len - (size_t)n, " min_window=%s max_uncert=%g", window,
                 s->max_uncert_pct);
    }
}

static void add_ints(cJSON *o, const char *key, const int *v, int n)
{
    cJSON *a = cJSON_AddArrayToObject(o, key);
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
}

char *ec_bench_spec_to_json(const ec_bench_spec *s)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *a = cJSON_AddArrayToObject(o, "models");
    for (int i = 0; i < s->nmodels; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(s->models[i]));
    a = cJSON_AddArrayToObject(o, "precisions");
    for (int i = 0; i < s->nprecisions; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(ec_precision_name(s->precisions[i])));
    a = cJSON_AddArrayToObject(o, "kernels");
    for (int i = 0; i < s->nkernels; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(ec_kernels_name(s->kernels[i])));
    add_ints(o, "batches", s->batches, s->nbatches);
    add_ints(o, "prompt_lens", s->prompt_lens, s->nprompt_lens);
    add_ints(o, "gens", s->gens, s->ngens);
    add_ints(o, "tps", s->tps, s->ntps);
    cJSON_AddStringToObject(o, "device", s->device);
    cJSON_AddNumberToObject(o, "warmup", s->warmup);
    cJSON_AddNumberToObject(o, "runs", s->runs);
    cJSON_AddNumberToObject(o, "cv_tok_pct", s->cv_tok_pct);
    cJSON_AddNumberToObject(o, "cv_power_pct", s->cv_power_pct);
    cJSON_AddNumberToObject(o, "max_reruns", s->max_reruns);
    cJSON_AddNumberToObject(o, "min_window_s", s->min_window_s);
    cJSON_AddNumberToObject(o, "max_uncert_pct", s->max_uncert_pct);
    cJSON_AddNumberToObject(o, "idle_s", s->idle_s);
    cJSON_AddNumberToObject(o, "stabilize_s", s->stabilize_s);
    cJSON_AddBoolToObject(o, "stabilize_auto", s->stabilize_auto);
    cJSON_AddNumberToObject(o, "stabilize_max_s", s->stabilize_max_s);
    cJSON_AddNumberToObject(o, "seed", (double)s->seed);
    cJSON_AddNumberToObject(o, "threads", s->threads);
    cJSON_AddNumberToObject(o, "int8_threshold", (double)s->int8_threshold);
    cJSON_AddNumberToObject(o, "outliers", s->outliers);
    cJSON_AddNumberToObject(o, "outlier_mag", (double)s->outlier_mag);
    cJSON_AddStringToObject(o, "tag", s->tag);
    /* Only a sharded sweep names its shard, so unsharded specs read as before. */
    if (s->shard_count > 1) {
        char shard[32];
        snprintf(shard, sizeof shard, "%d/%d", s->shard_index, s->shard_count);
        cJSON_AddStringToObject(o, "shard", shard);
    }
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return text;
}

/* Keys other than "models" may be absent (a config file names what it changes); a present key
 * must be valid. */
static int get_number(const cJSON *o, const char *key, double lo, double hi, double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v) return 0;
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi))
        return ec_set_error("sweep: '%s' must be a number in [%g, %g]", key, lo, hi);
    *out = v->valuedouble;
    return 0;
}

static int get_ints(const cJSON *o, const char *key, int lo, int hi, int *v, int *n)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key), *it;
    if (!a) return 0;
    *n = 0;
    if (!cJSON_IsArray(a)) return ec_set_error("sweep: '%s' must be a list", key);
    cJSON_ArrayForEach(it, a)
    {
        if (*n == EC_BENCH_MAX_LIST || !cJSON_IsNumber(it) || it->valuedouble < lo ||
            it->valuedouble > hi)
            return ec_set_error("sweep: bad '%s'", key);
        v[(*n)++] = (int)it->valuedouble;
    }
    return *n ? 0 : ec_set_error("sweep: '%s' is empty", key);
}

static int get_text(const cJSON *o, const char *key, char *out, size_t len)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v) return 0;
    if (!cJSON_IsString(v) || strlen(v->valuestring) >= len)
        return ec_set_error("sweep: bad '%s'", key);
    memcpy(out, v->valuestring, strlen(v->valuestring) + 1);
    return 0;
}

/* Reads the string list `key`, parsing each item with parse into out[i]. */
static int get_names(const cJSON *o, const char *key, int (*parse)(const char *, void *, int),
                     void *out, int *n)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key), *it;
    if (!a && strcmp(key, "models") != 0) return 0;
    *n = 0;
    if (!cJSON_IsArray(a)) return ec_set_error("sweep: '%s' must be a list", key);
    cJSON_ArrayForEach(it, a)
    {
        if (*n == EC_BENCH_MAX_LIST || !cJSON_IsString(it) || parse(it->valuestring, out, *n))
            return ec_set_error("sweep: bad '%s'", key);
        (*n)++;
    }
    return *n ? 0 : ec_set_error("sweep: '%s' is empty", key);
}

static int parse_model(const char *t, void *out, int i)
{
    char(*m)[256] = out;
    if (strlen(t) >= sizeof m[i]) return -1;
    memcpy(m[i], t, strlen(t) + 1);
    return 0;
}
static int parse_prec(const char *t, void *out, int i)
{
    return ec_precision_parse(t, (ec_precision *)out + i);
}
static int parse_kern(const char *t, void *out, int i)
{
    return ec_kernels_parse(t, (ec_kernels *)out + i);
}

int ec_bench_spec_from_json(const char *json, ec_bench_spec *s)
{
    ec_bench_spec_default(s);
    cJSON *o = cJSON_Parse(json);
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return ec_set_error("the sweep is not a JSON object");
    }
    double warmup = s->warmup, runs = s->runs, reruns = s->max_reruns, seed = (double)s->seed,
           threads = s->threads, thr = (double)s->int8_threshold, outl = s->outliers,
           mag = (double)s->outlier_mag;
    const cJSON *aut = cJSON_GetObjectItemCaseSensitive(o, "stabilize_auto");
    int rc = get_names(o, "models", parse_model, s->models, &s->nmodels) ||
             get_names(o, "precisions", parse_prec, s->precisions, &s->nprecisions) ||
             get_names(o, "kernels", parse_kern, s->kernels, &s->nkernels) ||
             get_ints(o, "batches", 1, 4096, s->batches, &s->nbatches) ||
             get_ints(o, "prompt_lens", 1, 1 << 20, s->prompt_lens, &s->nprompt_lens) ||
             get_ints(o, "gens", 1, 1 << 20, s->gens, &s->ngens) ||
             get_ints(o, "tps", 1, EC_BENCH_MAX_TP, s->tps, &s->ntps) ||
             get_text(o, "device", s->device, sizeof s->device) ||
             get_text(o, "tag", s->tag, sizeof s->tag) ||
             get_number(o, "warmup", 0, 1000, &warmup) || get_number(o, "runs", 1, 10000, &runs) ||
             get_number(o, "cv_tok_pct", 0, 1e9, &s->cv_tok_pct) ||
             get_number(o, "cv_power_pct", 0, 1e9, &s->cv_power_pct) ||
             get_number(o, "max_reruns", 0, 1000, &reruns) ||
             get_number(o, "min_window_s", -1, 3600, &s->min_window_s) ||
             get_number(o, "max_uncert_pct", 0, 100, &s->max_uncert_pct) ||
             get_number(o, "idle_s", 0, 86400, &s->idle_s) ||
             get_number(o, "stabilize_s", 0, 86400, &s->stabilize_s) ||
             get_number(o, "stabilize_max_s", 0, 86400, &s->stabilize_max_s) ||
             get_number(o, "seed", 0, 0x7fffffff, &seed) ||
             get_number(o, "threads", 0, 1024, &threads) ||
             get_number(o, "int8_threshold", 0, 1e6, &thr) ||
             get_number(o, "outliers", -1, 1 << 20, &outl) ||
             get_number(o, "outlier_mag", 0, 1e6, &mag);
    const cJSON *shard = cJSON_GetObjectItemCaseSensitive(o, "shard");
    if (!rc && shard &&
        (!cJSON_IsString(shard) || ec_bench_spec_parse_shard(shard->valuestring, s)))
        rc = ec_set_error("sweep: 'shard' must be \"I/N\" with 1 <= I <= N");
    if (!rc && aut && !cJSON_IsBool(aut))
        rc = ec_set_error("sweep: 'stabilize_auto' must be true or false");
    cJSON_Delete(o);
    if (rc) return -1;
    s->warmup = (int)warmup;
    s->runs = (int)runs;
    s->max_reruns = (int)reruns;
    s->seed = (uint64_t)seed;
    s->threads = (int)threads;
    s->int8_threshold = (float)thr;
    s->outliers = (int)outl;
    s->outlier_mag = (float)mag;
    if (aut) s->stabilize_auto = cJSON_IsTrue(aut);
    return 0;
}

int ec_bench_spec_from_config(const char *json, ec_bench_spec *s)
{
    static const char *const known[] = {
        "description",    "models",         "precisions", "kernels",        "batches",
        "prompt_lens",    "gens",           "tps",        "device",         "tag",
        "warmup",         "runs",           "cv_tok_pct", "cv_power_pct",   "max_reruns",
        "min_window_s",   "max_uncert_pct", "idle_s",     "stabilize_s",    "stabilize_max_s",
        "stabilize_auto", "seed",           "threads",    "int8_threshold", "outliers",
        "outlier_mag",    "shard"};
    cJSON *o = cJSON_Parse(json);
    const cJSON *it;
    const char *unknown = NULL;
    if (cJSON_IsObject(o)) cJSON_ArrayForEach(it, o)
        {
            size_t k = 0;
            while (k < sizeof known / sizeof *known && strcmp(it->string, known[k])) k++;
            if (k == sizeof known / sizeof *known && !unknown) unknown = it->string;
        }
    int rc = 0;
    if (unknown) rc = ec_set_error("sweep: unknown key '%s'", unknown);
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(o, "description");
    if (!rc && d && !cJSON_IsString(d)) rc = ec_set_error("sweep: 'description' must be text");
    cJSON_Delete(o);
    return rc ? -1 : ec_bench_spec_from_json(json, s);
}
