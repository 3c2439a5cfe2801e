/* test_exposition.c — the exporter's text without a server: HELP/TYPE once per family, label
 * escaping, a lost GPU reduced to up 0, unread values left out (never a 0 or NaN sample), RAPL
 * counters only when readable; and textfiles: atomic replacement of our own file, refusal of
 * anyone else's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ecocompute/exporter.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static ec_gpu_info infos[2];

/* Two GPUs: 0 healthy with every value, 1 as given by lost. */
static void make_snapshot(ec_exporter_snapshot *s, int lost)
{
    memset(s, 0, sizeof *s);
    memset(infos, 0, sizeof infos);
    s->ngpus = 2;
    for (int i = 0; i < 2; i++) {
        infos[i].index = (unsigned)i;
        snprintf(infos[i].uuid, sizeof infos[i].uuid, "GPU-%d", i);
        infos[i].power_limit_w = 700;
        s->info[i] = &infos[i];
    }
    snprintf(infos[1].name, sizeof infos[1].name, "odd \"name\" \\ here");
    snprintf(infos[0].name, sizeof infos[0].name, "H100");
    s->gpus[0].up = 1;
    s->gpus[0].s = (ec_gpu_sample){
        .energy_mj = 1234567,
        .power_instant_w = 250.5,
        .power_avg_w = 240,
        .sm_mhz = 1980,
        .temp_c = 55,
        .clock_event_reasons = 0x4,
        .util_gpu_pct = 90,
        .valid = EC_SAMPLE_ENERGY | EC_SAMPLE_POWER_INSTANT | EC_SAMPLE_POWER_AVERAGE |
                 EC_SAMPLE_SM_CLOCK | EC_SAMPLE_TEMP | EC_SAMPLE_CLOCK_REASONS | EC_SAMPLE_UTIL};
    s->gpus[1].up = !lost;
    s->gpus[1].s.valid = lost ? EC_SAMPLE_LOST : EC_SAMPLE_POWER_INSTANT;
    s->gpus[1].s.power_instant_w = 100;
    s->reads = 7;
    s->version = "9.9";
    s->driver_version = "580";
}

static int count(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static void test_families_and_values(void **state)
{
    (void)state;
    ec_exporter_snapshot s;
    make_snapshot(&s, 0);
    size_t len;
    char *t = ec_exposition_render(&s, &len);
    assert_non_null(t);
    assert_int_equal(len, strlen(t));
    assert_int_equal(count(t, "# TYPE ecocompute_gpu_energy_joules_total counter\n"), 1);
    assert_int_equal(count(t, "# HELP ecocompute_gpu_energy_joules_total "), 1);
    assert_non_null(strstr(t, "ecocompute_gpu_energy_joules_total{gpu=\"0\",uuid=\"GPU-0\","
                              "name=\"H100\"} 1234.567\n"));
    /* Both GPUs report instant power under one family header. */
    assert_int_equal(count(t, "# TYPE ecocompute_gpu_power_watts gauge"), 1);
    assert_int_equal(count(t, "\necocompute_gpu_power_watts{"), 2);
    assert_non_null(strstr(t,
                           "ecocompute_gpu_sm_clock_hertz{gpu=\"0\",uuid=\"GPU-0\",name=\"H100\"} "
                           "1980000000\n"));
    assert_non_null(strstr(
        t, "ecocompute_gpu_utilization_ratio{gpu=\"0\",uuid=\"GPU-0\",name=\"H100\"} 0.90\n"));
    assert_non_null(
        strstr(t, "ecocompute_gpu_throttled{gpu=\"0\",uuid=\"GPU-0\",name=\"H100\"} 1\n"));
    /* Label values escape quotes and backslashes. */
    assert_non_null(strstr(t, "name=\"odd \\\"name\\\" \\\\ here\""));
    /* GPU 1 read no energy: no sample at all rather than a 0. Memory was read by neither. */
    assert_int_equal(count(t, "\necocompute_gpu_energy_joules_total{"), 1);
    assert_null(strstr(t, "memory_used_bytes"));
    assert_null(strstr(t, "nan"));
    /* Every family has a TYPE, and every TYPE a HELP just before it. */
    assert_int_equal(count(t, "# TYPE "), count(t, "# HELP "));
    assert_non_null(strstr(t, "ecocompute_exporter_info{version=\"9.9\",driver=\"580\"} 1\n"));
    assert_non_null(strstr(t, "ecocompute_cpu_energy_up 0\n"));
    assert_null(strstr(t, "cpu_package_energy_joules_total"));
    free(t);
}

static void test_lost_gpu_is_up_zero(void **state)
{
    (void)state;
    ec_exporter_snapshot s;
    make_snapshot(&s, 1);
    s.cpu_available = 1;
    s.cpu_package_j = 12.5;
    s.cpu_dram_j = NAN; /* no DRAM zone */
    char *t = ec_exposition_render(&s, NULL);
    assert_non_null(t);
    assert_non_null(strstr(t, "ecocompute_gpu_up{gpu=\"1\","));
    assert_non_null(strstr(t, "here\"} 0\n"));
    assert_int_equal(count(t, "gpu=\"1\""), 1); /* only its up sample */
    assert_non_null(strstr(t, "ecocompute_cpu_package_energy_joules_total 12.500\n"));
    assert_null(strstr(t, "cpu_dram_energy"));
    free(t);
}

static void test_textfile(void **state)
{
    (void)state;
    char dir[] = "/tmp/ec_textfile_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128], other[128], buf[256];
    snprintf(path, sizeof path, "%s/eco.prom", dir);
    snprintf(other, sizeof other, "%s/other.prom", dir);
    assert_int_equal(ec_textfile_write(path, "a 1\n", 4), 0);
    assert_int_equal(ec_textfile_write(path, "a 2\n", 4), 0); /* ours: replaced */
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    assert_int_equal(strncmp(buf, EC_TEXTFILE_MARKER, strlen(EC_TEXTFILE_MARKER)), 0);
    assert_non_null(strstr(buf, "\na 2\n"));
    assert_null(strstr(buf, "a 1"));
    /* Someone else's file is left as it was. */
    f = fopen(other, "w");
    fputs("node_foo 1\n", f);
    fclose(f);
    assert_int_equal(ec_textfile_write(other, "a 1\n", 4), -1);
    f = fopen(other, "r");
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    assert_string_equal(buf, "node_foo 1\n");
    /* A directory at the path is refused too. */
    assert_int_equal(ec_textfile_write(dir, "a 1\n", 4), -1);
    unlink(path);
    unlink(other);
    assert_int_equal(rmdir(dir), 0); /* no temporary file left behind */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_families_and_values),
        cmocka_unit_test(test_lost_gpu_is_up_zero),
        cmocka_unit_test(test_textfile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
