/* safetensors.h — the safetensors header parser (8-byte little-endian header length, then a JSON
 * object of tensors {dtype, shape, data_offsets} and an optional __metadata__), validating every
 * field against the file it came from. Parsing works on a memory buffer so the fuzzer needs no
 * files. */
#ifndef ECOCOMPUTE_SAFETENSORS_H
#define ECOCOMPUTE_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#define EC_ST_MAX_HEADER (100u * 1000u * 1000u) /* the format's own limit on the JSON header */
#define EC_ST_MAX_DIMS 8

typedef enum {
    EC_ST_BOOL, EC_ST_U8, EC_ST_I8, EC_ST_F8_E4M3, EC_ST_F8_E5M2, EC_ST_I16, EC_ST_U16,
    EC_ST_F16, EC_ST_BF16, EC_ST_I32, EC_ST_U32, EC_ST_F32, EC_ST_I64, EC_ST_U64, EC_ST_F64,
    EC_ST_DTYPE_COUNT
} ec_st_dtype;

typedef struct {
    char *name;
    ec_st_dtype dtype;
    int ndim;
    uint64_t shape[EC_ST_MAX_DIMS]; /* [ndim] */
    uint64_t begin, end;            /* absolute byte range in the file: [begin, end) */
} ec_st_tensor;

typedef struct {
    ec_st_tensor *tensors; /* [n], sorted by name */
    size_t n;
} ec_st_header;

const char *ec_st_dtype_name(ec_st_dtype d);
size_t ec_st_dtype_size(ec_st_dtype d);
/* Parses and validates the header of the safetensors file image buf[0..size); `file` names it in
 * errors. Returns 0, or -1 with ec_last_error() naming the file, the tensor and the problem. */
int ec_st_parse(const unsigned char *buf, size_t size, const char *file, ec_st_header *out);
void ec_st_free(ec_st_header *h);
const ec_st_tensor *ec_st_find(const ec_st_header *h, const char *name); /* NULL if absent */

#endif
