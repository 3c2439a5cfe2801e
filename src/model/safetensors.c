/* safetensors.c — parses and validates a safetensors header against its file image: header length
 * bounds, well-formed JSON, known dtypes, integer shapes without overflow, data_offsets inside the
 * data area, sizes that match, no overlaps, no duplicate names, only known keys. */
#include "safetensors.h"

#include "ecocompute/common.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    size_t size;
} dtypes[EC_ST_DTYPE_COUNT] = {
    [EC_ST_BOOL] = {"BOOL", 1},       [EC_ST_U8] = {"U8", 1},   [EC_ST_I8] = {"I8", 1},
    [EC_ST_F8_E4M3] = {"F8_E4M3", 1}, [EC_ST_F8_E5M2] = {"F8_E5M2", 1},
    [EC_ST_I16] = {"I16", 2},         [EC_ST_U16] = {"U16", 2}, [EC_ST_F16] = {"F16", 2},
    [EC_ST_BF16] = {"BF16", 2},       [EC_ST_I32] = {"I32", 4}, [EC_ST_U32] = {"U32", 4},
    [EC_ST_F32] = {"F32", 4},         [EC_ST_I64] = {"I64", 8}, [EC_ST_U64] = {"U64", 8},
    [EC_ST_F64] = {"F64", 8},
};

const char *ec_st_dtype_name(ec_st_dtype d)
{
    return (unsigned)d < EC_ST_DTYPE_COUNT ? dtypes[d].name : "?";
}

size_t ec_st_dtype_size(ec_st_dtype d)
{
    return (unsigned)d < EC_ST_DTYPE_COUNT ? dtypes[d].size : 0;
}

void ec_st_free(ec_st_header *h)
{
    for (size_t i = 0; i < h->n; i++) free(h->tensors[i].name);
    free(h->tensors);
    h->tensors = NULL;
    h->n = 0;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(((const ec_st_tensor *)a)->name, ((const ec_st_tensor *)b)->name);
}

static int cmp_begin(const void *a, const void *b)
{
    const ec_st_tensor *x = *(const ec_st_tensor *const *)a, *y = *(const ec_st_tensor *const *)b;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

const ec_st_tensor *ec_st_find(const ec_st_header *h, const char *name)
{
    ec_st_tensor key = {.name = (char *)name};
    return h->n ? bsearch(&key, h->tensors, h->n, sizeof key, cmp_name) : NULL;
}

/* A JSON number that is a non-negative integer exactly representable in a double. */
static int json_u64(const cJSON *v, uint64_t *out)
{
    if (!cJSON_IsNumber(v)) return -1;
    double d = v->valuedouble;
    if (!(d >= 0 && d <= 9007199254740992.0) || d != floor(d)) return -1;
    *out = (uint64_t)d;
    return 0;
}

static int parse_dtype(const cJSON *v, ec_st_dtype *out)
{
    if (!cJSON_IsString(v)) return -1;
    for (int d = 0; d < EC_ST_DTYPE_COUNT; d++)
        if (!strcmp(v->valuestring, dtypes[d].name)) {
            *out = (ec_st_dtype)d;
            return 0;
        }
    return -1;
}

/* Fills t from one tensor entry; data_size is the size of the byte buffer after the header. */
static int parse_tensor(const cJSON *e, const char *file, uint64_t data_size, ec_st_tensor *t)
{
    const char *name = t->name;
    if (!cJSON_IsObject(e))
        return ec_set_error("%s: tensor '%s': entry is not a JSON object", file, name);
    const cJSON *dtype = NULL, *shape = NULL, *offsets = NULL, *f;
    cJSON_ArrayForEach(f, e)
    {
        if (!strcmp(f->string, "dtype") && !dtype) dtype = f;
        else if (!strcmp(f->string, "shape") && !shape) shape = f;
        else if (!strcmp(f->string, "data_offsets") && !offsets) offsets = f;
        else
            return ec_set_error("%s: tensor '%s': unexpected or repeated key '%s'", file, name,
                                f->string);
    }
    if (!dtype || parse_dtype(dtype, &t->dtype))
        return ec_set_error("%s: tensor '%s': dtype is missing or unknown (%s)", file, name,
                            cJSON_IsString(dtype) ? dtype->valuestring : "not a string");
    if (!cJSON_IsArray(shape))
        return ec_set_error("%s: tensor '%s': shape is missing or not an array", file, name);
    int ndim = cJSON_GetArraySize(shape);
    if (ndim > EC_ST_MAX_DIMS)
        return ec_set_error("%s: tensor '%s': %d dimensions (at most %d supported)", file, name,
                            ndim, EC_ST_MAX_DIMS);
    t->ndim = ndim;
    /* Bytes = product of dims x element size; a product past 64 bits is only flagged, never
     * computed (a later 0 dimension makes it 0 again). */
    uint64_t bytes = ec_st_dtype_size(t->dtype);
    int i = 0, zero = 0, over = 0;
    cJSON_ArrayForEach(f, shape)
    {
        uint64_t d;
        if (json_u64(f, &d))
            return ec_set_error("%s: tensor '%s': shape[%d] is not a non-negative integer", file,
                                name, i);
        t->shape[i++] = d;
        if (d == 0) zero = 1;
        else if (over || bytes > UINT64_MAX / d) over = 1;
        else bytes *= d;
    }
    if (zero) bytes = 0, over = 0;
    if (!cJSON_IsArray(offsets) || cJSON_GetArraySize(offsets) != 2 ||
        json_u64(cJSON_GetArrayItem(offsets, 0), &t->begin) ||
        json_u64(cJSON_GetArrayItem(offsets, 1), &t->end))
        return ec_set_error("%s: tensor '%s': data_offsets must be [begin, end] integers", file,
                            name);
    if (t->begin > t->end || t->end > data_size)
        return ec_set_error("%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] out of "
                            "bounds (data area is %" PRIu64 " bytes)", file, name, t->begin,
                            t->end, data_size);
    if (over)
        return ec_set_error("%s: tensor '%s': shape x dtype %s size overflows 64 bits", file, name,
                            dtypes[t->dtype].name);
    if (bytes != t->end - t->begin)
        return ec_set_error("%s: tensor '%s': shape x dtype %s size is %" PRIu64 " bytes but "
                            "data_offsets span %" PRIu64, file, name, dtypes[t->dtype].name, bytes,
                            t->end - t->begin);
    return 0;
}

static int check_metadata(const cJSON *meta, const char *file)
{
    if (!cJSON_IsObject(meta))
        return ec_set_error("%s: __metadata__ is not a JSON object", file);
    const cJSON *f;
    cJSON_ArrayForEach(f, meta)
    {
        if (!cJSON_IsString(f))
            return ec_set_error("%s: __metadata__ value '%s' is not a string", file, f->string);
    }
    return 0;
}

/* Sorted by offset, every non-empty tensor must start at or after the end of the previous. */
static int check_overlaps(ec_st_header *h, const char *file)
{
    ec_st_tensor **by = malloc(h->n * sizeof *by);
    if (!by) return ec_set_error("%s: out of memory", file);
    size_t m = 0;
    for (size_t i = 0; i < h->n; i++)
        if (h->tensors[i].end > h->tensors[i].begin) by[m++] = &h->tensors[i];
    qsort(by, m, sizeof *by, cmp_begin);
    int rc = 0;
    for (size_t i = 1; i < m && !rc; i++)
        if (by[i]->begin < by[i - 1]->end)
            rc = ec_set_error("%s: tensor '%s' (bytes %" PRIu64 "..%" PRIu64 ") overlaps tensor "
                              "'%s' (bytes %" PRIu64 "..%" PRIu64 ")", file, by[i]->name,
                              by[i]->begin, by[i]->end, by[i - 1]->name, by[i - 1]->begin,
                              by[i - 1]->end);
    free(by);
    return rc;
}

int ec_st_parse(const unsigned char *buf, size_t size, const char *file, ec_st_header *out)
{
    memset(out, 0, sizeof *out);
    if (size < 8)
        return ec_set_error("%s: truncated: %zu bytes, less than the 8-byte header length", file,
                            size);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | buf[i];
    if (hlen > EC_ST_MAX_HEADER)
        return ec_set_error("%s: header length %" PRIu64 " exceeds the 100 MB limit", file, hlen);
    if (hlen > size - 8)
        return ec_set_error("%s: truncated: header length %" PRIu64 " but only %zu bytes follow",
                            file, hlen, size - 8);
    cJSON *root = cJSON_ParseWithLength((const char *)buf + 8, (size_t)hlen);
    if (!root) return ec_set_error("%s: header is not well-formed JSON", file);
    int rc = 0;
    if (!cJSON_IsObject(root)) {
        rc = ec_set_error("%s: header is not a JSON object", file);
        goto done;
    }
    out->tensors = calloc((size_t)cJSON_GetArraySize(root) + 1, sizeof *out->tensors);
    if (!out->tensors) {
        rc = ec_set_error("%s: out of memory", file);
        goto done;
    }
    uint64_t data_size = size - 8 - hlen;
    const cJSON *e;
    cJSON_ArrayForEach(e, root)
    {
        if (!strcmp(e->string, "__metadata__")) {
            if ((rc = check_metadata(e, file))) goto done;
            continue;
        }
        ec_st_tensor *t = &out->tensors[out->n];
        if (!(t->name = strdup(e->string))) {
            rc = ec_set_error("%s: out of memory", file);
            goto done;
        }
        out->n++;
        if ((rc = parse_tensor(e, file, data_size, t))) goto done;
        t->begin += 8 + hlen;
        t->end += 8 + hlen;
    }
    if ((rc = check_overlaps(out, file))) goto done;
    qsort(out->tensors, out->n, sizeof *out->tensors, cmp_name);
    for (size_t i = 1; i < out->n && !rc; i++)
        if (!strcmp(out->tensors[i].name, out->tensors[i - 1].name))
            rc = ec_set_error("%s: tensor '%s' appears twice", file, out->tensors[i].name);
done:
    cJSON_Delete(root);
    if (rc) ec_st_free(out);
    return rc;
}
