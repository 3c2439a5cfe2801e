/* test_accuracy.c — accuracy rows in the results database and in export files: stored and loaded
 * back field for field, appended (a second evaluation is a second row) yet never doubled by a
 * re-import; a version 4 database (before accuracy rows) still reads (with none) and migrates
 * with its runs kept; CSV and JSON exports read back identically; malformed and out-of-range
 * files refused; SHA-256 against the FIPS 180-2 vectors; docs/data-schema.md lists exactly the
 * accuracy columns, in order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "ecocompute/accuracy.h"
#include "store/store_internal.h"

#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/ec_accuracy_XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static const char *path(const char *name)
{
    static char p[4][160];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
    return p[k];
}

static void fill(ec_accuracy_record *r, const char *prec, double ppl, const char *when)
{
    ec_accuracy_record_init(r);
    snprintf(r->source, sizeof r->source, "ecocompute");
    snprintf(r->timestamp_utc, sizeof r->timestamp_utc, "%s", when);
    snprintf(r->model, sizeof r->model, "stories260K.bin");
    snprintf(r->precision, sizeof r->precision, "%s", prec);
    snprintf(r->kernels, sizeof r->kernels, "fused");
    snprintf(r->device, sizeof r->device, "cuda:0");
    snprintf(r->gpu_name, sizeof r->gpu_name, "NVIDIA H200");
    snprintf(r->dataset, sizeof r->dataset, "wiki, \"test\".raw"); /* CSV quoting */
    snprintf(r->dataset_sha256, sizeof r->dataset_sha256, "%064d", 7);
    r->params_b = 2.6e-4;
    r->window = 512;
    r->stride = 256;
    r->ppl_tokens = 18717;
    r->perplexity = ppl;
    r->kl_positions = 64;
    r->kl_seed = 1;
    r->kl_vs_f32 = 1.0 / 3.0 * 1e-6;
    r->top1_agreement_pct = 98.4375;
    r->max_abs_dlogit = 0.1;
    r->quantize_head = 0;
}

/* Equal in every column (accuracy_id aside). */
static void assert_same(const ec_accuracy_record *a, const ec_accuracy_record *b)
{
    size_t nc;
    const ec_column *c = ec_accuracy_columns(&nc);
    for (size_t j = 0; j < nc; j++) {
        char x[256] = "", y[256] = "";
        if (!strcmp(c[j].name, "accuracy_id")) continue;
        int kx = ec_column_text(&c[j], a, x, sizeof x), ky = ec_column_text(&c[j], b, y, sizeof y);
        if (kx != ky || strcmp(x, y)) fail_msg("%s: '%s' vs '%s'", c[j].name, x, y);
    }
}

static void test_store_round_trip(void **state)
{
    (void)state;
    ec_store *s;
    assert_int_equal(ec_store_open(&s, path("a.db"), 0), 0);
    ec_accuracy_record in[3];
    fill(&in[0], "fp16", 7.4370361748222, "2026-01-01T00:00:00.000Z");
    fill(&in[1], "int8-mixed", 7.5, "2026-01-01T00:00:00.000Z");
    in[1].int8_threshold = 6.0;
    fill(&in[2], "fp16", 7.4370361748222, "2026-01-01T00:00:05.000Z"); /* evaluated again */
    size_t added = 0;
    assert_int_equal(ec_store_insert_accuracy(s, in, 3, &added), 0);
    assert_int_equal(added, 3);
    /* The same rows again (an import of an export of them) add nothing. */
    assert_int_equal(ec_store_insert_accuracy(s, in, 3, &added), 0);
    assert_int_equal(added, 0);
    ec_accuracy_record *out;
    size_t n;
    ec_accuracy_filter f = {.precision = "fp16"};
    assert_int_equal(ec_store_load_accuracy(s, &f, &out, &n), 0);
    assert_int_equal(n, 2);
    assert_same(&out[0], &in[0]);
    assert_same(&out[1], &in[2]);
    assert_true(out[0].accuracy_id > 0 && out[1].accuracy_id > out[0].accuracy_id);
    free(out);
    assert_int_equal(ec_store_load_accuracy(s, NULL, &out, &n), 0);
    assert_int_equal(n, 3);
    assert_true(out[1].int8_threshold == 6.0 && isnan(out[0].int8_threshold));
    free(out);
    ec_store_close(s);
}

/* A database as version 4 wrote it: readable (no accuracy rows), migrated by a writer with its
 * runs kept, then taking accuracy rows. */
static void test_migrates_v4(void **state)
{
    (void)state;
    const char *p = path("v4.db");
    sqlite3 *db;
    assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
    for (int v = 0; v < 4; v++)
        assert_int_equal(sqlite3_exec(db, ec_store_migrations[v], NULL, NULL, NULL), SQLITE_OK);
    char pragma[96];
    snprintf(pragma, sizeof pragma, "PRAGMA user_version = 4; PRAGMA application_id = %d",
             EC_STORE_APPLICATION_ID);
    assert_int_equal(sqlite3_exec(db, pragma, NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "INSERT INTO sessions (id, gpu_name) VALUES ('s', 'Old')",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    ec_store *s;
    assert_int_equal(ec_store_open(&s, p, 1), 0);
    assert_int_equal(ec_store_schema_version(s), 4);
    ec_accuracy_record *out;
    size_t n = 9;
    assert_int_equal(ec_store_load_accuracy(s, NULL, &out, &n), 0);
    assert_int_equal(n, 0);
    ec_store_close(s);
    assert_int_equal(ec_store_open(&s, p, 0), 0);
    assert_int_equal(ec_store_schema_version(s), EC_STORE_SCHEMA_VERSION);
    ec_accuracy_record r;
    fill(&r, "nf4", 8.0, "2026-01-02T00:00:00.000Z");
    assert_int_equal(ec_store_insert_accuracy(s, &r, 1, NULL), 0);
    assert_int_equal(ec_store_load_accuracy(s, NULL, &out, &n), 0);
    assert_int_equal(n, 1);
    free(out);
    ec_store_close(s);
    assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT gpu_name FROM sessions", -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0), "Old");
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static void write_read(ec_format fmt, const char *name)
{
    ec_accuracy_record in[2];
    fill(&in[0], "fp16", 7.4370361748222, "2026-01-01T00:00:00.000Z");
    fill(&in[1], "nf4", 8.25, "2026-01-01T00:00:00.000Z");
    in[1].kl_vs_f32 = NAN; /* unknown stays unknown */
    FILE *f = fopen(path(name), "w");
    assert_non_null(f);
    assert_int_equal(ec_accuracy_write(f, fmt, in, 2), 0);
    fclose(f);
    ec_accuracy_record *out;
    size_t n;
    assert_int_equal(ec_accuracy_read(path(name), &out, &n), 0);
    assert_int_equal(n, 2);
    assert_same(&out[0], &in[0]);
    assert_same(&out[1], &in[1]);
    assert_true(isnan(out[1].kl_vs_f32));
    free(out);
}

static void test_file_round_trip(void **state)
{
    (void)state;
    write_read(EC_FORMAT_CSV, "a.csv");
    write_read(EC_FORMAT_JSON, "a.json");
}

static void put(const char *name, const char *text)
{
    FILE *f = fopen(path(name), "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_not_or_bad(void **state)
{
    (void)state;
    ec_accuracy_record *out = NULL;
    size_t n;
    /* Other files are not accuracy exports (1): a runs export, a runs JSON export, text. */
    put("runs.csv", "source,licence,energy_definition,model\r\necocompute,,gross,tiny\r\n");
    assert_int_equal(ec_accuracy_read(path("runs.csv"), &out, &n), 1);
    put("runs.json", "{\"ecocompute_export\": \"runs\", \"schema_version\": 5, \"rows\": []}");
    assert_int_equal(ec_accuracy_read(path("runs.json"), &out, &n), 1);
    put("text.txt", "Once upon a time");
    assert_int_equal(ec_accuracy_read(path("text.txt"), &out, &n), 1);
    /* Accuracy exports that are malformed (-1, with the reason). */
    static const struct {
        const char *text, *why;
    } bad[] = {
        {"source,licence,accuracy_id,bogus\r\n,,1,2\r\n", "unknown column 'bogus'"},
        {"source,licence,accuracy_id,window\r\n,,1,1.5\r\n", "bad window value"},
        {"source,licence,accuracy_id,perplexity\r\n,,1,0\r\n", "perplexity = 0"},
        {"source,licence,accuracy_id,top1_agreement_pct\r\n,,1,101\r\n", "within 0..100"},
        {"{\"ecocompute_export\": \"accuracy\", \"schema_version\": 99, \"rows\": []}", "newer"},
        {"{\"ecocompute_export\": \"accuracy\", \"schema_version\": 5, \"rows\": [{\"model\": 1}]}",
         "wrong JSON type"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        put("bad", bad[i].text);
        assert_int_equal(ec_accuracy_read(path("bad"), &out, &n), -1);
        if (!strstr(ec_last_error(), bad[i].why))
            fail_msg("'%s': got '%s', want '%s'", bad[i].text, ec_last_error(), bad[i].why);
    }
}

static void test_sha256(void **state)
{
    (void)state;
    char hex[65];
    ec_sha256_hex("abc", 3, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    ec_sha256_hex("", 0, hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"; /* 2 blocks */
    ec_sha256_hex(two, strlen(two), hex);
    assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    put("million", "");
    FILE *f = fopen(path("million"), "w");
    for (int i = 0; i < 1000000; i++)
        fputc('a', f);
    fclose(f);
    assert_int_equal(ec_sha256_file(path("million"), hex), 0);
    assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    assert_int_equal(ec_sha256_file(path("absent"), hex), -1);
}

/* docs/data-schema.md lists every accuracy column, in order, with its unit, in its "Accuracy
 * columns" section. */
static void test_documented(void **state)
{
    (void)state;
    FILE *f = fopen(EC_SOURCE_DIR "/docs/data-schema.md", "r");
    assert_non_null(f);
    size_t n, next = 0;
    const ec_column *c = ec_accuracy_columns(&n);
    char line[1024];
    int in_section = 0;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "#", 1)) in_section = strstr(line, "Accuracy columns") != NULL;
        char name[128];
        if (!in_section || sscanf(line, "| `%127[^`]` |", name) != 1) continue;
        if (next < n && !strcmp(name, c[next].name)) {
            if (*c[next].unit && !strstr(line, c[next].unit))
                fail_msg("docs: %s lacks its unit %s", name, c[next].unit);
            next++;
        } else {
            fail_msg("docs: accuracy column %s is not the next column (%s)", name,
                     next < n ? c[next].name : "none");
        }
    }
    fclose(f);
    if (next != n) fail_msg("docs/data-schema.md: accuracy column %s missing", c[next].name);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_store_round_trip), cmocka_unit_test(test_migrates_v4),
        cmocka_unit_test(test_file_round_trip),  cmocka_unit_test(test_not_or_bad),
        cmocka_unit_test(test_sha256),           cmocka_unit_test(test_documented),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
