#!/usr/bin/env bash
# window-check.sh — which window edges read a short phase's energy best (GPU machine): the same
# configuration measured with ~1 s decode windows three ways, each against a long reference:
#   naive      one phase per window, edges where the phase starts and ends (--min-window 0),
#              energy from the counter;
#   integrated the same windows, energy from the trapezoid of the instant-power trace;
#   aligned    windows of >= SHORT s whose edges wait for counter updates (--min-window SHORT);
#   reference  windows of LONG s (--min-window LONG), aligned, whose edges weigh LONG/0.1 times
#              less.
# Prints, per method, the decode energy per token's mean error and RMS error (%) against the
# reference's mean, and the runs' spread. Env: MODEL (Llama-2-7B), PRECISION (fp16), BATCH (1),
# GEN (256), RUNS (10), SHORT (1), LONG (15). Results go to $OUT (or bench-out/).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-bench-out}
mkdir -p "$out"
source bench/pack-env.sh # .devpack's libraries on LD_LIBRARY_PATH, NCCL
bin=${ECOCOMPUTE:-$pack/bin/ecocompute}
model=${MODEL:-Llama-2-7B} precision=${PRECISION:-fp16} batch=${BATCH:-1} gen=${GEN:-256}
runs=${RUNS:-10} short=${SHORT:-1} long=${LONG:-15}
measure() { # NAME MIN_WINDOW RUNS
    rm -f "$out/window-$1.db"
    "$bin" bench --model "$model" --precision "$precision" --batch "$batch" --gen "$gen" \
      --prompt-len 64 --device cuda --runs "$3" --warmup 1 --stabilize 0 --idle 5 --reruns 0 \
      --min-window "$2" --db "$out/window-$1.db" --format csv >/dev/null
    "$bin" export --db "$out/window-$1.db" -o "$out/window-$1.csv"
}
measure reference "$long" 3
measure naive 0 "$runs"
measure aligned "$short" "$runs"
python3 - "$out" <<'PY'
import csv, math, statistics as st, sys
out = sys.argv[1]
def rows(name):
    return list(csv.DictReader(open(f"{out}/window-{name}.csv")))
def per_token(r, col):
    return float(r[col]) / float(r["decode_tokens"])
ref_rows = rows("reference")
ref = st.mean(per_token(r, "decode_gpu_energy_counter_j") for r in ref_rows)
ref_cv = 100 * st.stdev(per_token(r, "decode_gpu_energy_counter_j") for r in ref_rows) / ref
print(f"reference: {len(ref_rows)} runs, decode window {float(ref_rows[0]['decode_time_s']) * int(ref_rows[0]['decode_repeats']):.1f} s, "
      f"{1e3 * ref:.2f} J/1k tok (counter), CV {ref_cv:.2f} %")
print(f"{'method':<11} {'n':>3} {'window s':>8} {'mean err %':>10} {'RMS err %':>9} {'max |err| %':>11}")
res = []
for name, col in (("naive", "decode_gpu_energy_counter_j"),
                  ("integrated", "decode_gpu_energy_integrated_j"),
                  ("aligned", "decode_gpu_energy_counter_j")):
    rs = rows("naive" if name == "integrated" else name)
    err = [100 * (per_token(r, col) / ref - 1) for r in rs]
    win = st.mean(float(r["decode_time_s"]) * int(r["decode_repeats"]) for r in rs)
    rms = math.sqrt(sum(e * e for e in err) / len(err))
    print(f"{name:<11} {len(rs):>3} {win:>8.2f} {st.mean(err):>10.2f} {rms:>9.2f} {max(map(abs, err)):>11.2f}")
    res.append((name, len(rs), win, st.mean(err), rms, max(map(abs, err))))
with open(f"{out}/window-check.csv", "w") as f:
    f.write("method,n,window_s,mean_err_pct,rms_err_pct,max_abs_err_pct\n")
    for r in res:
        f.write(",".join(str(x) for x in r) + "\n")
PY
