/* eval_store.c — the provenance `eval` stores with its results, and storing them as accuracy
 * rows of the results database. */
#include "eval_store.h"

#include "cli.h"

#include "ecocompute/meter.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The last path component. */
static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash && slash[1] ? slash + 1 : path;
}

/* The GPU behind a CUDA device: UUID from the runtime, name from NVML. */
static void gpu_identity(const char *cmd, const char *device, ec_accuracy_record *r)
{
    if (ec_device_gpu_uuid(device, r->gpu_uuid, sizeof r->gpu_uuid) != 0) {
        r->gpu_uuid[0] = '\0';
        fprintf(stderr, "ecocompute %s: note: no GPU identity stored (%s)\n", cmd,
                ec_last_error());
        return;
    }
    ec_meter_options o;
    ec_meter_options_default(&o);
    o.gpus = r->gpu_uuid;
    ec_meter *m = ec_meter_open(&o);
    if (m && ec_meter_gpu_count(m) > 0)
        snprintf(r->gpu_name, sizeof r->gpu_name, "%s", ec_meter_gpu(m, 0)->name);
    else
        fprintf(stderr, "ecocompute %s: note: GPU name unknown (%s); its UUID is stored\n", cmd,
                m ? ec_meter_gpu_unavailable(m) : ec_last_error());
    ec_meter_close(m);
}

int cli_eval_provenance(const char *cmd, const cli_engine_args *a, const ec_model *m,
                        const ec_tokenizer *tok, const char *ppl_file, ec_accuracy_record *r)
{
    ec_accuracy_record_init(r);
    snprintf(r->source, sizeof r->source, "ecocompute");
    snprintf(r->ecocompute_version, sizeof r->ecocompute_version, "%s", ec_version());
    snprintf(r->git_commit, sizeof r->git_commit, "%s", ec_git_commit());
    /* bench stores --model as given, and analyze joins on it. */
    snprintf(r->model, sizeof r->model, "%s", a->model);
    r->params_b = (double)ec_model_param_count(ec_model_config_of(m)) / 1e9;
    snprintf(r->kernels, sizeof r->kernels, "%s", ec_kernels_name(a->kernels));
    snprintf(r->device, sizeof r->device, "%s", a->device);
    r->quantize_head = a->quantize_head;
    if (strncmp(a->device, "cuda", 4) == 0) gpu_identity(cmd, a->device, r);
    if (!ppl_file) return 0;
    snprintf(r->dataset, sizeof r->dataset, "%s", base_name(ppl_file));
    if (ec_sha256_file(ppl_file, r->dataset_sha256) != 0)
        return cli_fail(cmd, "--ppl: %s", ec_last_error());
    const char *tp = ec_tokenizer_path(tok);
    snprintf(r->tokenizer, sizeof r->tokenizer, "%s", base_name(tp));
    if (ec_sha256_file(tp, r->tokenizer_sha256) != 0)
        return cli_fail(cmd, "tokenizer: %s", ec_last_error());
    return 0;
}

int cli_eval_store(const char *cmd, ec_store *s, const char *db, ec_accuracy_record *rows, int n)
{
    /* Milliseconds: rows are append-only and identified by content, so a repeated evaluation
     * with the same results is a new row only through its time. */
    double t = ec_wall_s();
    char now[32], sec[24];
    ec_iso8601(t, sec, sizeof sec); /* "YYYY-MM-DDTHH:MM:SSZ" */
    sec[strcspn(sec, "Z")] = '\0';
    snprintf(now, sizeof now, "%s.%03dZ", sec, (int)(fmod(t, 1.0) * 1000.0));
    for (int i = 0; i < n; i++)
        snprintf(rows[i].timestamp_utc, sizeof rows[i].timestamp_utc, "%s", now);
    size_t added = 0;
    if (ec_store_insert_accuracy(s, rows, (size_t)n, &added) != 0)
        return cli_fail(cmd, "--db: %s", ec_last_error());
    fprintf(stderr, "ecocompute %s: %zu accuracy row%s stored in %s\n", cmd, added,
            added == 1 ? "" : "s", db);
    return 0;
}
