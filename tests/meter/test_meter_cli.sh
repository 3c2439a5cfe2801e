#!/usr/bin/env bash
# test_meter_cli.sh — `ecocompute meter` end to end with the fake NVML (2 GPUs at 200 W each) and
# a fake powercap tree: exit status, signal forwarding, crashes, JSON/CSV output, the trace,
# --idle/--tokens, no driver, and bad flag values.
set -u
bin=${EC_BINARY:?}
fake=${FAKE_NVML_LIBRARY:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; fi; }
# Evaluates a Python expression over the JSON object in file $1 as `j`; exits nonzero if false.
jcheck() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$1"; }

mkdir -p "$tmp/pc/intel-rapl:0"
echo package-0 >"$tmp/pc/intel-rapl:0/name"
echo 1000 >"$tmp/pc/intel-rapl:0/energy_uj"
echo 262143328850 >"$tmp/pc/intel-rapl:0/max_energy_range_uj"
export ECOCOMPUTE_NVML_LIBRARY=$fake ECOCOMPUTE_POWERCAP_ROOT=$tmp/pc FAKE_NVML="gpus=2 power=200"

# Exit status propagates; the measurement is printed.
"$bin" meter -- sh -c 'exit 3' >"$tmp/out" 2>"$tmp/err"; rc=$?
check "exit 3 propagates (got $rc)" '[ $rc -eq 3 ]'
check "table shows gross GPU energy" 'grep -q "GPU energy, gross (counter)" "$tmp/out"'
check "table shows duration in s" 'grep -Eq "^duration +[0-9.]+ +s" "$tmp/out"'
check "table shows CPU energy" 'grep -q "CPU package energy, gross" "$tmp/out"'
"$bin" meter true >/dev/null 2>&1; check "command without -- runs" '[ $? -eq 0 ]'

# JSON: one object with the documented fields; 2 GPUs × 200 W.
"$bin" meter --format json --tokens 500 -- sleep 0.3 >"$tmp/j.json" 2>/dev/null; rc=$?
check "json run exits 0" '[ $rc -eq 0 ]'
check "json parses" 'python3 -m json.tool "$tmp/j.json" >/dev/null'
check "json energy = 400 W x duration" \
  'jcheck "$tmp/j.json" "abs(j[\"gpu_energy_j\"] - 400*j[\"duration_s\"]) < 1 and j[\"gpu_energy_method\"] == \"counter\""'
check "json per-GPU records" \
  'jcheck "$tmp/j.json" "len(j[\"gpus\"]) == 2 and j[\"gpus\"][1][\"uuid\"].startswith(\"GPU-\") and j[\"gpu_count\"] == 2"'
check "json J per 1k tokens" \
  'jcheck "$tmp/j.json" "abs(j[\"gpu_j_per_1k_tokens_gross\"] - 2*j[\"gpu_energy_j\"]) < 1e-6 and j[\"gpu_net_energy_j\"] is None"'
check "json CPU energy from RAPL" 'jcheck "$tmp/j.json" "j[\"cpu_energy_j\"] == 0 and \"cpu_energy_unavailable\" not in j"'
check "json meter_cpu_s" 'jcheck "$tmp/j.json" "0 <= j[\"meter_cpu_s\"] < j[\"duration_s\"]"'

# The child gets the trace's time origin: its own CLOCK_MONOTONIC marks minus this are t_s.
"$bin" meter -- python3 -c 'import os,time; print(time.monotonic() - float(os.environ["ECOCOMPUTE_METER_T0"]))' >"$tmp/t0" 2>/dev/null
check "ECOCOMPUTE_METER_T0 is the meter's origin ($(head -1 "$tmp/t0"))" \
  'python3 -c "import sys; v=float(open(sys.argv[1]).readline()); sys.exit(0 if 0 <= v < 5 else 1)" "$tmp/t0"'

# --idle: constant power, so net energy is ~0 and idle power is 400 W.
"$bin" meter --idle 0.3 --format json -- sleep 0.2 >"$tmp/i.json" 2>/dev/null
check "idle power and net energy" \
  'jcheck "$tmp/i.json" "abs(j[\"gpu_idle_power_w\"] - 400) < 2 and abs(j[\"gpu_net_energy_j\"]) < 1 and j[\"idle_duration_s\"] >= 0.3"'

# CSV: field,value rows.
"$bin" meter --format csv -- true >"$tmp/c.csv" 2>/dev/null
check "csv: a header and one row" '[ "$(wc -l <"$tmp/c.csv")" -eq 2 ] && head -1 "$tmp/c.csv" | grep -q "^command,exit_status,duration_s,"'
check "csv: per-GPU energy in one field" 'python3 -c "import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); sys.exit(0 if r[0][\"gpu_energy_j_per_gpu\"].startswith(\"0:\") and \" 1:\" in r[0][\"gpu_energy_j_per_gpu\"] and r[0][\"command\"] == \"true\" else 1)" "$tmp/c.csv"'
"$bin" meter --format csv -- sh -c 'exit 0' 2>/dev/null | tail -n +2 >>"$tmp/c.csv"
check "csv: same header for every run, so rows append" '[ "$(wc -l <"$tmp/c.csv")" -eq 3 ]'

# Trace: header with units and one row per GPU per tick; a failing field is an empty cell.
FAKE_NVML="gpus=2 power=200 gpu1.avg=fail" "$bin" meter --interval 10 --trace "$tmp/t.csv" -- sleep 0.3 >/dev/null 2>&1
hdr="t_s,gpu,energy_mj,power_instant_w,power_avg_w,sm_mhz,mem_mhz,temp_c,clock_event_reasons,util_gpu_pct,util_mem_pct,lost"
check "trace header" '[ "$(head -1 "$tmp/t.csv")" = "$hdr" ]'
rows=$(($(wc -l <"$tmp/t.csv") - 1))
# At most one tick per 10 ms of the meter's own clock (the last row's t_s: how long the command
# ran, which under load or a sanitizer exceeds the 0.3 s it sleeps), plus the first and last.
last_t=$(tail -1 "$tmp/t.csv" | cut -d, -f1)
max_rows=$(awk -v t="$last_t" 'BEGIN { printf "%d", 2 * (t / 0.010 + 2) }')
check "trace rows ($rows, at most $max_rows by t_s $last_t)" \
    '[ $rows -ge 20 ] && [ $rows -le $max_rows ]'
check "trace ends when the command does (t_s $last_t)" \
    'awk -v t="$last_t" "BEGIN { exit !(t < 5) }"'
check "trace: failed field is empty" 'awk -F, "NR>1 && \$2==1 && \$5!=\"\" {bad=1} END{exit bad}" "$tmp/t.csv"'
check "trace: other GPU has it" 'awk -F, "NR>1 && \$2==0 && \$5==\"\" {bad=1} END{exit bad}" "$tmp/t.csv"'
# The sampler's schedule: instant power every tick; the costly energy counter at most once a
# second (0.3 s at 10 ms: only the first tick); telemetry (SM clock) every 100 ms (~every 10th).
check "trace: power on every tick" 'awk -F, "NR>1 && \$4==\"\" {bad=1} END{exit bad}" "$tmp/t.csv"'
check "trace: counter read once in 0.3 s" '[ "$(awk -F, "NR>1 && \$2==0 && \$3!=\"\"" "$tmp/t.csv" | wc -l)" -eq 1 ]'
clocks=$(awk -F, 'NR>1 && $2==0 && $6!=""' "$tmp/t.csv" | wc -l)
check "trace: telemetry every ~100 ms ($clocks of $((rows / 2)) ticks)" '[ $clocks -ge 2 ] && [ $clocks -le 5 ]'

# SIGTERM to the meter reaches the child; the meter reports 143 and still prints. The signal goes
# 0.5 s after the child has started: the binary itself takes up to ~0.5 s to start (it maps the
# CUDA libraries), so a fixed delay from the meter's launch could stop the child before 0.4 s.
start=$(date +%s)
"$bin" meter --format json -- sh -c "touch '$tmp/started'; exec sleep 30" >"$tmp/s.json" \
  2>"$tmp/s.err" &
pid=$!
for _ in $(seq 100); do [ -e "$tmp/started" ] && break; sleep 0.1; done
sleep 0.5
kill -TERM $pid
wait $pid; rc=$?
check "SIGTERM: exit 143 (got $rc)" '[ $rc -eq 143 ]'
check "SIGTERM: child stopped promptly" '[ $(($(date +%s) - start)) -lt 10 ]'
check "SIGTERM: measurement printed" 'jcheck "$tmp/s.json" "j[\"child_signal\"] == 15 and j[\"duration_s\"] >= 0.4"'

# A crashing child: 139 and the measurement, noted.
"$bin" meter -- sh -c 'kill -SEGV $$' >"$tmp/out" 2>"$tmp/err"; rc=$?
check "SEGV: exit 139 (got $rc)" '[ $rc -eq 139 ]'
check "SEGV: measurement printed" 'grep -q "GPU energy, gross" "$tmp/out"'
check "SEGV: noted" 'grep -q "died from signal 11" "$tmp/err"'

# Command not found: 127 like a shell, with a message.
"$bin" meter -- /nonexistent/command >"$tmp/out" 2>"$tmp/err"; rc=$?
check "not found: 127 (got $rc)" '[ $rc -eq 127 ]'
check "not found: message" 'grep -q "cannot run" "$tmp/err"'

# Lost GPU and counter reset are reported, not silent.
FAKE_NVML="gpus=2 power=200 gpu1.lost=0.2" "$bin" meter --format json -- sleep 0.4 >"$tmp/l.json" 2>"$tmp/err"
check "lost GPU: incomplete" 'jcheck "$tmp/l.json" "j[\"incomplete\"] and j[\"gpus\"][1][\"incomplete\"]"'
check "lost GPU: noted" 'grep -q "GPU 1 was lost" "$tmp/err"'

# No driver: still runs, reports duration and CPU energy; RAPL absent is "unavailable".
ECOCOMPUTE_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 ECOCOMPUTE_POWERCAP_ROOT=/nonexistent \
  "$bin" meter --format json -- sh -c 'exit 0' >"$tmp/n.json" 2>"$tmp/err"; rc=$?
check "no driver: exit 0" '[ $rc -eq 0 ]'
check "no driver: message" 'grep -q "measuring time and CPU energy only" "$tmp/err"'
ECOCOMPUTE_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 "$bin" meter -- true >/dev/null 2>"$tmp/err"
check "no driver: said once in the table output" '[ "$(grep -c "libnvidia-ml.so.1" "$tmp/err")" -eq 1 ]'
check "no driver: json" \
  'jcheck "$tmp/n.json" "j[\"gpu_count\"] == 0 and j[\"gpu_energy_j\"] is None and j[\"cpu_energy_unavailable\"].startswith(\"no powercap\")"'

# Bad values: one line on stderr, exit 2.
for args in "--interval -5 -- true" "--interval 0 -- true" "--interval abc -- true" \
  "--idle -1 -- true" "--tokens 0 -- true" "--format xml -- true" "--" "" "--gpu 7 -- true" \
  "--gpu GPU-nope -- true" "--trace"; do
  # shellcheck disable=SC2086
  err=$("$bin" meter $args 2>&1 >/dev/null); rc=$?
  check "'meter $args' exits 2 (got $rc)" '[ $rc -eq 2 ]'
  check "'meter $args' one line" '[ "$(printf "%s\n" "$err" | wc -l)" -eq 1 ]'
done

# A short command under a counter that moves every 0.1 s: the period, the uncertainty it puts on
# the energy (P x period / sqrt 6), and a note saying how long a window would be sure to 1 %.
FAKE_NVML="gpus=1 power=150 counter_period=0.1" "$bin" meter --format json -- sleep 0.5 \
  >"$tmp/short.json" 2>"$tmp/short.err"
check "short window: counter period 0.1 s" 'jcheck "$tmp/short.json" "abs(j[\"counter_period_s\"] - 0.1) < 0.02"'
check "short window: uncertainty P x period / sqrt 6" \
  'jcheck "$tmp/short.json" "abs(j[\"gpu_energy_uncert_j\"] - j[\"gpu_avg_power_w\"] * j[\"counter_period_s\"] / 6 ** 0.5) < 1e-6"'
check "short window: a note with the uncertainty and the window to aim for" \
  'grep -q "updates of the GPU energy counter .*uncertain by .*a window of 5 s or more" "$tmp/short.err"'
[ $fail -eq 0 ] && echo "meter cli: all checks pass"
exit $fail
