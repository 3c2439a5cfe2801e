/* calibrate.c — ec_calibrate: the GPU's ceilings measured inside meter windows (calib.h), and the
 * JSON form a calibration is saved in. The loads themselves are CUDA (calib_gpu.cu); without the
 * CUDA backend ec_calibrate reports that and the JSON functions still work (bench and analyze
 * read calibrations made elsewhere). */
#include "ecocompute/calib.h"

#include "ecocompute/common.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifdef ECOCOMPUTE_HAVE_CUDA
#include "calib/calib_gpu.h"
#endif

void ec_calib_options_default(ec_calib_options *o)
{
    o->cuda_device = 0;
    o->idle_s = 5.0;
    o->load_s = 8.0;
    o->buffer_gib = 4.0;
    o->gemm_n = 8192;
    o->meter_interval_s = 0.05;
}

#ifdef ECOCOMPUTE_HAVE_CUDA

typedef int (*calib_load_fn)(ec_calib_gpu *g, double seconds, ec_calib_load *out);

/* Runs one load inside its own window, after a short pass outside it (clocks up, cuBLAS picks
 * its kernel). The window also spans the two edge reads of the energy counter (~3 ms each on an
 * H100), so its energy covers the load's work within about 0.1 %. */
static int measure(ec_meter *m, ec_calib_gpu *g, const ec_calib_options *o, const char *name,
                   calib_load_fn fn, int per_flop, double idle_w, FILE *log,
                   ec_calib_load_result *r)
{
    if (log) fprintf(log, "calibrate: %s for %.0f s ...\n", name, o->load_s);
    ec_calib_load load;
    if (fn(g, 0.0, &load) != 0) return -1;
    int id = ec_meter_window_begin(m, name);
    if (id < 0) return -1;
    int rc = fn(g, o->load_s, &load);
    ec_window_result w;
    if (ec_meter_window_end(m, id, &w) != 0 || rc != 0) return -1;
    if (!(w.gpu_energy_j > 0))
        return ec_set_error("calibrate: the meter measured no GPU energy during the %s", name);
    double work = per_flop ? load.flops : load.bytes;
    r->time_s = load.elapsed_s;
    r->bytes = load.bytes;
    r->flops = load.flops;
    r->rate = work / load.elapsed_s;
    r->energy_j = w.gpu_energy_j;
    r->avg_power_w = w.gpu_avg_power_w;
    r->peak_power_w = w.gpu_peak_power_w;
    r->disagreement_pct = w.gpu_disagreement_pct;
    r->energy_method = w.gpu_energy_method;
    r->pj_per_unit_net = (w.gpu_energy_j - idle_w * w.duration_s) / work * 1e12;
    return 0;
}

static int run_calibration(ec_meter *m, ec_calib_gpu *g, const ec_calib_options *o,
                           const volatile int *stop, FILE *log, ec_calibration *out)
{
    if (ec_meter_start(m) != 0) return -1;
    if (log) fprintf(log, "calibrate: idle baseline with a CUDA context for %.0f s ...\n", o->idle_s);
    ec_idle_baseline idle;
    if (ec_meter_idle_baseline(m, o->idle_s, stop, &idle) != 0) return -1;
    out->idle_power_w = idle.gpu_total_power_w;
    if (!(out->idle_power_w > 0))
        return ec_set_error("calibrate: the idle baseline measured no GPU power");
    if ((stop && *stop) ||
        measure(m, g, o, "read sweep", ec_calib_gpu_read, 0, out->idle_power_w, log, &out->read) ||
        (stop && *stop) ||
        measure(m, g, o, "device-to-device copy", ec_calib_gpu_copy, 0, out->idle_power_w, log,
                &out->copy) ||
        (stop && *stop) ||
        /* Last: the GEMM overwrites the sweep pattern with its inputs. */
        measure(m, g, o, "fp16 GEMM", ec_calib_gpu_gemm, 1, out->idle_power_w, log, &out->gemm))
        return (stop && *stop) ? ec_set_error("calibrate: interrupted") : -1;
    return 0;
}

int ec_calibrate(const ec_calib_options *o, const volatile int *stop, FILE *log,
                 ec_calibration *out)
{
    memset(out, 0, sizeof *out);
    ec_calib_gpu *g;
    ec_calib_device dev;
    size_t bytes = (size_t)(o->buffer_gib * (double)(1u << 30));
    if (ec_calib_gpu_open(&g, o->cuda_device, bytes, o->gemm_n, &dev) != 0) return -1;
    ec_meter_options mo;
    ec_meter_options_default(&mo);
    mo.gpus = dev.uuid;
    mo.interval_s = o->meter_interval_s;
    ec_meter *m = ec_meter_open(&mo);
    if (!m || ec_meter_gpu_count(m) != 1) {
        if (m) ec_set_error("calibrate: %s", ec_meter_gpu_unavailable(m));
        ec_meter_close(m);
        ec_calib_gpu_close(g);
        return -1;
    }
    const ec_gpu_info *gi = ec_meter_gpu(m, 0);
    snprintf(out->gpu_name, sizeof out->gpu_name, "%s", gi->name);
    snprintf(out->gpu_uuid, sizeof out->gpu_uuid, "%s", gi->uuid);
    snprintf(out->driver, sizeof out->driver, "%s", ec_meter_driver_version(m));
    out->nvml_index = gi->index;
    out->power_limit_w = gi->power_limit_w;
    ec_iso8601(ec_wall_s(), out->timestamp_utc, sizeof out->timestamp_utc);
    snprintf(out->ecocompute_version, sizeof out->ecocompute_version, "%s", ec_version());
    snprintf(out->git_commit, sizeof out->git_commit, "%s", ec_git_commit());
    out->buffer_bytes = (double)bytes;
    out->gemm_n = o->gemm_n;
    int rc = run_calibration(m, g, o, stop, log, out);
    ec_meter_close(m);
    ec_calib_gpu_close(g);
    return rc;
}

#else

int ec_calibrate(const ec_calib_options *o, const volatile int *stop, FILE *log,
                 ec_calibration *out)
{
    (void)o, (void)stop, (void)log;
    memset(out, 0, sizeof *out);
    return ec_set_error("calibrate needs the CUDA backend, which this build does not include "
                        "(nvcc was not found at configure time)");
}

#endif

/* ---- JSON ---- */

static void add_number(cJSON *o, const char *key, double v)
{
    if (isfinite(v))
        cJSON_AddNumberToObject(o, key, v);
    else
        cJSON_AddNullToObject(o, key);
}

static cJSON *load_json(const ec_calib_load_result *r, const char *rate_key, const char *pj_key)
{
    cJSON *o = cJSON_CreateObject();
    add_number(o, "time_s", r->time_s);
    add_number(o, "bytes", r->bytes);
    add_number(o, "flops", r->flops);
    add_number(o, rate_key, r->rate);
    add_number(o, "energy_j_gross", r->energy_j);
    add_number(o, "avg_power_w", r->avg_power_w);
    add_number(o, "peak_power_w", r->peak_power_w);
    add_number(o, "counter_vs_integrated_pct", r->disagreement_pct);
    add_number(o, pj_key, r->pj_per_unit_net);
    cJSON_AddStringToObject(o, "energy_method", r->energy_method ? r->energy_method : "unknown");
    return o;
}

char *ec_calibration_to_json(const ec_calibration *c)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "gpu_name", c->gpu_name);
    cJSON_AddStringToObject(o, "gpu_uuid", c->gpu_uuid);
    cJSON_AddStringToObject(o, "driver", c->driver);
    add_number(o, "power_limit_w", c->power_limit_w);
    cJSON_AddStringToObject(o, "timestamp_utc", c->timestamp_utc);
    cJSON_AddStringToObject(o, "ecocompute_version", c->ecocompute_version);
    cJSON_AddStringToObject(o, "git_commit", c->git_commit);
    add_number(o, "buffer_bytes", c->buffer_bytes);
    cJSON_AddNumberToObject(o, "gemm_n", c->gemm_n);
    add_number(o, "idle_power_w", c->idle_power_w);
    cJSON_AddItemToObject(o, "read", load_json(&c->read, "bytes_per_s", "pj_per_byte_net"));
    cJSON_AddItemToObject(o, "copy", load_json(&c->copy, "bytes_per_s", "pj_per_byte_net"));
    cJSON_AddItemToObject(o, "gemm_fp16", load_json(&c->gemm, "flop_per_s", "pj_per_flop_net"));
    char *text = cJSON_Print(o);
    cJSON_Delete(o);
    return text;
}

static double get_number(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static void get_text(const cJSON *o, const char *key, char *buf, size_t len)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    snprintf(buf, len, "%s", cJSON_IsString(v) ? v->valuestring : "");
}

static int parse_load(const cJSON *root, const char *name, const char *rate_key,
                      const char *pj_key, ec_calib_load_result *r)
{
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(root, name);
    if (!cJSON_IsObject(o)) return ec_set_error("calibration JSON: object \"%s\" missing", name);
    r->time_s = get_number(o, "time_s");
    r->bytes = get_number(o, "bytes");
    r->flops = get_number(o, "flops");
    r->rate = get_number(o, rate_key);
    r->energy_j = get_number(o, "energy_j_gross");
    r->avg_power_w = get_number(o, "avg_power_w");
    r->peak_power_w = get_number(o, "peak_power_w");
    r->disagreement_pct = get_number(o, "counter_vs_integrated_pct");
    r->pj_per_unit_net = get_number(o, pj_key);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "energy_method");
    r->energy_method = cJSON_IsString(m) && !strcmp(m->valuestring, "integrated") ? "integrated"
                       : cJSON_IsString(m) && !strcmp(m->valuestring, "counter") ? "counter"
                                                                                  : "unknown";
    if (!(r->rate > 0))
        return ec_set_error("calibration JSON: \"%s.%s\" is not a positive number", name, rate_key);
    return 0;
}

int ec_calibration_from_json(const char *text, ec_calibration *out)
{
    memset(out, 0, sizeof *out);
    cJSON *o = cJSON_Parse(text);
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return ec_set_error("calibration JSON: not a JSON object");
    }
    get_text(o, "gpu_name", out->gpu_name, sizeof out->gpu_name);
    get_text(o, "gpu_uuid", out->gpu_uuid, sizeof out->gpu_uuid);
    get_text(o, "driver", out->driver, sizeof out->driver);
    get_text(o, "timestamp_utc", out->timestamp_utc, sizeof out->timestamp_utc);
    get_text(o, "ecocompute_version", out->ecocompute_version, sizeof out->ecocompute_version);
    get_text(o, "git_commit", out->git_commit, sizeof out->git_commit);
    out->power_limit_w = get_number(o, "power_limit_w");
    out->buffer_bytes = get_number(o, "buffer_bytes");
    double n = get_number(o, "gemm_n");
    out->gemm_n = isfinite(n) ? (int)n : 0;
    out->idle_power_w = get_number(o, "idle_power_w");
    int rc = parse_load(o, "read", "bytes_per_s", "pj_per_byte_net", &out->read) ||
                     parse_load(o, "copy", "bytes_per_s", "pj_per_byte_net", &out->copy) ||
                     parse_load(o, "gemm_fp16", "flop_per_s", "pj_per_flop_net", &out->gemm)
                 ? -1
                 : 0;
    cJSON_Delete(o);
    return rc;
}

int ec_calibration_path(const char *gpu_uuid, char *buf, size_t len)
{
    const char *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
    int n;
    if (xdg && *xdg)
        n = snprintf(buf, len, "%s/ecocompute/calibration-%s.json", xdg, gpu_uuid);
    else if (home && *home)
        n = snprintf(buf, len, "%s/.local/share/ecocompute/calibration-%s.json", home, gpu_uuid);
    else
        return ec_set_error("neither XDG_DATA_HOME nor HOME is set: no place for calibrations");
    if (n < 0 || (size_t)n >= len) return ec_set_error("calibration path too long");
    return 0;
}

/* mkdir -p of the directory part of path. */
static int make_parent_dirs(const char *path)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(dir, 0755) != 0 && errno != EEXIST)
            return ec_set_error("cannot create directory %s: %s", dir, strerror(errno));
        *p = '/';
    }
    return 0;
}

int ec_calibration_save(const ec_calibration *c, const char *path)
{
    static const char *const calibration_signature[] = {"{\"gpu_name\":", NULL};
    if (ec_output_check(path, "calibration", calibration_signature, -1) != 0) return -1;
    if (make_parent_dirs(path) != 0) return -1;
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    char *text = ec_calibration_to_json(c);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        free(text);
        return ec_set_error("cannot write %s: %s", tmp, strerror(errno));
    }
    int ok = fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    ok = (fclose(f) == 0) && ok;
    free(text);
    /* Write then rename, so an earlier calibration is never left half-overwritten. */
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        return ec_set_error("cannot write %s: %s", path, strerror(errno));
    }
    return 0;
}

int ec_calibration_load(const char *path, ec_calibration *out)
{
    FILE *f = ec_fopen_regular(path);
    if (!f) return ec_error_context("cannot read calibration");
    char buf[16384];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    int too_big = !feof(f);
    fclose(f);
    if (too_big) return ec_set_error("calibration %s: larger than a calibration can be", path);
    buf[n] = '\0';
    if (ec_calibration_from_json(buf, out) != 0)
        return ec_error_context("%s", path);
    return 0;
}
