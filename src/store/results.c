/* results.c — names of the run record's enumerations (results.h), the "unknown" record, and
 * which records are one configuration: the run key and its comparison under a variant. */
#include "ecocompute/results.h"
#include "ecocompute/common.h"
#include "ecocompute/store.h"

#include <math.h>
#include <string.h>

static const char *const energy_names[] = {"gross", "net", "unknown"};
static const char *const gate_names[] = {"pass", "fail", "pending", "unknown"};

const char *ec_energy_definition_name(ec_energy_definition d)
{
    return (unsigned)d < 3 ? energy_names[d] : "unknown";
}

int ec_energy_definition_parse(const char *text, ec_energy_definition *out)
{
    for (int i = 0; i < 3; i++)
        if (!strcmp(text, energy_names[i])) {
            *out = (ec_energy_definition)i;
            return 0;
        }
    return ec_set_error("unknown energy definition '%s' (gross, net, unknown)", text);
}

const char *ec_gate_status_name(ec_gate_status g)
{
    return (unsigned)g < 4 ? gate_names[g] : "unknown";
}

int ec_gate_status_parse(const char *text, ec_gate_status *out)
{
    for (int i = 0; i < 4; i++)
        if (!strcmp(text, gate_names[i])) {
            *out = (ec_gate_status)i;
            return 0;
        }
    return ec_set_error("unknown gate status '%s' (pass, fail, pending, unknown)", text);
}

/* Every column by its type: the conventions of results.h for "not known". */
void ec_run_record_init(ec_run_record *r)
{
    memset(r, 0, sizeof *r);
    size_t n;
    const ec_column *c = ec_run_columns(&n);
    for (size_t i = 0; i < n; i++) {
        char *p = (char *)r + c[i].offset;
        switch (c[i].type) {
        case EC_COL_REAL: *(double *)(void *)p = NAN; break;
        case EC_COL_INT: *(int *)(void *)p = -1; break;
        case EC_COL_LONG: *(long *)(void *)p = -1; break;
        case EC_COL_ENERGY_DEF: *(ec_energy_definition *)(void *)p = EC_ENERGY_UNKNOWN; break;
        case EC_COL_GATE: *(ec_gate_status *)(void *)p = EC_GATE_UNKNOWN; break;
        case EC_COL_TEXT:
        case EC_COL_HEX: break; /* "" and 0 (no reason seen) */
        }
    }
    r->tp = 1; /* every source without the column measured on one device */
}

int ec_record_is_summary(const ec_run_record *r)
{
    return r->run_index == -1;
}

int ec_record_gpus(const ec_run_record *r)
{
    return r->tp > 1 ? r->tp : 1;
}

ec_run_key ec_run_key_of(const ec_run_record *r)
{
    ec_run_key k = {r->source,  r->gpu_name,   r->gpu_uuid,      r->model,
                    r->precision, r->kernels,  r->device,        r->batch,
                    r->prompt_len, r->gen_len, ec_record_is_summary(r), r->tp};
    return k;
}

int ec_same_source_folder(const char *a, const char *b)
{
    const char *sa = strrchr(a, '/'), *sb = strrchr(b, '/');
    size_t la = sa ? (size_t)(sa - a) : 0, lb = sb ? (size_t)(sb - b) : 0;
    return la == lb && !strncmp(a, b, la);
}

int ec_kernels_comparable(const char *a, const char *b)
{
    return !a[0] || !b[0] || !strcmp(a, b);
}

int ec_run_key_equal(const ec_run_key *a, const ec_run_key *b, unsigned v)
{
    return (!(v & EC_KEY_SOURCE) || !strcmp(a->source, b->source)) &&
           (!(v & EC_KEY_SOURCE_FOLDER) || ec_same_source_folder(a->source, b->source)) &&
           (!(v & EC_KEY_GPU_NAME) || !strcmp(a->gpu_name, b->gpu_name)) &&
           (!(v & EC_KEY_GPU_UUID) || !strcmp(a->gpu_uuid, b->gpu_uuid)) &&
           (!(v & EC_KEY_MODEL) || !strcmp(a->model, b->model)) &&
           (!(v & EC_KEY_PRECISION) || !strcmp(a->precision, b->precision)) &&
           (!(v & EC_KEY_KERNELS) || !strcmp(a->kernels, b->kernels)) &&
           (!(v & EC_KEY_KERNELS_COMPARABLE) || ec_kernels_comparable(a->kernels, b->kernels)) &&
           (!(v & EC_KEY_DEVICE) || !strcmp(a->device, b->device)) &&
           (!(v & EC_KEY_BATCH) || a->batch == b->batch) &&
           (!(v & EC_KEY_LENGTHS) || (a->prompt_len == b->prompt_len && a->gen_len == b->gen_len)) &&
           (!(v & EC_KEY_SUMMARY) || a->summary == b->summary) &&
           (!(v & EC_KEY_TP) || a->tp == b->tp);
}

int ec_records_match(const ec_run_record *a, const ec_run_record *b, unsigned variant)
{
    ec_run_key ka = ec_run_key_of(a), kb = ec_run_key_of(b);
    return ec_run_key_equal(&ka, &kb, variant);
}

int ec_same_config(const ec_run_record *a, const ec_run_record *b)
{
    return ec_records_match(a, b, EC_KEY_CONFIG);
}
