/* meter.c — opening and closing a meter: NVML, GPU selection, RAPL and the trace file; the
 * accessors of what was found. */
#include "meter_internal.h"

#include "ecocompute/common.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void ec_meter_options_default(ec_meter_options *o)
{
    memset(o, 0, sizeof *o);
    o->interval_s = 0.1; /* the energy counter and instant power update about every 100 ms */
}

ec_meter *ec_meter_open(const ec_meter_options *o)
{
    return ec_meter_open_ex(o, NULL);
}

ec_meter *ec_meter_open_ex(const ec_meter_options *o, ec_meter_open_status *status)
{
    ec_meter_open_status ignored;
    if (!status) status = &ignored;
    *status = EC_METER_OPEN_FAILED;
    if (!(o->interval_s >= 0.001 && o->interval_s <= 1.0)) {
        ec_set_error("sampling interval must be between 1 ms and 1 s, got %g s", o->interval_s);
        return NULL;
    }
    ec_meter *m = calloc(1, sizeof *m);
    if (!m) abort();
    pthread_mutex_init(&m->mu, NULL);
    m->interval_s = o->interval_s;
    m->t_open_s = ec_now_s();
    if (ec_nvml_load(&m->nv) != 0) {
        /* No driver is a normal state (CI, CPU-only hosts), not an error; a selection that can
         * never match is. */
        snprintf(m->gpu_unavailable, sizeof m->gpu_unavailable, "%s", ec_last_error());
        if (o->gpus && *o->gpus) {
            ec_set_error("cannot select GPU '%s': %s", o->gpus, m->gpu_unavailable);
            *status = EC_METER_OPEN_BAD_SELECTION;
            ec_meter_close(m);
            return NULL;
        }
    } else {
        nvmlReturn_t r =
            EC_NVML(&m->nv, SystemGetDriverVersion, m->driver_version, sizeof m->driver_version);
        if (r != NVML_SUCCESS) m->driver_version[0] = '\0';
        int selected = ec_gpu_select(m, o->gpus);
        if (selected != 0) {
            if (selected == -2) *status = EC_METER_OPEN_BAD_SELECTION;
            ec_meter_close(m);
            return NULL;
        }
    }
    m->rapl = ec_rapl_open(NULL, m->cpu_unavailable, sizeof m->cpu_unavailable);
    if (o->trace_path && *o->trace_path) {
        static const char *const trace_signature[] = {EC_TRACE_CSV_HEADER, NULL};
        if (ec_output_check(o->trace_path, "trace CSV", trace_signature, -1) != 0) {
            ec_meter_close(m);
            return NULL;
        }
        m->trace = fopen(o->trace_path, "w");
        if (!m->trace) {
            ec_set_error("cannot write trace %s: %s", o->trace_path, strerror(errno));
            ec_meter_close(m);
            return NULL;
        }
    }
    *status = EC_METER_OPEN_OK;
    return m;
}

void ec_meter_close(ec_meter *m)
{
    if (!m) return;
    ec_sampler_stop(m);
    if (m->trace) fclose(m->trace);
    ec_rapl_close(m->rapl);
    ec_nvml_unload(&m->nv);
    free(m->samples);
    free(m->windows);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

int ec_meter_start(ec_meter *m)
{
    return ec_sampler_start(m);
}

int ec_meter_gpu_count(const ec_meter *m)
{
    return m->ngpus;
}

const ec_gpu_info *ec_meter_gpu(const ec_meter *m, int i)
{
    return i >= 0 && i < m->ngpus ? &m->gpus[i].info : NULL;
}

const char *ec_meter_gpu_unavailable(const ec_meter *m)
{
    return m->ngpus ? NULL : m->gpu_unavailable;
}

const char *ec_meter_driver_version(const ec_meter *m)
{
    return m->driver_version;
}

double ec_meter_sampler_cpu_s(ec_meter *m) { return atomic_load(&m->sampler_cpu_s); }

const char *ec_meter_cpu_unavailable(ec_meter *m)
{
    pthread_mutex_lock(&m->mu);
    const char *why = m->rapl ? NULL : m->cpu_unavailable;
    pthread_mutex_unlock(&m->mu);
    return why;
}

double ec_meter_t0_s(const ec_meter *m)
{
    return m->t_open_s;
}

double ec_meter_interval_s(const ec_meter *m)
{
    return m->interval_s;
}

int ec_meter_cpu_energy(ec_meter *m, double *package_j, double *dram_j)
{
    pthread_mutex_lock(&m->mu);
    ec_rapl_poll_locked(m, ec_now_s(), 1);
    int rc = 0;
    if (m->rapl) {
        ec_rapl_totals(m->rapl, package_j, dram_j);
        if (!ec_rapl_has_dram(m->rapl)) *dram_j = NAN;
    } else
        rc = ec_set_error("CPU energy unavailable: %s", m->cpu_unavailable);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

int ec_meter_read(ec_meter *m, int i, ec_gpu_sample *out)
{
    if (i < 0 || i >= m->ngpus) return ec_set_error("no GPU at position %d", i);
    ec_gpu_read(&m->nv, &m->gpus[i], i, EC_READ_ALL, out);
    return 0;
}
