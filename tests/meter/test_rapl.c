/* test_rapl.c — RAPL through a fake powercap tree: which zones count, wraparound (directly and
 * across a meter window), and the "unavailable: reason" paths (absent, empty, unreadable). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ecocompute/common.h"
#include "ecocompute/meter.h"
#include "meter/rapl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[256];

static void put(const char *zone, const char *file, const char *fmt, unsigned long long v)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s/%s", root, zone, file);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, fmt, v);
    fclose(f);
}

/* A zone named `name` whose counter reads energy_uj and wraps after max_uj. */
static void zone(const char *dir, const char *name, unsigned long long energy_uj,
                 unsigned long long max_uj)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, dir);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/%s/name", root, dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "%s\n", name);
    fclose(f);
    put(dir, "energy_uj", "%llu\n", energy_uj);
    put(dir, "max_energy_range_uj", "%llu\n", max_uj);
}

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof root, "%s/ec_rapl_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    assert_non_null(mkdtemp(root));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "chmod -R u+rwx '%s' && rm -rf '%s'", root, root);
    assert_int_equal(system(cmd), 0);
    return 0;
}

/* The layout of a two-socket Intel host. */
static void two_sockets(void)
{
    const unsigned long long max = 262143328850ull;
    zone("intel-rapl:0", "package-0", 1000000, max);
    zone("intel-rapl:0:0", "core", 500000, max);
    zone("intel-rapl:0:1", "uncore", 100000, max);
    zone("intel-rapl:0:2", "dram", 2000000, max);
    zone("intel-rapl:1", "package-1", 3000000, max);
    zone("intel-rapl:2", "psys", 9000000, max);
    zone("intel-rapl-mmio:0", "package-0", 7000000, max);
}

static void test_package_and_dram_summed(void **state)
{
    (void)state;
    two_sockets();
    char why[160];
    ec_rapl *r = ec_rapl_open(root, why, sizeof why);
    assert_non_null(r);
    assert_int_equal(ec_rapl_zone_count(r), 3);
    put("intel-rapl:0", "energy_uj", "%llu", 1000000 + 10000000);      /* +10 J */
    put("intel-rapl:1", "energy_uj", "%llu", 3000000 + 5000000);       /* +5 J */
    put("intel-rapl:0:2", "energy_uj", "%llu", 2000000 + 2000000);     /* dram +2 J */
    put("intel-rapl:0:0", "energy_uj", "%llu", 500000 + 99000000);     /* core: ignored */
    put("intel-rapl:0:1", "energy_uj", "%llu", 100000 + 99000000);     /* uncore: ignored */
    put("intel-rapl:2", "energy_uj", "%llu", 9000000 + 99000000);      /* psys: ignored */
    put("intel-rapl-mmio:0", "energy_uj", "%llu", 7000000 + 99000000); /* duplicate: ignored */
    assert_int_equal(ec_rapl_update(r, why, sizeof why), 0);
    double pkg, dram;
    ec_rapl_totals(r, &pkg, &dram);
    assert_true(fabs(pkg - 15.0) < 1e-9);
    assert_true(fabs(dram - 2.0) < 1e-9);
    ec_rapl_close(r);
}

static void test_wraparound(void **state)
{
    (void)state;
    zone("intel-rapl:0", "package-0", 900000, 1000000);
    char why[160];
    ec_rapl *r = ec_rapl_open(root, why, sizeof why);
    assert_non_null(r);
    put("intel-rapl:0", "energy_uj", "%llu", 950000);
    assert_int_equal(ec_rapl_update(r, why, sizeof why), 0);
    put("intel-rapl:0", "energy_uj", "%llu", 150000); /* wrapped: +50000 to the top, +150000 */
    assert_int_equal(ec_rapl_update(r, why, sizeof why), 0);
    double pkg, dram;
    ec_rapl_totals(r, &pkg, &dram);
    assert_true(fabs(pkg - 0.25) < 1e-9);
    assert_true(fabs(dram) < 1e-12);
    ec_rapl_close(r);
}

static ec_meter *open_cpu_only(void)
{
    setenv("ECOCOMPUTE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    setenv("ECOCOMPUTE_POWERCAP_ROOT", root, 1);
    ec_meter_options o;
    ec_meter_options_default(&o);
    ec_meter *m = ec_meter_open(&o);
    assert_non_null(m);
    return m;
}

static void test_wrap_across_window(void **state)
{
    (void)state;
    zone("intel-rapl:0", "package-0", 800000, 1000000);
    zone("intel-rapl:0:2", "dram", 10, 1000000);
    ec_meter *m = open_cpu_only();
    assert_null(ec_meter_cpu_unavailable(m));
    int id = ec_meter_window_begin(m, "run");
    /* Two readings inside the window, one on each side of the wrap, as the sampler makes. */
    put("intel-rapl:0", "energy_uj", "%llu", 990000);
    int probe = ec_meter_window_begin(m, "probe");
    ec_window_result r;
    assert_int_equal(ec_meter_window_end(m, probe, &r), 0);
    put("intel-rapl:0", "energy_uj", "%llu", 300000);
    put("intel-rapl:0:2", "energy_uj", "%llu", 500010);
    assert_int_equal(ec_meter_window_end(m, id, &r), 0);
    assert_true(r.cpu_available);
    assert_true(fabs(r.cpu_package_energy_j - 0.5) < 1e-9); /* 0.2 J to the top + 0.3 J */
    assert_true(fabs(r.cpu_dram_energy_j - 0.5) < 1e-9);
    assert_true(fabs(r.cpu_energy_j - 1.0) < 1e-9);
    ec_meter_close(m);
}

/* Makes a zone's counter unreadable: chmod where that denies, else (root) a directory. */
static const char *make_unreadable(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s/energy_uj", root, dir);
    if (geteuid() != 0) {
        assert_int_equal(chmod(path, 0), 0);
        return "Permission denied";
    }
    assert_int_equal(unlink(path), 0);
    assert_int_equal(mkdir(path, 0755), 0);
    return "Is a directory";
}

static void test_unreadable_is_unavailable(void **state)
{
    (void)state;
    zone("intel-rapl:0", "package-0", 1000, 1000000);
    const char *err = make_unreadable("intel-rapl:0");
    char why[160];
    assert_null(ec_rapl_open(root, why, sizeof why));
    assert_non_null(strstr(why, "cannot read"));
    assert_non_null(strstr(why, err));

    ec_meter *m = open_cpu_only();
    assert_non_null(strstr(ec_meter_cpu_unavailable(m), err));
    ec_window_result r;
    int id = ec_meter_window_begin(m, "run");
    assert_int_equal(ec_meter_window_end(m, id, &r), 0);
    assert_false(r.cpu_available);
    assert_true(isnan(r.cpu_energy_j)); /* never a silent zero */
    assert_non_null(strstr(r.cpu_unavailable, err));
    ec_meter_close(m);
}

static void test_unreadable_mid_window(void **state)
{
    (void)state;
    zone("intel-rapl:0", "package-0", 1000, 1000000);
    ec_meter *m = open_cpu_only();
    int id = ec_meter_window_begin(m, "run");
    const char *err = make_unreadable("intel-rapl:0");
    ec_window_result r;
    assert_int_equal(ec_meter_window_end(m, id, &r), 0);
    assert_false(r.cpu_available);
    assert_non_null(strstr(r.cpu_unavailable, err));
    ec_meter_close(m);
}

static void test_absent_or_empty(void **state)
{
    (void)state;
    char why[160], missing[300];
    snprintf(missing, sizeof missing, "%s/nothing-here", root);
    assert_null(ec_rapl_open(missing, why, sizeof why));
    assert_non_null(strstr(why, "no powercap interface"));
    zone("intel-rapl:0:0", "core", 1, 1000);
    assert_null(ec_rapl_open(root, why, sizeof why));
    assert_non_null(strstr(why, "no RAPL package or dram zones"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_package_and_dram_summed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wraparound, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrap_across_window, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unreadable_is_unavailable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unreadable_mid_window, setup, teardown),
        cmocka_unit_test_setup_teardown(test_absent_or_empty, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
