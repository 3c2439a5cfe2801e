/* test_st_malformed.c — the safetensors header parser over a fixed set of malformed buffers, so
 * CI exercises what the fuzzer explores (tests/fuzz) without clang: each is rejected with the
 * expected message, and the valid ones parse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "ecocompute/common.h"
#include "model/safetensors.h"

/* Builds an exactly sized file image: 8-byte length, header text, data_len zero bytes. */
static unsigned char *image(const char *header, size_t data_len, size_t *size)
{
    size_t h = strlen(header);
    *size = 8 + h + data_len;
    unsigned char *b = calloc(1, *size);
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)h >> (8 * i));
    memcpy(b + 8, header, h);
    return b;
}

static const struct {
    const char *header;
    size_t data;
    const char *error; /* NULL: must parse */
} cases[] = {
    {"{}", 0, NULL},
    {"{\"__metadata__\":{\"k\":\"v\"},\"a\":{\"dtype\":\"F16\",\"shape\":[2,2],"
     "\"data_offsets\":[0,8]}}", 8, NULL},
    {"{\"e\":{\"dtype\":\"F32\",\"shape\":[0,7],\"data_offsets\":[0,0]},"
     "\"s\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1]}}", 1, NULL},
    {"[]", 0, "not a JSON object"},
    {"{\"a\":1}", 0, "tensor 'a': entry is not a JSON object"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},", 4, "well-formed"},
    {"{\"__metadata__\":{\"k\":1}}", 0, "__metadata__ value 'k' is not a string"},
    {"{\"__metadata__\":[]}", 0, "__metadata__ is not a JSON object"},
    {"{\"a\":{\"dtype\":\"X\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "dtype is missing"},
    {"{\"a\":{\"dtype\":4,\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "dtype is missing"},
    {"{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "dtype is missing"},
    {"{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, "shape is missing"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4, "shape[0]"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1,\"2\"],\"data_offsets\":[0,8]}}", 8, "shape[1]"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4,
     "9 dimensions"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1e300],\"data_offsets\":[0,4]}}", 4, "shape[0]"},
    {"{\"a\":{\"dtype\":\"F64\",\"shape\":[9007199254740992,9007199254740992],"
     "\"data_offsets\":[0,8]}}", 8, "overflows 64 bits"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4, "data_offsets must"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", 8, "data_offsets must"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}", 4, "data_offsets must"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]}}", 8, "out of bounds"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 7, "out of bounds"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, "8 bytes but"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":1}}", 4,
     "unexpected or repeated key 'x'"},
    {"{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
     "repeated key 'dtype'"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
     "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "'a' appears twice"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
     "\"b\":{\"dtype\":\"I8\",\"shape\":[1],\"data_offsets\":[7,8]}}", 8, "overlaps"},
};

static void test_cases(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        size_t size;
        unsigned char *b = image(cases[i].header, cases[i].data, &size);
        ec_st_header h;
        int rc = ec_st_parse(b, size, "case.safetensors", &h);
        if (!cases[i].error) {
            if (rc) fail_msg("case %zu rejected: %s", i, ec_last_error());
            ec_st_free(&h);
        } else if (!rc) {
            fail_msg("case %zu accepted: %s", i, cases[i].header);
        } else if (!strstr(ec_last_error(), cases[i].error) ||
                   !strstr(ec_last_error(), "case.safetensors")) {
            fail_msg("case %zu: '%s' lacks '%s'", i, ec_last_error(), cases[i].error);
        }
        free(b);
    }
}

static void test_lengths_and_lookup(void **state)
{
    (void)state;
    ec_st_header h;
    unsigned char short_buf[7] = {0};
    assert_int_equal(ec_st_parse(short_buf, sizeof short_buf, "f", &h), -1);
    assert_non_null(strstr(ec_last_error(), "truncated"));
    unsigned char huge[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    assert_int_equal(ec_st_parse(huge, sizeof huge, "f", &h), -1);
    assert_non_null(strstr(ec_last_error(), "100 MB"));
    unsigned char past[12] = {5, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' '};
    assert_int_equal(ec_st_parse(past, sizeof past, "f", &h), -1);
    assert_non_null(strstr(ec_last_error(), "truncated: header length 5"));
    size_t size;
    unsigned char *b = image("{\"z\":{\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[2,8]},"
                             "\"y\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}",
                             8, &size);
    assert_int_equal(ec_st_parse(b, size, "f", &h), 0);
    assert_int_equal(h.n, 2);
    const ec_st_tensor *z = ec_st_find(&h, "z");
    assert_non_null(z);
    assert_int_equal(z->dtype, EC_ST_BF16);
    assert_int_equal(z->shape[0], 3);
    /* Offsets are absolute in the file: after the length word and the header. */
    assert_int_equal(z->begin, size - 8 + 2);
    assert_int_equal(z->end, size);
    assert_null(ec_st_find(&h, "x"));
    ec_st_free(&h);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
        cmocka_unit_test(test_lengths_and_lookup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
