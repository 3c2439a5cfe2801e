/* test_calibration_json.c — a calibration survives save → load unchanged, lands where the XDG
 * rule says, and malformed or incomplete files are refused with a message naming the problem.
 * (The measurement itself needs a GPU: bench/gpu.sh runs `ecocompute calibrate` on one.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ecocompute/calib.h"
#include "ecocompute/common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static ec_calibration sample(void)
{
    ec_calibration c;
    memset(&c, 0, sizeof c);
    snprintf(c.gpu_name, sizeof c.gpu_name, "NVIDIA H100 80GB HBM3");
    snprintf(c.gpu_uuid, sizeof c.gpu_uuid, "GPU-0123");
    snprintf(c.driver, sizeof c.driver, "580.159.04");
    snprintf(c.timestamp_utc, sizeof c.timestamp_utc, "2026-11-22T10:00:00Z");
    c.power_limit_w = 700;
    c.buffer_bytes = 4294967296.0;
    c.gemm_n = 8192;
    c.idle_power_w = 118.8;
    c.read = (ec_calib_load_result){8.0, 2.4e13, 0, 3.03e12, 4432, 554, 560, 0.1, 143.4, "counter"};
    c.copy = (ec_calib_load_result){8.0, 2.4e13, 0, 3.0e12, 3024, 378, 390, -0.1, 86.0, "counter"};
    c.gemm = (ec_calib_load_result){8.0, 1e10, 5.2e15, 6.56e14, 5616, 702, 720, 0.05, 0.89,
                                    "integrated"};
    return c;
}

static void test_round_trip(void **state)
{
    (void)state;
    char dir[] = "/tmp/ec_calib_XXXXXX";
    assert_non_null(mkdtemp(dir));
    setenv("XDG_DATA_HOME", dir, 1);
    ec_calibration c = sample(), back;
    char path[1024];
    assert_int_equal(ec_calibration_path(c.gpu_uuid, path, sizeof path), 0);
    char want[1100];
    snprintf(want, sizeof want, "%s/ecocompute/calibration-GPU-0123.json", dir);
    assert_string_equal(path, want);
    assert_int_equal(ec_calibration_save(&c, path), 0); /* creates ecocompute/ */
    assert_int_equal(ec_calibration_load(path, &back), 0);
    assert_string_equal(back.gpu_name, c.gpu_name);
    assert_string_equal(back.driver, c.driver);
    assert_int_equal(back.gemm_n, 8192);
    assert_true(fabs(back.idle_power_w - 118.8) < 1e-9);
    assert_true(fabs(back.read.rate - 3.03e12) < 1.0);
    assert_true(fabs(back.read.pj_per_unit_net - 143.4) < 1e-9);
    assert_true(fabs(back.gemm.rate - 6.56e14) < 1e3);
    assert_string_equal(back.gemm.energy_method, "integrated");
    assert_string_equal(back.copy.energy_method, "counter");
    remove(path);
    snprintf(want, sizeof want, "%s/ecocompute", dir);
    rmdir(want);
    rmdir(dir);
}

static void test_bad_input(void **state)
{
    (void)state;
    ec_calibration c;
    assert_int_equal(ec_calibration_from_json("not json", &c), -1);
    assert_non_null(strstr(ec_last_error(), "not a JSON object"));
    assert_int_equal(ec_calibration_from_json("{\"gpu_name\": \"x\"}", &c), -1);
    assert_non_null(strstr(ec_last_error(), "\"read\" missing"));
    char *text = ec_calibration_to_json(&(ec_calibration){0});
    assert_int_equal(ec_calibration_from_json(text, &c), -1); /* zero rates are not a calibration */
    assert_non_null(strstr(ec_last_error(), "read.bytes_per_s"));
    free(text);
    assert_int_equal(ec_calibration_load("/nonexistent/calibration.json", &c), -1);
    assert_non_null(strstr(ec_last_error(), "/nonexistent/calibration.json"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
