/* columns.c — the export column set: one table of column name ↔ ec_run_record field, type,
 * unit and meaning. The CSV/JSON writer and reader (dataset.c), the database's run loader
 * (store.c) and docs/data-schema.md all follow this table; test_dataset checks the docs list
 * exactly these columns, so a column cannot be added in one place only. The order is the file
 * order and is stable: new columns are only ever appended. */
#include "ecocompute/store.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define TXT(name, field, desc) {name, EC_COL_TEXT, "", offsetof(ec_run_record, field), \
                                sizeof(((ec_run_record *)0)->field), desc}
#define COL(name, type, unit, field, desc) {name, type, unit, offsetof(ec_run_record, field), 0, desc}
#define PHASE(ph, desc_ph)                                                                     \
    COL(#ph "_time_s", EC_COL_REAL, "s", ph.time_s, "wall time of the " desc_ph " phase"),     \
    COL(#ph "_tokens", EC_COL_LONG, "tokens", ph.tokens, desc_ph " tokens (prefill: batch x prompt; decode: batch x (gen - 1))"), \
    COL(#ph "_gpu_energy_j", EC_COL_REAL, "J", ph.gpu_energy_j, "GPU energy of the " desc_ph " phase, gross, by gpu_energy_method"), \
    COL(#ph "_gpu_energy_net_j", EC_COL_REAL, "J", ph.gpu_energy_net_j, "the same, net of idle"), \
    COL(#ph "_gpu_energy_counter_j", EC_COL_REAL, "J", ph.gpu_energy_counter_j, "gross, by the NVML energy counter"), \
    COL(#ph "_gpu_energy_integrated_j", EC_COL_REAL, "J", ph.gpu_energy_integrated_j, "gross, trapezoid of instant power"), \
    COL(#ph "_cpu_energy_j", EC_COL_REAL, "J", ph.cpu_energy_j, "CPU package + DRAM (RAPL), gross; empty when unavailable"), \
    COL(#ph "_avg_power_w", EC_COL_REAL, "W", ph.avg_power_w, "average GPU power, gross"), \
    COL(#ph "_peak_power_w", EC_COL_REAL, "W", ph.peak_power_w, "highest instant GPU power")

static const ec_column columns[] = {
    TXT("source", source, "\"ecocompute\" for own measurements, else the imported source"),
    TXT("licence", licence, "licence of the source's data (\"\" for own measurements)"),
    COL("energy_definition", EC_COL_ENERGY_DEF, "", energy_definition,
        "what energy_j_per_1k is: gross, net (idle-subtracted) or unknown"),
    TXT("session_id", session_id, "measurement session (one idle baseline, one environment)"),
    COL("run_id", EC_COL_LONG, "", run_id, "run id in the database it was exported from"),
    TXT("gpu_name", gpu_name, "GPU model"),
    TXT("gpu_uuid", gpu_uuid, "GPU UUID"),
    TXT("gpu_arch", gpu_arch, "GPU architecture"),
    TXT("driver", driver, "NVIDIA driver version"),
    TXT("cuda", cuda, "CUDA toolkit the CUDA backend was built with"),
    COL("power_limit_w", EC_COL_REAL, "W", power_limit_w, "enforced GPU power limit"),
    TXT("host_cpu", host_cpu, "host CPU model"),
    TXT("ecocompute_version", ecocompute_version, "ecocompute version that measured"),
    TXT("git_commit", git_commit, "commit of that ecocompute build"),
    TXT("timestamp_utc", timestamp_utc, "run start, ISO 8601 UTC"),
    TXT("model", model, "model name"),
    COL("params_b", EC_COL_REAL, "1e9 parameters", params_b, "model parameters"),
    TXT("precision", precision, "weight format as --precision spells it (docs/formats.md)"),
    TXT("kernels", kernels, "kernel family (fused, reference) or the source's stack"),
    TXT("device", device, "cpu, cuda:N, or a list of GPUs cuda:0,1 (tensor parallelism)"),
    COL("batch", EC_COL_INT, "sequences", batch, "sequences per run"),
    COL("prompt_len", EC_COL_INT, "tokens", prompt_len, "prompt tokens per sequence"),
    COL("gen_len", EC_COL_INT, "tokens", gen_len, "new tokens per sequence (fixed)"),
    COL("run_index", EC_COL_INT, "", run_index, "0-based measured run within its configuration"),
    COL("gate", EC_COL_GATE, "", gate, "quality gate of the configuration: pass, fail, pending, unknown"),
    COL("idle_power_w", EC_COL_REAL, "W", idle_power_w, "session idle GPU power (empty: no baseline)"),
    PHASE(prefill, "prefill"),
    PHASE(decode, "decode"),
    COL("total_time_s", EC_COL_REAL, "s", total_time_s, "whole run (prefill + decode)"),
    COL("gpu_energy_j", EC_COL_REAL, "J", gpu_energy_j, "whole-run GPU energy, gross"),
    COL("gpu_energy_net_j", EC_COL_REAL, "J", gpu_energy_net_j, "whole-run GPU energy, net of idle"),
    COL("tok_s", EC_COL_REAL, "tokens/s", tok_s, "decode tokens / decode time"),
    COL("j_per_1k_gross", EC_COL_REAL, "J", j_per_1k_gross, "gpu_energy_j per 1000 generated tokens (batch x gen_len), gross"),
    COL("j_per_1k_net", EC_COL_REAL, "J", j_per_1k_net, "the same, net of idle"),
    COL("energy_j_per_1k", EC_COL_REAL, "J", energy_j_per_1k, "the source's own J/1k tokens, as energy_definition says"),
    COL("avg_power_w", EC_COL_REAL, "W", avg_power_w, "whole-run average GPU power, gross"),
    COL("peak_power_w", EC_COL_REAL, "W", peak_power_w, "highest instant GPU power (sum over GPUs per tick)"),
    COL("temp_max_c", EC_COL_REAL, "degC", temp_max_c, "highest GPU temperature"),
    COL("sm_mhz_avg", EC_COL_REAL, "MHz", sm_mhz_avg, "SM clock, mean of readings at the decode phase's edges"),
    COL("clock_event_reasons", EC_COL_HEX, "", clock_event_reasons, "OR of NVML clock-event (throttle) reasons seen"),
    TXT("gpu_energy_method", gpu_energy_method, "counter, integrated, mixed, none or unknown"),
    COL("disagreement_pct", EC_COL_REAL, "%", disagreement_pct, "(integrated - counter) / counter x 100"),
    COL("perplexity", EC_COL_REAL, "", perplexity, "perplexity, when measured or reported"),
    COL("kl_vs_f32", EC_COL_REAL, "nats", kl_vs_f32, "mean KL of next-token distributions vs float32"),
    COL("prefill_repeats", EC_COL_INT, "", prefill.repeats, "prefill phases inside the measured window (figures are per phase)"),
    COL("decode_repeats", EC_COL_INT, "", decode.repeats, "decode phases inside the measured window (figures are per phase)"),
    COL("prefill_gpu_energy_uncert_j", EC_COL_REAL, "J", prefill.gpu_energy_uncert_j, "1 standard uncertainty of prefill_gpu_energy_j"),
    COL("decode_gpu_energy_uncert_j", EC_COL_REAL, "J", decode.gpu_energy_uncert_j, "1 standard uncertainty of decode_gpu_energy_j"),
    COL("gpu_energy_uncert_j", EC_COL_REAL, "J", gpu_energy_uncert_j, "1 standard uncertainty of gpu_energy_j"),
    COL("j_per_request_gross", EC_COL_REAL, "J", j_per_request_gross, "GPU energy of one sequence (prefill + decode at prompt_len and gen_len), gross"),
    COL("j_per_request_net", EC_COL_REAL, "J", j_per_request_net, "the same, net of idle"),
    COL("counter_period_s", EC_COL_REAL, "s", counter_period_s, "update period of the GPU energy counter, measured at the sweep's start"),
    COL("tp", EC_COL_INT, "ranks", tp, "tensor-parallel world size: devices the model is split over (1: one device)"),
    TXT("interconnect", interconnect, "link between the GPUs as NVML reports it: nvlink:L (fewest active links), pcie:LEVEL (farthest common PCIe ancestor), none (one GPU), unknown"),
    TXT("prefill_gpu_energy_per_gpu_j", prefill.gpu_energy_per_gpu_j, "prefill_gpu_energy_j of each GPU charged, ';'-separated, in rank order (J)"),
    TXT("decode_gpu_energy_per_gpu_j", decode.gpu_energy_per_gpu_j, "decode_gpu_energy_j of each GPU charged, ';'-separated, in rank order (J)"),
};

const ec_column *ec_run_columns(size_t *n)
{
    *n = sizeof columns / sizeof *columns;
    return columns;
}

/* ---- value ranges: what a number read from a file may be ---- */

/* Columns that may be negative: net energies are gross minus an idle estimate, and differ from
 * zero by noise in either direction; the disagreement is a signed percentage. */
static const char *const signed_columns[] = {"gpu_energy_net_j", "j_per_1k_net",
                                             "j_per_request_net", "disagreement_pct", NULL};
/* Columns that must be above zero: a board draws power, a run takes time and produces tokens.
 * A phase's energy and power may read 0: a phase shorter than one update of the counter. */
static const char *const positive_columns[] = {
    "power_limit_w", "params_b",   "idle_power_w",   "avg_power_w",     "peak_power_w",
    "total_time_s",  "gpu_energy_j", "tok_s",        "sm_mhz_avg",      "perplexity",
    "j_per_1k_gross", "energy_j_per_1k", "j_per_request_gross", NULL};

static int listed(const char *const *list, const char *name)
{
    for (; *list; list++)
        if (!strcmp(*list, name)) return 1;
    return 0;
}

int ec_run_record_check(const ec_run_record *r, char *why, size_t len)
{
    size_t nc;
    const ec_column *c = ec_run_columns(&nc);
    for (size_t j = 0; j < nc; j++) {
        const char *p = (const char *)r + c[j].offset;
        /* prefill_gpu_energy_net_j follows gpu_energy_net_j's rule, and so on. */
        const char *base = !strncmp(c[j].name, "prefill_", 8)  ? c[j].name + 8
                           : !strncmp(c[j].name, "decode_", 7) ? c[j].name + 7
                                                                : c[j].name;
        if (c[j].type == EC_COL_REAL) {
            double v;
            memcpy(&v, p, sizeof v);
            if (isnan(v)) continue; /* unknown */
            int positive = listed(positive_columns, c[j].name);
            const char *rule = isinf(v)                          ? "finite"
                               : listed(signed_columns, base)    ? NULL
                               : positive && !(v > 0)            ? "above 0"
                               : !positive && v < 0              ? "0 or more"
                                                                 : NULL;
            if (rule) {
                snprintf(why, len, "%s = %g: must be %s", c[j].name, v, rule);
                return -1;
            }
        } else if (c[j].type == EC_COL_INT || c[j].type == EC_COL_LONG) {
            long v;
            if (c[j].type == EC_COL_INT) {
                int i;
                memcpy(&i, p, sizeof i);
                v = i;
            } else {
                memcpy(&v, p, sizeof v);
            }
            if (!strcmp(c[j].name, "run_id") || v == -1) continue; /* -1: unknown */
            int at_least_one = !strcmp(base, "batch") || !strcmp(base, "gen_len") ||
                               !strcmp(base, "repeats") || !strcmp(base, "tp");
            if (v < -1) {
                snprintf(why, len, "%s: not a whole number in range", c[j].name);
                return -1;
            }
            if (v < (at_least_one ? 1 : 0)) {
                snprintf(why, len, "%s = %ld: must be %s", c[j].name, v,
                         at_least_one ? "1 or more" : "0 or more");
                return -1;
            }
        }
    }
    return 0;
}
