#!/usr/bin/env bash
# protocol-check.sh — how repeatable the measurement protocol is on the GPU machine: `ecocompute
# bench` with the default windows (each phase repeated for 50 counter periods, edges at counter
# updates) over MODELS x PRECISIONS x BATCHES, then one table of what docs/results.md reports:
# run-to-run CV of tok/s and of J/1k tokens (gross), the stated energy uncertainty, the counter
# vs integrated-power disagreement, prefill energy per phase, repetitions, and the sweep's wall
# time. Shortened protocol to fit one device call: RUNS (3) measured runs, 1 warm-up, no thermal
# stabilization, a 5 s idle baseline; DEFAULTS=1: bench's own defaults (RUNS, when set, still
# applies), to time the default protocol. Results go to $OUT (or bench-out/). A CPU check of the
# pipeline: DEVICE=cpu MODELS=tiny with the fake NVML (tests/meter/fake_nvml.c).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-bench-out}
mkdir -p "$out"
source bench/pack-env.sh # .devpack's libraries on LD_LIBRARY_PATH, NCCL
bin=${ECOCOMPUTE:-$pack/bin/ecocompute}
models=${MODELS:-Llama-2-7B}
precisions=${PRECISIONS:-fp16,int8,nf4}
batches=${BATCHES:-1,64}
device=${DEVICE:-cuda}
if [ "${DEFAULTS:-0}" = 1 ]; then
    protocol=(${RUNS:+--runs "$RUNS"})
else
    protocol=(--runs "${RUNS:-3}" --warmup 1 --stabilize 0 --idle 5 --reruns 0)
fi
window=${MIN_WINDOW:-auto} # 0: the protocol as it was, for comparison
t0=$(date +%s)
"$bin" bench --model "$models" --precision "$precisions" --batch "$batches" --device "$device" \
  "${protocol[@]}" --min-window "$window" --db "$out/protocol.db" \
  --format csv >"$out/protocol-summary.csv"
wall=$(($(date +%s) - t0))
"$bin" export --db "$out/protocol.db" -o "$out/protocol-runs.csv"
python3 - "$out/protocol-runs.csv" "$wall" <<'PY'
import csv, statistics as st, sys, collections
rows = list(csv.DictReader(open(sys.argv[1])))
by = collections.defaultdict(list)
for r in rows:
    by[(r["model"], r["precision"], int(r["batch"]))].append(r)
f = lambda r, k: float(r[k]) if r[k] not in ("", None) else float("nan")
cv = lambda v: 100 * st.stdev(v) / st.mean(v) if len(v) > 1 else float("nan")
print(f"{'model':<12} {'prec':<5} {'batch':>5} {'n':>2} {'tok/s':>8} {'CV%':>5} {'J/1k':>8} {'CV%':>5} "
      f"{'±sd%':>5} {'|cnt-int|%':>10} {'prefill J':>9} {'J/req':>8} {'reps p/d':>9}")
for (m, p, b), rs in sorted(by.items()):
    tok = [f(r, "tok_s") for r in rs]; j = [f(r, "j_per_1k_gross") for r in rs]
    u = st.mean(100 * f(r, "gpu_energy_uncert_j") / f(r, "gpu_energy_j") for r in rs)
    dis = max(abs(f(r, "disagreement_pct")) for r in rs)
    print(f"{m:<12} {p:<5} {b:>5} {len(rs):>2} {st.mean(tok):>8.1f} {cv(tok):>5.2f} {st.mean(j):>8.1f} "
          f"{cv(j):>5.2f} {u:>5.2f} {dis:>10.2f} {st.mean(f(r, 'prefill_gpu_energy_j') for r in rs):>9.2f} "
          f"{st.mean(f(r, 'j_per_request_gross') for r in rs):>8.2f} "
          f"{rs[0]['prefill_repeats']:>4}/{rs[0]['decode_repeats']:<4}")
print(f"counter period {rows[0]['counter_period_s']} s; sweep wall time {sys.argv[2]} s")
PY
