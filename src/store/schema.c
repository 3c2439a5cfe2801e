/* schema.c — the results database's schema, as the ordered list of its migrations.
 * docs/data-schema.md explains every table; the migration policy is in store_internal.h. */
#include "store/store_internal.h"

#include "ecocompute/store.h"

/* Version 1: sessions, configurations, runs, phases, traces. */
static const char v1[] =
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);\n"
    "INSERT INTO meta VALUES ('application', 'ecocompute results');\n"
    "CREATE TABLE sessions (\n"
    "  id TEXT PRIMARY KEY,\n"
    "  started_utc TEXT NOT NULL DEFAULT '', ended_utc TEXT,\n"
    "  imported INTEGER NOT NULL DEFAULT 0,\n"
    "  gpu_name TEXT NOT NULL DEFAULT '', gpu_uuid TEXT NOT NULL DEFAULT '',\n"
    "  gpu_arch TEXT NOT NULL DEFAULT '', driver TEXT NOT NULL DEFAULT '',\n"
    "  cuda TEXT NOT NULL DEFAULT '', power_limit_w REAL, gpu_count INTEGER,\n"
    "  host_cpu TEXT NOT NULL DEFAULT '', hostname TEXT NOT NULL DEFAULT '',\n"
    "  ecocompute_version TEXT NOT NULL DEFAULT '', git_commit TEXT NOT NULL DEFAULT '',\n"
    "  command_line TEXT, spec TEXT,\n"
    "  idle_s REAL, idle_power_w REAL, idle_method TEXT, interval_s REAL, trace_path TEXT);\n"
    "CREATE TABLE configurations (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  tag TEXT NOT NULL, model TEXT NOT NULL, params_b REAL,\n"
    "  precision TEXT NOT NULL, kernels TEXT NOT NULL, device TEXT NOT NULL,\n"
    "  gpu_uuid TEXT NOT NULL, batch INTEGER NOT NULL, prompt_len INTEGER NOT NULL,\n"
    "  gen_len INTEGER NOT NULL, protocol TEXT NOT NULL, runs INTEGER NOT NULL,\n"
    "  attempt INTEGER NOT NULL DEFAULT 0,\n"
    "  gate TEXT NOT NULL DEFAULT 'pending'\n"
    "    CHECK (gate IN ('pass', 'fail', 'pending', 'unknown')),\n"
    "  cv_tok_pct REAL, cv_power_pct REAL, stabilize_s REAL, stabilize_settled INTEGER,\n"
    "  UNIQUE (tag, model, precision, kernels, device, gpu_uuid, batch, prompt_len, gen_len,\n"
    "          protocol));\n"
    "CREATE TABLE runs (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  config_id INTEGER NOT NULL REFERENCES configurations(id),\n"
    "  session_id TEXT NOT NULL REFERENCES sessions(id),\n"
    "  attempt INTEGER NOT NULL, run_index INTEGER NOT NULL,\n"
    "  fingerprint TEXT NOT NULL UNIQUE,\n"
    "  source TEXT NOT NULL, licence TEXT NOT NULL, energy_definition TEXT NOT NULL,\n"
    "  gate TEXT,\n"
    "  timestamp_utc TEXT NOT NULL, idle_power_w REAL,\n"
    "  total_time_s REAL, gpu_energy_j REAL, gpu_energy_net_j REAL, tok_s REAL,\n"
    "  j_per_1k_gross REAL, j_per_1k_net REAL, energy_j_per_1k REAL,\n"
    "  avg_power_w REAL, peak_power_w REAL, temp_max_c REAL, sm_mhz_avg REAL,\n"
    "  clock_event_reasons INTEGER, gpu_energy_method TEXT NOT NULL,\n"
    "  disagreement_pct REAL, perplexity REAL, kl_vs_f32 REAL);\n"
    "CREATE INDEX runs_by_config ON runs (config_id, attempt, run_index);\n"
    "CREATE TABLE phases (\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(id),\n"
    "  phase TEXT NOT NULL CHECK (phase IN ('prefill', 'decode')),\n"
    "  time_s REAL, tokens INTEGER, gpu_energy_j REAL, gpu_energy_net_j REAL,\n"
    "  gpu_energy_counter_j REAL, gpu_energy_integrated_j REAL, cpu_energy_j REAL,\n"
    "  avg_power_w REAL, peak_power_w REAL,\n"
    "  PRIMARY KEY (run_id, phase));\n"
    "CREATE TABLE traces (\n"
    "  session_id TEXT NOT NULL REFERENCES sessions(id),\n"
    "  t_s REAL NOT NULL, gpu INTEGER NOT NULL, energy_mj INTEGER, power_instant_w REAL,\n"
    "  power_avg_w REAL, sm_mhz INTEGER, mem_mhz INTEGER, temp_c INTEGER,\n"
    "  clock_event_reasons INTEGER, util_gpu_pct INTEGER, util_mem_pct INTEGER,\n"
    "  lost INTEGER NOT NULL DEFAULT 0);\n"
    "CREATE INDEX traces_by_session ON traces (session_id, t_s);\n";

/* Version 2: GPU calibrations (`calibrate`). A step of its own so that the forward migration
 * path is exercised (test_store) from the first release on, not first met in the field. */
static const char v2[] =
    "CREATE TABLE calibrations (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  gpu_name TEXT NOT NULL, gpu_uuid TEXT NOT NULL, driver TEXT NOT NULL,\n"
    "  timestamp_utc TEXT NOT NULL, ecocompute_version TEXT NOT NULL, git_commit TEXT NOT NULL,\n"
    "  idle_power_w REAL, read_bw_bytes_s REAL, copy_bw_bytes_s REAL, gemm_fp16_flop_s REAL,\n"
    "  read_power_w REAL, read_pj_per_byte_net REAL, copy_power_w REAL, gemm_power_w REAL);\n"
    "CREATE INDEX calibrations_by_gpu ON calibrations (gpu_uuid, timestamp_utc);\n";

/* Version 3: claims — which process is measuring a configuration, so that two sweeps on one
 * database split the work instead of storing a configuration twice. */
static const char v3[] =
    "CREATE TABLE claims (\n"
    "  config_id INTEGER PRIMARY KEY REFERENCES configurations(id),\n"
    "  host TEXT NOT NULL, pid INTEGER NOT NULL, heartbeat_unix_s REAL NOT NULL);\n";

/* Version 4: phases repeated inside windows long enough for the energy counter, and each run's
 * energy uncertainty and energy per request. */
static const char v4[] = "ALTER TABLE phases ADD COLUMN repeats INTEGER;\n"
                         "ALTER TABLE phases ADD COLUMN gpu_energy_uncert_j REAL;\n"
                         "ALTER TABLE runs ADD COLUMN gpu_energy_uncert_j REAL;\n"
                         "ALTER TABLE runs ADD COLUMN j_per_request_gross REAL;\n"
                         "ALTER TABLE runs ADD COLUMN j_per_request_net REAL;\n"
                         "ALTER TABLE runs ADD COLUMN counter_period_s REAL;\n";

/* Version 5: accuracy evaluations (`eval --db`, imported accuracy exports): perplexity under the
 * sliding-window protocol and agreement with float32, with the model, precision, kernels,
 * device, text file and provenance they were measured with. Append-only; fingerprint is the
 * content identity that makes a re-import add nothing. */
static const char v5[] =
    "CREATE TABLE accuracy (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  fingerprint TEXT NOT NULL UNIQUE,\n"
    "  source TEXT NOT NULL, licence TEXT NOT NULL, timestamp_utc TEXT NOT NULL,\n"
    "  ecocompute_version TEXT NOT NULL, git_commit TEXT NOT NULL,\n"
    "  model TEXT NOT NULL, params_b REAL, precision TEXT NOT NULL, kernels TEXT NOT NULL,\n"
    "  device TEXT NOT NULL, gpu_name TEXT NOT NULL, gpu_uuid TEXT NOT NULL,\n"
    "  int8_threshold REAL, quantize_head INTEGER,\n"
    "  tokenizer TEXT NOT NULL, tokenizer_sha256 TEXT NOT NULL,\n"
    "  dataset TEXT NOT NULL, dataset_sha256 TEXT NOT NULL,\n"
    "  window INTEGER, stride INTEGER, ppl_tokens INTEGER, perplexity REAL,\n"
    "  kl_positions INTEGER, kl_seed INTEGER, kl_vs_f32 REAL, top1_agreement_pct REAL,\n"
    "  max_abs_dlogit REAL);\n"
    "CREATE INDEX accuracy_by_model ON accuracy (model, precision, kernels);\n";

/* Version 6: tensor parallelism. A configuration's world size is part of its identity (the
 * same model on "cpu" with 1 and 2 ranks are two configurations), so the table is rebuilt with
 * tp in its UNIQUE constraint (SQLite cannot alter a constraint); rows stored before were on one
 * device. interconnect says how the GPUs were linked ('' where not recorded); each phase keeps
 * every metered GPU's energy. Foreign keys are off while migrating, so runs and claims keep
 * pointing at the same ids. */
static const char v6[] =
    "CREATE TABLE configurations_v6 (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  tag TEXT NOT NULL, model TEXT NOT NULL, params_b REAL,\n"
    "  precision TEXT NOT NULL, kernels TEXT NOT NULL, device TEXT NOT NULL,\n"
    "  gpu_uuid TEXT NOT NULL, batch INTEGER NOT NULL, prompt_len INTEGER NOT NULL,\n"
    "  gen_len INTEGER NOT NULL, protocol TEXT NOT NULL, runs INTEGER NOT NULL,\n"
    "  attempt INTEGER NOT NULL DEFAULT 0,\n"
    "  gate TEXT NOT NULL DEFAULT 'pending'\n"
    "    CHECK (gate IN ('pass', 'fail', 'pending', 'unknown')),\n"
    "  cv_tok_pct REAL, cv_power_pct REAL, stabilize_s REAL, stabilize_settled INTEGER,\n"
    "  tp INTEGER NOT NULL DEFAULT 1, interconnect TEXT NOT NULL DEFAULT '',\n"
    "  UNIQUE (tag, model, precision, kernels, device, gpu_uuid, batch, prompt_len, gen_len,\n"
    "          protocol, tp));\n"
    "INSERT INTO configurations_v6 (id, tag, model, params_b, precision, kernels, device,\n"
    "  gpu_uuid, batch, prompt_len, gen_len, protocol, runs, attempt, gate, cv_tok_pct,\n"
    "  cv_power_pct, stabilize_s, stabilize_settled)\n"
    "  SELECT id, tag, model, params_b, precision, kernels, device, gpu_uuid, batch,\n"
    "  prompt_len, gen_len, protocol, runs, attempt, gate, cv_tok_pct, cv_power_pct,\n"
    "  stabilize_s, stabilize_settled FROM configurations;\n"
    "DROP TABLE configurations;\n"
    "ALTER TABLE configurations_v6 RENAME TO configurations;\n"
    "ALTER TABLE phases ADD COLUMN gpu_energy_per_gpu_j TEXT NOT NULL DEFAULT '';\n";

const char *const ec_store_migrations[EC_STORE_SCHEMA_VERSION] = {v1, v2, v3, v4, v5, v6};
