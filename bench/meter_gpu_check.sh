#!/usr/bin/env bash
# meter_gpu_check.sh — verifies the meter on a real NVIDIA GPU (run by hand on the H100 machine,
# from the repository root, after `bash scripts/build.sh build`). It reads telemetry only and never
# changes a GPU setting. Steps:
#   1. `ecocompute gpus`
#   2. idle power without a CUDA context, then with one (a Python process holding a torch context)
#   3. a steady ~10 s fp16 matmul load: counter vs integrated-power energy
#   4. the meter's own CPU cost at 100 ms and 1 ms sampling (meter_cpu_s / duration_s)
# and prints a summary table. Needs python3 with torch for steps 2b and 3 (skipped otherwise).
# Usage: bash bench/meter_gpu_check.sh [GPU]     (GPU: index, UUID or bus id; default 0)
set -u
gpu=${1:-0}
bin=build/ecocompute
out=$(mktemp -d /tmp/meter_gpu_check.XXXXXX)
[ -x "$bin" ] || { echo "meter_gpu_check: $bin not found; build first (bash scripts/build.sh build)" >&2; exit 1; }
echo "meter_gpu_check: GPU $gpu, results in $out"

section() { printf '\n==== %s ====\n' "$1"; }
# field FILE KEY: one top-level number (or string) from a meter JSON result, "n/a" if absent.
field() {
  python3 -c 'import json,sys
try:
    v = json.load(open(sys.argv[1])).get(sys.argv[2])
except Exception:
    v = None
print("n/a" if v is None else (f"{v:.4g}" if isinstance(v, float) else v))' "$1" "$2"
}
# meter NAME ARGS... -- CMD: runs the meter with JSON output into $out/NAME.json.
meter() {
  local name=$1; shift
  echo "+ ecocompute meter --gpu $gpu $*"
  "$bin" meter --gpu "$gpu" --format json "$@" >"$out/$name.json" 2>"$out/$name.err"
  local rc=$?
  cat "$out/$name.err" >&2
  [ $rc -eq 0 ] || echo "meter_gpu_check: '$name' exited $rc" >&2
}

section "1. GPUs"
"$bin" gpus || { echo "meter_gpu_check: no GPU visible; stopping" >&2; exit 1; }

have_torch=0
python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null && have_torch=1
[ $have_torch -eq 1 ] || echo "meter_gpu_check: python3 with CUDA torch not found; steps 2b and 3 skipped" >&2
# torch numbers GPUs in CUDA order; pin the same physical GPU by its UUID.
uuid=$("$bin" meter --gpu "$gpu" --format json -- true 2>/dev/null |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["gpus"][0]["uuid"])')
export CUDA_VISIBLE_DEVICES=$uuid

section "2a. idle, no CUDA context (10 s)"
meter idle_noctx --idle 10 -- sleep 10

if [ $have_torch -eq 1 ]; then
  section "2b. idle with a CUDA context (10 s)"
  cat >"$out/hold_context.py" <<'PY'
import time, torch
torch.zeros(1, device="cuda"); torch.cuda.synchronize()
time.sleep(10)
PY
  meter idle_ctx -- python3 "$out/hold_context.py"

  section "3. steady fp16 matmul load (~10 s)"
  cat >"$out/load.py" <<'PY'
import sys, time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)
torch.cuda.synchronize()
end = time.monotonic() + 10.0
n = 0
while time.monotonic() < end:
    for _ in range(10):
        c = a @ b
    torch.cuda.synchronize()
    n += 10
# stderr: the meter's JSON owns stdout
print(f"matmuls: {n}, TFLOP/s: {n * 2 * 8192**3 / 10.0 / 1e12:.0f}", file=sys.stderr)
PY
  meter load --trace "$out/load_trace.csv" -- python3 "$out/load.py"
fi

section "4. sampler CPU cost (10 s each at 100 ms and 1 ms)"
meter cpu_100ms --interval 100 -- sleep 10
meter cpu_1ms --interval 1 -- sleep 10

section "summary"
cpu_share() {
  python3 -c 'import json,sys
j = json.load(open(sys.argv[1]))
print("%.3f %% (whole meter process %.2f %%)" % (100 * j["sampler_cpu_s"] / j["duration_s"],
      100 * j["meter_cpu_s"] / j["duration_s"]))' "$1" 2>/dev/null || echo n/a
}
{
  printf '%-34s %s\n' "check" "result"
  printf '%-34s %s W\n' "idle power, no context" "$(field "$out/idle_noctx.json" gpu_idle_power_w)"
  if [ $have_torch -eq 1 ]; then
    printf '%-34s %s W\n' "idle power, CUDA context" "$(field "$out/idle_ctx.json" gpu_avg_power_w)"
    printf '%-34s %s W (peak %s W)\n' "matmul load, average power" \
      "$(field "$out/load.json" gpu_avg_power_w)" "$(field "$out/load.json" gpu_peak_power_w)"
    printf '%-34s %s J (%s)\n' "matmul load, energy gross" \
      "$(field "$out/load.json" gpu_energy_j)" "$(field "$out/load.json" gpu_energy_method)"
    printf '%-34s %s J\n' "matmul load, integrated power" "$(field "$out/load.json" gpu_energy_integrated_j)"
    printf '%-34s %s %%\n' "integrated vs counter" "$(field "$out/load.json" gpu_disagreement_pct)"
    printf '%-34s %s\n' "matmul load, throttled" "$(field "$out/load.json" throttled)"
  fi
  printf '%-34s %s\n' "meter CPU share, 100 ms sampling" "$(cpu_share "$out/cpu_100ms.json")"
  printf '%-34s %s\n' "meter CPU share, 1 ms sampling" "$(cpu_share "$out/cpu_1ms.json")"
  printf '%-34s %s\n' "CPU energy (RAPL)" "$(field "$out/idle_noctx.json" cpu_energy_j) J $(field "$out/idle_noctx.json" cpu_energy_unavailable)"
} | tee "$out/summary.txt"
echo "meter_gpu_check: JSON results, the load trace and this summary are in $out"
