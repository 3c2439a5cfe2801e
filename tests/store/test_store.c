/* test_store.c — the results database: creation and schema version, forward migration from
 * version 1, refusing foreign, damaged, non-SQLite and newer files without touching them,
 * configurations and attempts, imports (dedup, session environments), calibrations, a session's
 * power trace read back, and the default path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "ecocompute/store.h"
#include "store/store_internal.h"

#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/ec_store_XXXXXX");
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

static void sql(const char *file, const char *text)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(file, &db), SQLITE_OK);
    char *msg = NULL;
    int rc = sqlite3_exec(db, text, NULL, NULL, &msg);
    if (rc != SQLITE_OK) fail_msg("%s: %s", text, msg);
    sqlite3_close(db);
}

/* Reads a whole file (to prove a refused file was not modified). */
static char *slurp(const char *file, size_t *len)
{
    FILE *f = fopen(file, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    rewind(f);
    char *b = malloc(*len + 1);
    assert_int_equal(fread(b, 1, *len, f), *len);
    fclose(f);
    return b;
}

static void assert_refused_untouched(const char *file, const char *why)
{
    size_t n0, n1;
    char *before = slurp(file, &n0);
    ec_store *s;
    assert_int_equal(ec_store_open(&s, file, 0), -1);
    if (!strstr(ec_last_error(), why)) fail_msg("'%s' lacks '%s'", ec_last_error(), why);
    assert_non_null(strstr(ec_last_error(), file));
    assert_int_equal(ec_store_open(&s, file, 1), -1);
    char *after = slurp(file, &n1);
    assert_int_equal(n0, n1);
    assert_memory_equal(before, after, n0);
    free(before);
    free(after);
    char wal[200];
    snprintf(wal, sizeof wal, "%s-wal", file);
    assert_int_not_equal(access(wal, F_OK), 0);
}

static void test_create_and_reopen(void **state)
{
    (void)state;
    const char *p = path("sub/dir/new.db"); /* directories are created */
    ec_store *s;
    assert_int_equal(ec_store_open(&s, path("absent.db"), 1), -1);
    assert_non_null(strstr(ec_last_error(), "no results database"));
    assert_int_equal(ec_store_open(&s, p, 0), 0);
    assert_int_equal(ec_store_schema_version(s), EC_STORE_SCHEMA_VERSION);
    ec_store_close(s);
    assert_int_equal(ec_store_open(&s, p, 1), 0); /* read-only reopen of a current file */
    ec_run_record *r;
    size_t n;
    assert_int_equal(ec_store_load_runs(s, NULL, &r, &n), 0);
    assert_int_equal(n, 0);
    assert_null(r);
    ec_store_close(s);
    sqlite3 *db;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0), "wal");
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static void test_refuses_foreign_damaged_newer(void **state)
{
    (void)state;
    FILE *f = fopen(path("text.db"), "w");
    fputs("name,value\nx,1\n", f);
    fclose(f);
    assert_refused_untouched(path("text.db"), "not an SQLite file");

    sql(path("other.db"), "CREATE TABLE t (x); INSERT INTO t VALUES (1);");
    assert_refused_untouched(path("other.db"), "another program");

    ec_store *s;
    assert_int_equal(ec_store_open(&s, path("newer.db"), 0), 0);
    ec_store_close(s);
    sql(path("newer.db"), "PRAGMA journal_mode = DELETE; PRAGMA user_version = 99");
    assert_refused_untouched(path("newer.db"), "newer");

    /* Damage: overwrite the middle of a valid database (its pages, not the header). */
    assert_int_equal(ec_store_open(&s, path("bad.db"), 0), 0);
    ec_store_close(s);
    sql(path("bad.db"), "PRAGMA journal_mode = DELETE");
    size_t n;
    char *b = slurp(path("bad.db"), &n);
    assert_true(n > 8192);
    memset(b + 4096, 0x5a, n - 4096);
    f = fopen(path("bad.db"), "wb");
    fwrite(b, 1, n, f);
    fclose(f);
    free(b);
    assert_refused_untouched(path("bad.db"), "damaged");
}

/* A version 1 file (as the first release wrote it) is migrated to the current version, keeping
 * its data; a read-only open asks for a migration instead of failing obscurely. */
static void test_migrates_v1(void **state)
{
    (void)state;
    const char *p = path("v1.db");
    char text[8192];
    snprintf(text, sizeof text,
             "%s PRAGMA user_version = 1; PRAGMA application_id = %d;"
             "INSERT INTO sessions (id, gpu_name) VALUES ('s1', 'Old GPU');",
             ec_store_migrations[0], EC_STORE_APPLICATION_ID);
    sql(p, text);
    ec_store *s;
    assert_int_equal(ec_store_open(&s, p, 1), -1);
    assert_non_null(strstr(ec_last_error(), "older schema"));
    assert_int_equal(ec_store_open(&s, p, 0), 0);
    assert_int_equal(ec_store_schema_version(s), EC_STORE_SCHEMA_VERSION);
    ec_calibration c;
    memset(&c, 0, sizeof c);
    snprintf(c.gpu_uuid, sizeof c.gpu_uuid, "GPU-x");
    assert_int_equal(ec_store_insert_calibration(s, &c), 0); /* the v2 table exists */
    ec_store_close(s);
    sqlite3 *db;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
    assert_int_equal(
        sqlite3_prepare_v2(db, "SELECT gpu_name FROM sessions WHERE id = 's1'", -1, &st, NULL),
        SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0), "Old GPU");
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* A version 5 file (before tensor parallelism) with one finished configuration and its run:
 * read as it is (tp 1, no interconnect), then migrated with the configuration's id, state and run
 * kept; the same configuration at another world size is a new one. */
static void test_migrates_v5(void **state)
{
    (void)state;
    const char *p = path("v5.db");
    char text[16384];
    size_t len = 0;
    for (int v = 0; v < 5; v++)
        len += (size_t)snprintf(text + len, sizeof text - len, "%s", ec_store_migrations[v]);
    snprintf(text + len, sizeof text - len,
             "PRAGMA user_version = 5; PRAGMA application_id = %d;"
             "INSERT INTO sessions (id, gpu_name) VALUES ('s1', 'Old GPU');"
             "INSERT INTO configurations (id, tag, model, precision, kernels, device, gpu_uuid,"
             " batch, prompt_len, gen_len, protocol, runs, attempt, gate) VALUES (7, '', 'tiny',"
             " 'fp16', 'fused', 'cuda:0', 'GPU-a', 1, 8, 8, 'runs=1', 1, 1, 'pass');"
             "INSERT INTO runs (id, config_id, session_id, attempt, run_index, fingerprint, source,"
             " licence, energy_definition, timestamp_utc, gpu_energy_method, tok_s) VALUES (3, 7,"
             " 's1', 1, 0, 'f', 'ecocompute', '', 'gross', '2026-01-01T00:00:00Z', 'counter', 42);"
             "INSERT INTO phases (run_id, phase, time_s) VALUES (3, 'decode', 0.5);",
             EC_STORE_APPLICATION_ID);
    sql(p, text);
    ec_store *s;
    ec_run_record *r;
    size_t n;
    assert_int_equal(ec_store_open(&s, p, 1), 0);
    assert_int_equal(ec_store_schema_version(s), 5);
    assert_int_equal(ec_store_load_runs(s, NULL, &r, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(r[0].tp, 1);
    assert_string_equal(r[0].interconnect, "");
    free(r);
    ec_store_close(s);

    assert_int_equal(ec_store_open(&s, p, 0), 0);
    assert_int_equal(ec_store_schema_version(s), EC_STORE_SCHEMA_VERSION);
    assert_int_equal(ec_store_load_runs(s, NULL, &r, &n), 0);
    assert_int_equal(n, 1);
    assert_true(r[0].tok_s == 42 && r[0].decode.time_s == 0.5 && r[0].tp == 1);
    assert_string_equal(r[0].gpu_name, "Old GPU");
    free(r);
    ec_config_key k;
    memset(&k, 0, sizeof k);
    snprintf(k.model, sizeof k.model, "tiny");
    snprintf(k.precision, sizeof k.precision, "fp16");
    snprintf(k.kernels, sizeof k.kernels, "fused");
    snprintf(k.device, sizeof k.device, "cuda:0");
    snprintf(k.gpu_uuid, sizeof k.gpu_uuid, "GPU-a");
    snprintf(k.protocol, sizeof k.protocol, "runs=1");
    k.batch = 1;
    k.prompt_len = k.gen_len = 8;
    k.runs = 1;
    k.params_b = NAN;
    k.tp = 1;
    ec_config_state st;
    assert_int_equal(ec_store_config(s, &k, &st), 0);
    assert_int_equal(st.id, 7);
    assert_int_equal(st.attempt, 1);
    assert_int_equal(st.gate, EC_GATE_PASS);
    assert_int_equal(st.committed, 1);
    k.tp = 2;
    assert_int_equal(ec_store_config(s, &k, &st), 0);
    assert_true(st.id != 7);
    assert_int_equal(st.gate, EC_GATE_PENDING);
    ec_store_close(s);
}

static void fill(ec_run_record *r, const char *session, const char *gpu, int run_index, double tok)
{
    ec_run_record_init(r);
    snprintf(r->source, sizeof r->source, "ecocompute");
    r->energy_definition = EC_ENERGY_GROSS;
    snprintf(r->session_id, sizeof r->session_id, "%s", session);
    snprintf(r->gpu_name, sizeof r->gpu_name, "%s", gpu);
    snprintf(r->model, sizeof r->model, "tiny");
    snprintf(r->precision, sizeof r->precision, "fp16");
    snprintf(r->kernels, sizeof r->kernels, "fused");
    snprintf(r->device, sizeof r->device, "cpu");
    snprintf(r->timestamp_utc, sizeof r->timestamp_utc, "2026-01-01T00:00:0%dZ", run_index);
    r->batch = 1;
    r->prompt_len = 8;
    r->gen_len = 8;
    r->run_index = run_index;
    r->tok_s = tok;
    r->gate = EC_GATE_PASS;
    r->prefill.tokens = 8;
    r->decode.gpu_energy_j = 1.5 * run_index;
}

/* Attempts: runs of a superseded attempt stay stored but are not loaded. */
static void test_configs_and_attempts(void **state)
{
    (void)state;
    ec_store *s;
    assert_int_equal(ec_store_open(&s, path("cfg.db"), 0), 0);
    ec_session e;
    memset(&e, 0, sizeof e);
    e.power_limit_w = NAN;
    e.idle_power_w = NAN;
    assert_int_equal(ec_store_begin_session(s, &e), 0);
    assert_true(strlen(e.id) > 16);
    ec_config_key k;
    memset(&k, 0, sizeof k);
    snprintf(k.model, sizeof k.model, "tiny");
    snprintf(k.precision, sizeof k.precision, "fp16");
    snprintf(k.protocol, sizeof k.protocol, "runs=2");
    k.batch = 1;
    k.runs = 2;
    k.params_b = NAN;
    ec_config_state st;
    assert_int_equal(ec_store_config(s, &k, &st), 0);
    assert_int_equal(st.gate, EC_GATE_PENDING);
    assert_int_equal(st.committed, 0);
    for (int i = 0; i < 2; i++) {
        ec_run_record r;
        fill(&r, e.id, "", i, 100 + i);
        r.params_b = 0.5;
        assert_int_equal(ec_store_insert_run(s, st.id, 0, &r, NULL), 0);
    }
    assert_int_equal(ec_store_finish_attempt(s, st.id, 0, EC_GATE_PENDING, 9.0, NAN), 0);
    assert_int_equal(ec_store_finish_attempt(s, st.id, 0, EC_GATE_PENDING, 9.0, NAN), 0);
    assert_int_equal(ec_store_config(s, &k, &st), 0);
    assert_int_equal(st.attempt, 1); /* a repeated call did not skip an attempt */
    assert_int_equal(st.committed, 0);
    ec_run_record r;
    fill(&r, e.id, "", 0, 200);
    assert_int_equal(ec_store_insert_run(s, st.id, 1, &r, NULL), 0);
    assert_int_equal(ec_store_config(s, &k, &st), 0);
    assert_int_equal(st.committed, 1);
    assert_int_equal(ec_store_finish_attempt(s, st.id, 1, EC_GATE_FAIL, 3.0, 1.0), 0);
    assert_int_equal(ec_store_config(s, &k, &st), 0);
    assert_int_equal(st.gate, EC_GATE_FAIL);
    assert_true(st.cv_tok_pct == 3.0);
    ec_run_record *got;
    size_t n;
    assert_int_equal(ec_store_load_runs(s, NULL, &got, &n), 0);
    assert_int_equal(n, 1);
    assert_true(got[0].tok_s == 200);
    assert_int_equal(got[0].gate, EC_GATE_FAIL);
    assert_true(got[0].params_b == 0.5);
    free(got);
    assert_int_equal(ec_store_load_attempt(s, st.id, 0, &got, &n), 0);
    assert_int_equal(n, 2);
    free(got);
    ec_store_close(s);
}

static void test_import_records(void **state)
{
    (void)state;
    ec_store *s;
    assert_int_equal(ec_store_open(&s, path("imp.db"), 0), 0);
    ec_run_record r[4];
    fill(&r[0], "S", "GPU A", 0, 10);
    fill(&r[1], "S", "GPU A", 1, 11);
    fill(&r[2], "S", "GPU B", 0, 12); /* same session id, other environment */
    fill(&r[3], "", "GPU C", 0, 13);  /* no session id */
    snprintf(r[3].source, sizeof r[3].source, "seed/x.csv");
    snprintf(r[3].licence, sizeof r[3].licence, "CC-BY-4.0");
    r[3].energy_definition = EC_ENERGY_NET;
    r[3].gate = EC_GATE_UNKNOWN;
    size_t added;
    assert_int_equal(ec_store_insert_records_counted(s, r, 4, &added), 0);
    assert_int_equal(added, 4);
    assert_int_equal(ec_store_insert_records_counted(s, r, 4, &added), 0);
    assert_int_equal(added, 0);
    assert_int_equal(ec_store_insert_records(s, r, 2), 0);
    ec_run_record *got;
    size_t n;
    assert_int_equal(ec_store_load_runs(s, NULL, &got, &n), 0);
    assert_int_equal(n, 4);
    assert_string_equal(got[0].session_id, "S");
    assert_string_equal(got[2].gpu_name, "GPU B");
    assert_true(strncmp(got[2].session_id, "S~", 2) == 0);
    assert_true(strncmp(got[3].session_id, "import-", 7) == 0);
    assert_string_equal(got[3].licence, "CC-BY-4.0");
    assert_int_equal(got[3].energy_definition, EC_ENERGY_NET);
    assert_int_equal(got[3].gate, EC_GATE_UNKNOWN);
    assert_true(got[1].decode.gpu_energy_j == 1.5);
    assert_true(isnan(got[1].decode.time_s));
    assert_int_equal(got[1].prefill.tokens, 8);
    free(got);
    ec_run_filter f = {.gpu = "GPU B"};
    assert_int_equal(ec_store_load_runs(s, &f, &got, &n), 0);
    assert_int_equal(n, 1);
    free(got);
    ec_run_filter g = {.model = "tiny", .batch = 2};
    assert_int_equal(ec_store_load_runs(s, &g, &got, &n), 0);
    assert_int_equal(n, 0);
    ec_store_close(s);
}

static void test_calibrations(void **state)
{
    (void)state;
    ec_store *s;
    assert_int_equal(ec_store_open(&s, path("cal.db"), 0), 0);
    ec_calibration c, got;
    assert_int_equal(ec_store_latest_calibration(s, "GPU-1", &got), -1);
    for (int i = 0; i < 2; i++) {
        memset(&c, 0, sizeof c);
        snprintf(c.gpu_name, sizeof c.gpu_name, "H100");
        snprintf(c.gpu_uuid, sizeof c.gpu_uuid, "GPU-1");
        snprintf(c.timestamp_utc, sizeof c.timestamp_utc, "2026-0%d-01T00:00:00Z", i + 1);
        c.idle_power_w = 100 + i;
        c.read.rate = 3.03e12;
        c.read.pj_per_unit_net = 143;
        c.gemm.avg_power_w = NAN;
        assert_int_equal(ec_store_insert_calibration(s, &c), 0);
    }
    assert_int_equal(ec_store_latest_calibration(s, "GPU-1", &got), 0);
    assert_true(got.idle_power_w == 101);
    assert_true(got.read.rate == 3.03e12);
    assert_true(isnan(got.gemm.avg_power_w));
    assert_string_equal(got.gpu_name, "H100");
    ec_store_close(s);
}

static void test_traces(void **state)
{
    (void)state;
    ec_store *s;
    assert_int_equal(ec_store_open(&s, path("tr.db"), 0), 0);
    ec_session e;
    memset(&e, 0, sizeof e);
    e.power_limit_w = NAN;
    e.idle_power_w = 120;
    assert_int_equal(ec_store_begin_session(s, &e), 0);
    /* two GPUs; GPU 0's lost tick and GPU 1 are left out; the rows come out by time */
    FILE *f = fopen(path("tr.csv"), "w");
    assert_non_null(f);
    fputs("t_s,gpu,energy_mj,power_instant_w,power_avg_w,sm_mhz,mem_mhz,temp_c,"
          "clock_event_reasons,util_gpu_pct,util_mem_pct,lost\n"
          "0.2,0,,300,,,,,,,,0\n0.1,0,,200,,,,,,,,0\n0.1,1,,999,,,,,,,,0\n"
          "0.3,0,,888,,,,,,,,1\n0.4,0,,,,,,,,,,0\n",
          f);
    fclose(f);
    assert_int_equal(ec_store_import_trace(s, e.id, path("tr.csv")), 0);
    ec_session_trace t;
    assert_int_equal(ec_store_load_trace(s, e.id, &t), 0);
    assert_int_equal(t.n, 2);
    assert_true(t.points[0].t_s == 0.1 && t.points[0].power_w == 200);
    assert_true(t.points[1].t_s == 0.2 && t.points[1].power_w == 300);
    assert_true(t.idle_power_w == 120);
    assert_string_equal(t.started_utc, e.started_utc);
    ec_session_trace_free(&t);
    assert_int_equal(ec_store_load_trace(s, "no-such-session", &t), 0);
    assert_int_equal(t.n, 0);
    assert_true(isnan(t.idle_power_w));
    ec_session_trace_free(&t);
    ec_store_close(s);
}

static void test_default_path(void **state)
{
    (void)state;
    setenv("XDG_DATA_HOME", "/data/x", 1);
    assert_string_equal(ec_store_default_path(), "/data/x/ecocompute/results.db");
    setenv("XDG_DATA_HOME", "relative", 1); /* ignored, as the XDG spec says */
    setenv("HOME", "/home/u", 1);
    assert_string_equal(ec_store_default_path(), "/home/u/.local/share/ecocompute/results.db");
    unsetenv("XDG_DATA_HOME");
    assert_string_equal(ec_store_default_path(), "/home/u/.local/share/ecocompute/results.db");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_and_reopen),
        cmocka_unit_test(test_refuses_foreign_damaged_newer),
        cmocka_unit_test(test_migrates_v1),
        cmocka_unit_test(test_migrates_v5),
        cmocka_unit_test(test_configs_and_attempts),
        cmocka_unit_test(test_import_records),
        cmocka_unit_test(test_calibrations),
        cmocka_unit_test(test_traces),
        cmocka_unit_test(test_default_path),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
