/* test_bench.c — the protocol (bench.h) with the real CPU engine, the real meter over the fake
 * NVML library (one GPU at scripted power) and a real database: phase records and energy
 * arithmetic, quality gates with bounded re-runs, the "no CV" case, bounded auto stabilization,
 * stopping after a run and resuming without losing or repeating one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "ecocompute/bench.h"

#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    char dir[64], db[128];
    ec_meter *m;
    ec_store *st;
    ec_bench_spec spec;
} fixture;

/* Opens a meter on the fake NVML with power script `power` and a fresh database. */
static fixture *open_fixture(const char *power)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    snprintf(f->dir, sizeof f->dir, "/tmp/ec_bench_XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->db, sizeof f->db, "%s/r.db", f->dir);
    char env[1024];
    snprintf(env, sizeof env, "gpus=1 power=%s", power);
    setenv("ECOCOMPUTE_NVML_LIBRARY", FAKE_NVML_PATH, 1);
    setenv("FAKE_NVML", env, 1);
    setenv("ECOCOMPUTE_POWERCAP_ROOT", "/nonexistent", 1);
    ec_meter_options o;
    ec_meter_options_default(&o);
    o.interval_s = 0.01;
    f->m = ec_meter_open(&o);
    assert_non_null(f->m);
    assert_int_equal(ec_meter_gpu_count(f->m), 1);
    assert_int_equal(ec_meter_start(f->m), 0);
    assert_int_equal(ec_store_open(&f->st, f->db, 0), 0);
    ec_bench_spec *s = &f->spec;
    ec_bench_spec_default(s);
    snprintf(s->models[0], sizeof s->models[0], "tiny");
    s->nmodels = 1;
    s->prompt_lens[0] = 8;
    s->gens[0] = 6;
    s->warmup = 1;
    s->runs = 3;
    s->idle_s = 0;
    s->stabilize_s = 0;
    /* CPU timing noise must not fail these tests' gates unless a test wants it to. */
    s->cv_tok_pct = 1e6;
    return f;
}

static void close_fixture(fixture *f)
{
    ec_store_close(f->st);
    ec_meter_close(f->m);
    char path[160];
    const char *suffix[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s%s", f->db, suffix[i]);
        unlink(path);
    }
    rmdir(f->dir);
    free(f);
}

static int run(fixture *f, const volatile int *stop, void (*cb)(void *, const ec_bench_progress *),
               void *ctx, ec_bench_outcome *out)
{
    ec_bench_env env = {f->m, f->st, NULL, cb, ctx, stop, "test_bench", NULL};
    return ec_bench_run(&f->spec, &env, out);
}

static long count(fixture *f, const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open_v2(f->db, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    long n = (long)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

static double real(fixture *f, const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open_v2(f->db, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    double v = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

/* The fake's counter is exact to 1 mJ, but the meter reads the clock and then the counter, and a
 * loaded machine can preempt it in between (a CI run once saw more than 67 us, 0.01 J at 150 W).
 * A window's energy may be off by 150 W x 1 ms: 0.15 J, under a third of either phase's energy
 * here, so a record of the wrong window still fails. */
#define MISALIGN_J (150 * 0.001)

/* A run's record: phases, tokens, energy by counter at 150 W, J/1k both ways, provenance. */
static void test_phases_and_energy(void **state)
{
    (void)state;
    fixture *f = open_fixture("150");
    f->spec.idle_s = 0.2;
    f->spec.batches[0] = 2;
    ec_bench_outcome out;
    assert_int_equal(run(f, NULL, NULL, NULL, &out), 0);
    assert_int_equal(out.configs, 1);
    assert_int_equal(out.finished, 1);
    assert_int_equal(out.measured_runs, 3);
    assert_false(out.interrupted);
    ec_run_record *r;
    size_t n;
    assert_int_equal(ec_store_load_runs(f->st, NULL, &r, &n), 0);
    assert_int_equal(n, 3);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(r[i].run_index, (int)i);
        assert_int_equal(r[i].gate, EC_GATE_PASS);
        assert_string_equal(r[i].session_id, out.session_id);
        assert_string_equal(r[i].source, "ecocompute");
        assert_int_equal(r[i].energy_definition, EC_ENERGY_GROSS);
        assert_string_equal(r[i].gpu_name, "Fake H100 0");
        assert_string_equal(r[i].gpu_energy_method, "counter");
        assert_int_equal(r[i].prefill.tokens, 2 * 8);
        assert_int_equal(r[i].decode.tokens, 2 * 5);
        assert_true(r[i].prefill.time_s > 0 && r[i].decode.time_s > 0);
        assert_true(r[i].prefill.time_s + r[i].decode.time_s <= r[i].total_time_s);
        /* Constant 150 W: energy = 150 W x time. */
        assert_true(fabs(r[i].gpu_energy_j - 150 * r[i].total_time_s) < MISALIGN_J);
        assert_true(fabs(r[i].decode.gpu_energy_j - 150 * r[i].decode.time_s) < MISALIGN_J);
        assert_true(fabs(r[i].avg_power_w * r[i].total_time_s - r[i].gpu_energy_j) < 1e-9);
        assert_true(fabs(r[i].idle_power_w - 150) < 1);
        /* Net: the run's misalignment plus the idle window's (1 W over the run at most). */
        assert_true(fabs(r[i].gpu_energy_net_j) < MISALIGN_J + 1 * r[i].total_time_s);
        assert_true(fabs(r[i].j_per_1k_gross - r[i].gpu_energy_j * 1000 / (2 * 6)) < 1e-9);
        assert_true(fabs(r[i].j_per_1k_net - r[i].gpu_energy_net_j * 1000 / (2 * 6)) < 1e-9);
        assert_true(fabs(r[i].tok_s - 10 / r[i].decode.time_s) < 1e-6);
        assert_true(r[i].params_b > 0 && r[i].params_b < 0.01);
        assert_true(r[i].temp_max_c == 40);
        assert_true(isnan(r[i].prefill.cpu_energy_j)); /* RAPL unavailable: empty, never 0 */
    }
    free(r);
    assert_int_equal(count(f, "SELECT count(*) FROM sessions WHERE ended_utc IS NOT NULL AND "
                              "idle_s >= 0.2 AND abs(idle_power_w - 150) < 1"),
                     1);
    close_fixture(f);
}

/* An impossible throughput gate fails every attempt: 1 + max_reruns attempts of `runs` runs are
 * stored, the configuration is kept as failed, and only its final attempt is loaded. */
static void test_gate_fail_bounded(void **state)
{
    (void)state;
    fixture *f = open_fixture("150");
    f->spec.cv_tok_pct = 1e-9;
    f->spec.max_reruns = 2;
    ec_bench_outcome out;
    assert_int_equal(run(f, NULL, NULL, NULL, &out), 0);
    assert_int_equal(out.finished, 1);
    assert_int_equal(out.gate_failures, 1);
    assert_int_equal(out.measured_runs, 9);
    assert_int_equal(count(f, "SELECT count(*) FROM runs"), 9);
    assert_int_equal(count(f, "SELECT attempt FROM configurations"), 2);
    ec_run_record *r;
    size_t n;
    assert_int_equal(ec_store_load_runs(f->st, NULL, &r, &n), 0);
    assert_int_equal(n, 3);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(r[i].gate, EC_GATE_FAIL);
    free(r);
    assert_true(real(f, "SELECT cv_tok_pct FROM configurations") > 0);
    /* A finished configuration is not measured again. */
    assert_int_equal(run(f, NULL, NULL, NULL, &out), 0);
    assert_int_equal(out.already_done, 1);
    assert_int_equal(out.measured_runs, 0);
    close_fixture(f);
}

/* The power gate on its own: with power alternating 100/300 W every 50 ms the runs' average
 * power differs, and with no re-runs a bound no real spread can meet fails the configuration
 * (the throughput gate is wide open in these tests). */
static void test_gate_power(void **state)
{
    (void)state;
    char script[512] = "100";
    for (int i = 1; i < 16; i++) {
        size_t l = strlen(script);
        snprintf(script + l, sizeof script - l, ",%.2f:%d", 0.05 * i, i % 2 ? 300 : 100);
    }
    fixture *f = open_fixture(script);
    f->spec.cv_power_pct = 1e-9;
    f->spec.max_reruns = 0;
    ec_bench_outcome out;
    assert_int_equal(run(f, NULL, NULL, NULL, &out), 0);
    assert_int_equal(out.gate_failures, 1);
    assert_int_equal(count(f, "SELECT count(*) FROM runs"), 3);
    assert_true(real(f, "SELECT cv_power_pct FROM configurations") > 1e-9);
    close_fixture(f);
}

/* One measured run has no CV: the gate is "unknown", not a pass. */
static void test_gate_single_run(void **state)
{
    (void)state;
    fixture *f = open_fixture("150");
    f->spec.runs = 1;
    ec_bench_outcome out;
    assert_int_equal(run(f, NULL, NULL, NULL, &out), 0);
    assert_int_equal(out.finished, 1);
    assert_int_equal(count(f, "SELECT count(*) FROM configurations WHERE gate = 'unknown'"), 1);
    close_fixture(f);
}

/* Auto stabilization: power climbing 10 W every 0.3 s never settles (any window of readings spans
 * 80 W or more, however late each reading comes), so the wait ends at its bound; constant power
 * settles after one window of readings. */
static void test_stabilize_auto(void **state)
{
    (void)state;
    char script[512] = "100";
    for (int i = 1; i < 16; i++) {
        size_t l = strlen(script);
        snprintf(script + l, sizeof script - l, ",%.1f:%d", 0.3 * i, 100 + 10 * i);
    }
    fixture *f = open_fixture(script);
    f->spec.precisions[1] = EC_PREC_INT8; /* stabilization runs between configurations */
    f->spec.nprecisions = 2;
    f->spec.runs = 2;
    f->spec.stabilize_auto = 1;
    f->spec.stabilize_max_s = 4.0; /* longer than one window: drift, not the bound, decides */
    ec_bench_outcome out;
    double t0 = ec_now_s();
    assert_int_equal(run(f, NULL, NULL, NULL, &out), 0);
    assert_true(ec_now_s() - t0 < 10);
    assert_int_equal(count(f, "SELECT count(*) FROM configurations WHERE stabilize_settled = 0 "
                              "AND stabilize_s BETWEEN 3.99 AND 4.6"),
                     1);
    close_fixture(f);

    f = open_fixture("150"); /* constant: settles after one window of readings (~2.5 s) */
    f->spec.precisions[1] = EC_PREC_INT8;
    f->spec.nprecisions = 2;
    f->spec.runs = 2;
    f->spec.stabilize_auto = 1;
    f->spec.stabilize_max_s = 30;
    assert_int_equal(run(f, NULL, NULL, NULL, &out), 0);
    assert_int_equal(count(f, "SELECT count(*) FROM configurations WHERE stabilize_settled = 1 "
                              "AND stabilize_s BETWEEN 2 AND 5"),
                     1);
    close_fixture(f);
}

typedef struct {
    volatile int stop;
    int stop_after; /* runs */
    int runs_seen;
} stopper;

static void stop_after_runs(void *ctx, const ec_bench_progress *p)
{
    stopper *s = ctx;
    if (p->stage == EC_BENCH_STAGE_RUN && ++s->runs_seen == s->stop_after) s->stop = 1;
}

/* Stopping after a run keeps it; the next call resumes at the next run index of the same
 * configuration, in a new session, and the sweep ends with every run exactly once. */
static void test_stop_and_resume(void **state)
{
    (void)state;
    fixture *f = open_fixture("150");
    f->spec.batches[1] = 2;
    f->spec.nbatches = 2;
    f->spec.runs = 4;
    stopper s = {0, 2, 0};
    ec_bench_outcome out;
    assert_int_equal(run(f, &s.stop, stop_after_runs, &s, &out), 0);
    assert_true(out.interrupted);
    assert_int_equal(out.measured_runs, 2);
    assert_int_equal(out.finished, 0);
    char first[64];
    snprintf(first, sizeof first, "%s", out.session_id);
    stopper s2 = {0, 3, 0};
    assert_int_equal(run(f, &s2.stop, stop_after_runs, &s2, &out), 0);
    assert_true(out.interrupted);
    assert_int_equal(out.finished, 1);
    assert_string_not_equal(out.session_id, first);
    assert_int_equal(run(f, NULL, NULL, NULL, &out), 0);
    assert_false(out.interrupted);
    assert_int_equal(out.finished, 2);
    assert_int_equal(out.measured_runs, 3);
    ec_run_record *r;
    size_t n;
    assert_int_equal(ec_store_load_runs(f->st, NULL, &r, &n), 0);
    assert_int_equal(n, 8);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(r[i].run_index, (int)(i % 4));
        assert_int_equal(r[i].batch, i < 4 ? 1 : 2);
    }
    free(r);
    assert_int_equal(count(f, "SELECT count(*) FROM sessions"), 3);
    /* The sweep is stored with each session: --resume finds it. */
    char *json;
    ec_bench_spec back;
    assert_int_equal(ec_store_last_spec(f->st, &json), 0);
    assert_non_null(json);
    assert_int_equal(ec_bench_spec_from_json(json, &back), 0);
    free(json);
    char k1[256], k2[256];
    ec_bench_protocol_key(&f->spec, k1, sizeof k1);
    ec_bench_protocol_key(&back, k2, sizeof k2);
    assert_string_equal(k1, k2);
    assert_int_equal(back.nbatches, 2);
    assert_int_equal(back.batches[1], 2);
    assert_string_equal(back.models[0], "tiny");
    close_fixture(f);
}

/* --outliers changes the weights, so it is part of what a configuration measures: it survives
 * the JSON round trip and names a different protocol, except at its default, where the key
 * stays the one sweeps stored before the option existed (they must still resume). */
static void test_spec_outliers(void **state)
{
    (void)state;
    ec_bench_spec s, back;
    char k0[256], k1[256], k2[256];
    ec_bench_spec_default(&s);
    snprintf(s.models[0], sizeof s.models[0], "tiny");
    s.nmodels = 1;
    ec_bench_protocol_key(&s, k0, sizeof k0);
    assert_null(strstr(k0, "outliers"));
    s.outliers = 4;
    s.outlier_mag = 25.0f;
    ec_bench_protocol_key(&s, k1, sizeof k1);
    assert_string_not_equal(k0, k1);
    assert_non_null(strstr(k1, "outliers=4:25"));
    char *json = ec_bench_spec_to_json(&s);
    assert_non_null(json);
    assert_int_equal(ec_bench_spec_from_json(json, &back), 0);
    free(json);
    assert_int_equal(back.outliers, 4);
    assert_true(back.outlier_mag == 25.0f);
    ec_bench_protocol_key(&back, k2, sizeof k2);
    assert_string_equal(k1, k2);
    /* A spec stored without the keys reads back as the catalog default. */
    assert_int_equal(ec_bench_spec_from_json("{\"models\": [\"tiny\"]}", &back), 0);
    assert_int_equal(back.outliers, -1);
    assert_int_equal(ec_bench_spec_from_json("{\"outliers\": -2}", &back), -1);
}

/* Shards: "I/N" parsing, a partition of the positions, the JSON form, and no effect on the
 * protocol key (shards store the keys of the whole sweep). */
static void test_spec_shard(void **state)
{
    (void)state;
    ec_bench_spec s, back;
    char k0[256], k1[256];
    ec_bench_spec_default(&s);
    snprintf(s.models[0], sizeof s.models[0], "tiny");
    s.nmodels = 1;
    ec_bench_protocol_key(&s, k0, sizeof k0);
    for (int k = 0; k < 10; k++)
        assert_true(ec_bench_in_shard(&s, k)); /* unsharded: everything */
    const char *bad[] = {"0/3", "4/3", "3", "1/0", "-1/2", "a/b", "1/2x", "", "1/", "/2"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(ec_bench_spec_parse_shard(bad[i], &s), -1);
    /* Every position is in exactly one of the 4 shards. */
    int hits[23] = {0};
    for (int i = 1; i <= 4; i++) {
        char text[16];
        snprintf(text, sizeof text, "%d/4", i);
        assert_int_equal(ec_bench_spec_parse_shard(text, &s), 0);
        for (int k = 0; k < 23; k++)
            hits[k] += ec_bench_in_shard(&s, k);
    }
    for (int k = 0; k < 23; k++)
        assert_int_equal(hits[k], 1);
    assert_true(ec_bench_in_shard(&s, 3) && ec_bench_in_shard(&s, 7) && !ec_bench_in_shard(&s, 4));
    ec_bench_protocol_key(&s, k1, sizeof k1);
    assert_string_equal(k0, k1);
    char *json = ec_bench_spec_to_json(&s);
    assert_non_null(strstr(json, "\"shard\":\"4/4\""));
    assert_int_equal(ec_bench_spec_from_json(json, &back), 0);
    free(json);
    assert_int_equal(back.shard_index, 4);
    assert_int_equal(back.shard_count, 4);
    assert_int_equal(ec_bench_spec_from_json("{\"models\": [\"tiny\"], \"shard\": \"5/4\"}", &back),
                     -1);
    /* An unsharded spec names no shard, so it reads as before the option existed. */
    ec_bench_spec_default(&s);
    json = ec_bench_spec_to_json(&s);
    assert_null(strstr(json, "shard"));
    free(json);
}

static void test_summary(void **state)
{
    (void)state;
    ec_run_record r[5];
    const char *prec[] = {"fp16", "fp16", "int8", "int8", "int8"};
    const double tok[] = {100, 110, 50, 60, 55}, j[] = {10, 12, 20, 22, 24};
    for (int i = 0; i < 5; i++) {
        ec_run_record_init(&r[i]);
        snprintf(r[i].source, sizeof r[i].source, "ecocompute");
        snprintf(r[i].model, sizeof r[i].model, "m");
        snprintf(r[i].precision, sizeof r[i].precision, "%s", prec[i]);
        r[i].batch = 1;
        r[i].tok_s = tok[i];
        r[i].j_per_1k_gross = j[i];
        r[i].gate = i == 4 ? EC_GATE_FAIL : EC_GATE_PASS;
    }
    ec_bench_summary *s;
    size_t n;
    assert_int_equal(ec_bench_summarize(r, 5, &s, &n), 0);
    assert_int_equal(n, 2);
    assert_string_equal(s[1].precision, "int8");
    assert_int_equal(s[1].tok_s.n, 3);
    assert_true(fabs(s[1].tok_s.mean - 55) < 1e-12);
    assert_true(fabs(s[1].tok_s.sd - 5) < 1e-12);
    assert_true(fabs(s[1].tok_s.cv_pct - 100.0 * 5 / 55) < 1e-9);
    assert_int_equal(s[1].gate, EC_GATE_FAIL);
    assert_true(fabs(s[1].delta_gross_pct - 100.0 * (22 - 11) / 11) < 1e-9);
    assert_true(fabs(s[0].delta_gross_pct) < 1e-12);
    assert_true(isnan(s[0].j_per_1k_net.mean));
    free(s);
}

typedef struct {
    double eta[64];
    int config[64], stage[64], n;
} eta_log;

static void log_eta(void *ctx, const ec_bench_progress *p)
{
    eta_log *l = ctx;
    if (l->n < 64 && (p->stage == EC_BENCH_STAGE_RUN || p->stage == EC_BENCH_STAGE_GATE)) {
        l->eta[l->n] = p->eta_s;
        l->config[l->n] = p->config;
        l->stage[l->n++] = p->stage;
    }
}

/* Re-runs keep the ETA falling: once a gate has failed, the configurations still to come are
 * expected to fail as often, so their re-runs are counted before they happen. The waits
 * (0.1 s each) outweigh these runs of milliseconds, so the ETA is a count of waits left. */
static void test_eta_counts_reruns(void **state)
{
    (void)state;
    fixture *f = open_fixture("150");
    f->spec.batches[0] = 1;
    f->spec.batches[1] = 2;
    f->spec.nbatches = 2;
    f->spec.warmup = 0;
    f->spec.runs = 2;
    f->spec.stabilize_s = 0.1;
    f->spec.cv_tok_pct = 0; /* every gate fails */
    f->spec.max_reruns = 1;
    eta_log l = {.n = 0};
    ec_bench_outcome out;
    assert_int_equal(run(f, NULL, log_eta, &l, &out), 0);
    assert_int_equal(out.gate_failures, 2);
    int gate = -1, second = -1;
    for (int i = 0; i < l.n; i++) {
        if (gate < 0 && l.stage[i] == EC_BENCH_STAGE_GATE) gate = i;
        if (second < 0 && l.config[i] == 2) second = i;
    }
    assert_true(gate >= 0 && second > gate);
    for (int i = gate + 1; i < l.n; i++) assert_true(l.eta[i] <= l.eta[i - 1] + 0.02);
    /* config 2 starts with its own expected re-run (one wait) still ahead */
    assert_true(l.eta[second] >= 0.09);
    assert_true(l.eta[l.n - 1] < 0.05);
    close_fixture(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_phases_and_energy), cmocka_unit_test(test_gate_fail_bounded),
        cmocka_unit_test(test_gate_power),        cmocka_unit_test(test_gate_single_run),
        cmocka_unit_test(test_stabilize_auto),    cmocka_unit_test(test_stop_and_resume),
        cmocka_unit_test(test_spec_outliers),     cmocka_unit_test(test_spec_shard),
        cmocka_unit_test(test_summary),           cmocka_unit_test(test_eta_counts_reruns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
