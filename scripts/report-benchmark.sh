#!/usr/bin/env bash
# report-benchmark.sh — the report's scale benchmark (not a timed test): imports a planted
# database of 10,080 runs (10 models × 7 precisions × 2 kernel families × 8 batch sizes, 9 runs
# each, 20 sessions) and times `ecocompute report` on it, HTML and Markdown, printing the tool
# time and the file sizes. docs/report.md records the figures.
# usage: scripts/report-benchmark.sh [BUILD_DIR]   (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build}/ecocompute
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
awk 'BEGIN {
  OFS = ","
  print "source,energy_definition,session_id,gpu_name,driver,git_commit,timestamp_utc,model," \
        "params_b,precision,kernels,device,batch,prompt_len,gen_len,run_index,gate,idle_power_w," \
        "tok_s,j_per_1k_gross,j_per_1k_net,gpu_energy_j,gpu_energy_net_j,avg_power_w"
  split("fp16 bf16 fp8 int8-mixed int8 nf4 nf4-dq", p, " ")
  split("1 2 4 8 16 32 64 128", b, " ")
  n = 0
  for (m = 1; m <= 10; m++) for (q = 1; q <= 7; q++) for (k = 0; k < 2; k++)
    for (i = 1; i <= 8; i++) for (r = 0; r < 9; r++) {
      size = 0.5 * m; e = 900 * size^0.8 * (1 + 0.1 * q * (1 - k)) * b[i]^-0.8 * (1 + 0.01 * (r - 5))
      s = n % 20; n++
      print "ecocompute", "gross", "bench-session-" s, "NVIDIA H100 80GB HBM3", "580.159.04", \
            "c0ffee" s, sprintf("2026-11-29T%02d:%02d:%02dZ", s, (n / 60) % 60, n % 60), \
            "model-" m, size, p[q], k ? "fused" : "reference", "cuda", b[i], 512, 256, r, \
            "pass", 120, 400 / e * 1000, e, e * 0.7, e * 256 * b[i] / 1000, \
            e * 0.7 * 256 * b[i] / 1000, 400
    }
}' >"$tmp/big.csv"
"$bin" import --db "$tmp/big.db" "$tmp/big.csv" >/dev/null
# Wall time (the machine may be shared) and CPU time (user + system) of the whole command.
TIMEFORMAT='%R %U %S'
for fmt in html md; do
  t=$( { time "$bin" report --db "$tmp/big.db" --format "$fmt" -o "$tmp/big.$fmt" 2>/dev/null; } 2>&1)
  read -r wall user sys <<<"$t"
  printf "%s: %s runs, %.2f s wall, %.2f s CPU, %.2f MB\n" "$fmt" \
    "$(grep -c '' "$tmp/big.csv" | awk '{print $1 - 1}')" "$wall" "$(echo "$user + $sys" | bc)" \
    "$(echo "$(stat -c %s "$tmp/big.$fmt") / 1000000" | bc -l)"
done
