/* ecocompute/results.h — one measured run as a flat record: the unit that `bench` stores, that
 * `export` writes (one row per run, the documented column set of docs/data-schema.md), that
 * `import` reads back (also mapped from the seeds' published files), and that `analyze` and
 * `validate` work on. The results database (store.h) keeps more structure (sessions,
 * configurations, runs, phases, traces); this record is its denormalised view.
 *
 * Conventions: a number that is unknown or was not measured is NaN (empty in CSV, null in JSON),
 * a count that is unknown is -1, a text that is unknown is "". Energies are joules, times
 * seconds, powers watts. "gross" is what the board drew; "net" is gross minus the session's idle
 * power × duration. A record from another source says which of the two its energy figures are
 * (energy_definition), because the seeds mixed them. */
#ifndef ECOCOMPUTE_RESULTS_H
#define ECOCOMPUTE_RESULTS_H

#ifdef __cplusplus
extern "C" {
#endif

/* Room for a device name: "cpu", "cuda:N" or a tensor-parallel list of up to 8 GPUs of
 * indices up to 255 ("cuda:0,1,2,3,4,5,6,7"). */
#define EC_DEVICE_NAME_LEN 48

typedef enum {
    EC_ENERGY_GROSS = 0, /* whole-board energy */
    EC_ENERGY_NET,       /* idle power × duration subtracted */
    EC_ENERGY_UNKNOWN    /* the source does not say */
} ec_energy_definition;
const char *ec_energy_definition_name(ec_energy_definition d); /* "gross", "net", "unknown" */
int ec_energy_definition_parse(const char *text, ec_energy_definition *out);

/* Quality-gate outcome of the configuration a run belongs to (docs/measurement.md). */
typedef enum {
    EC_GATE_PASS = 0,  /* CV of throughput and power within the gates */
    EC_GATE_FAIL,      /* still outside the gates after the bounded re-runs; kept, marked */
    EC_GATE_PENDING,   /* configuration not finished yet (interrupted sweep) */
    EC_GATE_UNKNOWN    /* imported: the source applied no gates we know of */
} ec_gate_status;
const char *ec_gate_status_name(ec_gate_status g); /* "pass", "fail", "pending", "unknown" */
int ec_gate_status_parse(const char *text, ec_gate_status *out);

/* One measured phase of a run (prefill or decode). */
typedef struct {
    double time_s;              /* wall time, s */
    long tokens;                /* tokens processed (prefill) or produced (decode); -1 unknown */
    double gpu_energy_j;        /* gross GPU energy by gpu_energy_method, J */
    double gpu_energy_net_j;    /* gross − idle × time, J */
    double gpu_energy_counter_j;    /* counter delta, J */
    double gpu_energy_integrated_j; /* trapezoid of instant power, J */
    double cpu_energy_j;        /* RAPL package + DRAM, gross, J (NaN: unavailable) */
    double avg_power_w, peak_power_w; /* W */
    int repeats;                /* phases inside the measured window (energy and time are of one) */
    double gpu_energy_uncert_j; /* 1 standard uncertainty of gpu_energy_j (one phase), J */
    /* gpu_energy_j of each GPU the run was charged for, in rank order, ';'-separated ("" for no
     * GPU or a source without it), J */
    char gpu_energy_per_gpu_j[192];
} ec_phase_record;

typedef struct {
    /* ---- where the row comes from (every row keeps it, also after import/export) ---- */
    char source[128];   /* "ecocompute" or the imported file, e.g. "ecocompute-ai/data/x.csv" */
    char licence[32];   /* "CC-BY-4.0", "MIT", ... ("" for our own measurements) */
    ec_energy_definition energy_definition; /* what energy_j_per_1k (below) is */
    char session_id[64]; /* sessions group runs measured in one sitting with one idle baseline */
    long run_id;         /* unique within the database; -1 for rows not from a database */

    /* ---- environment (provenance of the session) ---- */
    char gpu_name[96], gpu_uuid[96], gpu_arch[32], driver[32], cuda[16];
    double power_limit_w;
    char host_cpu[96];
    char ecocompute_version[16], git_commit[24];
    char timestamp_utc[32]; /* run start, ISO 8601 */

    /* ---- configuration ---- */
    char model[64];        /* catalog name or the source's model name */
    double params_b;       /* parameters, billions */
    char precision[16];    /* ec_precision_name(): "fp16", "int8-mixed", "nf4", ... */
    char kernels[16];      /* "fused", "reference", or the source's stack ("bitsandbytes") */
    char device[EC_DEVICE_NAME_LEN]; /* "cuda:0", "cpu", "cuda:0,1" */
    int batch;             /* sequences per run */
    int prompt_len;        /* tokens per prompt; -1 unknown */
    int gen_len;           /* new tokens per sequence (fixed, never stopping early) */
    int run_index;         /* 0-based measured run within its configuration */
    ec_gate_status gate;

    /* ---- measured ---- */
    double idle_power_w;   /* session's idle baseline, W */
    ec_phase_record prefill, decode;
    double total_time_s;   /* whole run (prefill + decode), s */
    double gpu_energy_j;   /* whole run, gross, J */
    double gpu_energy_net_j;
    double tok_s;          /* decode tokens / decode time (the seeds' "throughput") */
    double j_per_1k_gross; /* whole-run gross energy per 1000 generated tokens, J */
    double j_per_1k_net;   /* the same, idle-subtracted, J */
    double energy_j_per_1k; /* the source's own figure under energy_definition (imports) */
    double avg_power_w, peak_power_w;
    double temp_max_c;
    double sm_mhz_avg;
    unsigned long long clock_event_reasons;
    char gpu_energy_method[16]; /* "counter", "integrated", "mixed", "unknown" */
    double disagreement_pct; /* counter vs integrated power, % */
    /* ---- quality, when measured with the run or reported by the source ---- */
    double perplexity;
    double kl_vs_f32; /* mean KL of next-token distributions vs float32, nats */
    /* ---- per request, and how sure (appended with measured windows) ---- */
    double gpu_energy_uncert_j; /* 1 standard uncertainty of gpu_energy_j, J */
    double j_per_request_gross; /* gpu_energy_j per sequence (prefill + decode), J */
    double j_per_request_net;   /* the same, idle-subtracted, J */
    double counter_period_s;    /* update period of the GPU energy counter measured, s */
    /* ---- tensor parallelism (appended with it) ---- */
    int tp;                /* ranks the model was split over (1: one device; also for every
                              source that does not say, all measured before it existed) */
    char interconnect[32]; /* between the GPUs as NVML reports it (ec_meter_interconnect):
                              "nvlink:18", "pcie:hostbridge", "none" (tp 1), "unknown" */
} ec_run_record;

/* 1 for a source's summary row (run_index == -1: its values are means over the source's runs). */
int ec_record_is_summary(const ec_run_record *r);
/* The GPUs (or CPU ranks) a record's model was split over: its tensor-parallel world size, at
 * least 1. Their bandwidths add up in a roofline; their energies are the record's sum. */
int ec_record_gpus(const ec_run_record *r);
/* ---- which runs are one configuration ----
 * The one key type: the fields of a record that say what it measured, as a view into the record
 * (valid while it is). Every "same configuration?" question compares two keys with
 * ec_run_key_equal under one of the named variants below, which differ on purpose. */
typedef struct {
    const char *source, *gpu_name, *gpu_uuid, *model, *precision, *kernels, *device;
    int batch, prompt_len, gen_len;
    int summary; /* a source's summary row (ec_record_is_summary) */
    int tp;      /* tensor-parallel ranks */
} ec_run_key;

/* Fields a comparison looks at (bits of a variant). */
enum {
    EC_KEY_SOURCE = 1u << 0,        /* the same source file */
    EC_KEY_SOURCE_FOLDER = 1u << 1, /* sources in one folder: the files of one seed set */
    EC_KEY_GPU_NAME = 1u << 2,
    EC_KEY_GPU_UUID = 1u << 3,      /* the same physical GPU */
    EC_KEY_MODEL = 1u << 4,
    EC_KEY_PRECISION = 1u << 5,
    EC_KEY_KERNELS = 1u << 6,       /* the same kernel family or stack */
    EC_KEY_KERNELS_COMPARABLE = 1u << 7, /* the same, or either unnamed (ec_kernels_comparable) */
    EC_KEY_DEVICE = 1u << 8,
    EC_KEY_BATCH = 1u << 9,
    EC_KEY_LENGTHS = 1u << 10,      /* prompt_len and gen_len */
    EC_KEY_SUMMARY = 1u << 11,      /* both runs or both summary rows */
    EC_KEY_TP = 1u << 12,           /* the same tensor-parallel world size */
};
/* The variants. */
/* One configuration of a dataset (grouping, seed import): everything but the GPU's uuid. */
#define EC_KEY_CONFIG                                                                           \
    (EC_KEY_SOURCE | EC_KEY_GPU_NAME | EC_KEY_MODEL | EC_KEY_PRECISION | EC_KEY_KERNELS |       \
     EC_KEY_DEVICE | EC_KEY_BATCH | EC_KEY_LENGTHS | EC_KEY_SUMMARY | EC_KEY_TP)
/* One configuration of `bench`'s summaries: one physical GPU (uuid), summary-ness aside. */
#define EC_KEY_BENCH                                                                            \
    (EC_KEY_SOURCE | EC_KEY_GPU_UUID | EC_KEY_MODEL | EC_KEY_PRECISION | EC_KEY_KERNELS |       \
     EC_KEY_DEVICE | EC_KEY_BATCH | EC_KEY_LENGTHS | EC_KEY_TP)
/* The fp16 baseline of a bench summary: its configuration, the precision aside. */
#define EC_KEY_BENCH_BASELINE (EC_KEY_BENCH & ~EC_KEY_PRECISION)
/* A run and a source's summary row of the same experiment: one seed set, GPU by name,
 * comparable kernels; summary-ness and device aside. */
#define EC_KEY_SUMMARY_OF                                                                       \
    (EC_KEY_SOURCE_FOLDER | EC_KEY_GPU_NAME | EC_KEY_MODEL | EC_KEY_PRECISION |                 \
     EC_KEY_KERNELS_COMPARABLE | EC_KEY_BATCH | EC_KEY_LENGTHS | EC_KEY_TP)
/* One experiment in every precision and kernel stack (the report's precision view): GPU by name,
 * model, batch, lengths and world size. */
#define EC_KEY_EXPERIMENT                                                                       \
    (EC_KEY_GPU_NAME | EC_KEY_MODEL | EC_KEY_BATCH | EC_KEY_LENGTHS | EC_KEY_TP)
/* The baseline of a configuration in another precision (`analyze`'s deltas, the report's Δ): its
 * experiment from any source with comparable kernels; the precision is the baseline's, chosen by
 * the caller. */
#define EC_KEY_BASELINE (EC_KEY_EXPERIMENT | EC_KEY_KERNELS_COMPARABLE)
/* The same configuration in two datasets (`compare`): what was measured, not where or when —
 * source, GPU uuid, device index and summary-ness aside. */
#define EC_KEY_ACROSS_DATASETS                                                                  \
    (EC_KEY_GPU_NAME | EC_KEY_MODEL | EC_KEY_PRECISION | EC_KEY_KERNELS | EC_KEY_BATCH |        \
     EC_KEY_LENGTHS | EC_KEY_TP)
/* The batch series of one configuration (batch scaling): the batch aside. */
#define EC_KEY_BATCH_SERIES                                                                     \
    (EC_KEY_SOURCE_FOLDER | EC_KEY_GPU_NAME | EC_KEY_MODEL | EC_KEY_PRECISION | EC_KEY_KERNELS | \
     EC_KEY_LENGTHS | EC_KEY_SUMMARY | EC_KEY_TP)
/* The batch series of every precision drawn in one chart (the report's batch view): GPU by name,
 * model, kernel stack, lengths and world size; any source. */
#define EC_KEY_BATCH_CHART                                                                      \
    (EC_KEY_GPU_NAME | EC_KEY_MODEL | EC_KEY_KERNELS | EC_KEY_LENGTHS | EC_KEY_TP)
/* Configurations across model sizes (the report's crossover view): GPU by name, kernel stack and
 * batch and world size; models and their lengths vary. */
#define EC_KEY_MODEL_SERIES (EC_KEY_GPU_NAME | EC_KEY_KERNELS | EC_KEY_BATCH | EC_KEY_TP)

ec_run_key ec_run_key_of(const ec_run_record *r);
/* 1 when a and b agree on every field of `variant` (EC_KEY_* bits), else 0. */
int ec_run_key_equal(const ec_run_key *a, const ec_run_key *b, unsigned variant);
/* ec_run_key_equal of two records' keys. */
int ec_records_match(const ec_run_record *a, const ec_run_record *b, unsigned variant);
/* Two records are one configuration of a dataset (EC_KEY_CONFIG). */
int ec_same_config(const ec_run_record *a, const ec_run_record *b);
/* Sources in one folder (the text before the last '/'; none for both counts as one). */
int ec_same_source_folder(const char *a, const char *b);
/* Kernel families that may be compared: the same, or one unnamed. Our own rows always name
 * theirs (fused, reference); some seed sources label only their quantized rows with the stack
 * ("bitsandbytes") and pair them with an unlabelled fp16 row of the same experiment, which is
 * the only baseline those rows have. */
int ec_kernels_comparable(const char *a, const char *b);

#ifdef __cplusplus
}
#endif
#endif
