#!/usr/bin/env bash
# test_windows_cli.sh — `bench` repeats each phase inside a window long enough for the GPU's
# energy counter (fake NVML: a counter that moves every 0.1 s), divides by the repetitions, and
# stores the repetitions, the counter's period, each run's energy uncertainty and its energy per
# request; without a counter period (a counter that moves continuously) nothing is repeated.
set -u
bin=${EC_BINARY:?}
export ECOCOMPUTE_NVML_LIBRARY=${FAKE_NVML_LIBRARY:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; fi; }
# py EXPR: evaluates EXPR over r, the list of exported runs (dicts), in "$tmp/runs.json".
py() { python3 -c "import json,sys; r=json.load(open('$tmp/runs.json'))['rows']; sys.exit(0 if ($1) else 1)"; }
quick=(--model tiny --gen 8 --prompt-len 8 --warmup 1 --stabilize 0 --runs 2 --reruns 0)

FAKE_NVML="gpus=1 power=150 counter_period=0.1" "$bin" bench "${quick[@]}" --batch 2 --idle 0.5 \
  --min-window 0.6 --db "$tmp/w.db" >/dev/null 2>"$tmp/err"; rc=$?
check "bench with 0.6 s windows exits 0 ($(tail -1 "$tmp/err"))" '[ $rc -eq 0 ]'
"$bin" export --db "$tmp/w.db" --format json -o "$tmp/runs.json" 2>/dev/null
check "phases repeated to fill 0.6 s" \
  'py "all(x[\"decode_repeats\"] > 1 and x[\"prefill_repeats\"] > 1 and x[\"decode_time_s\"] * x[\"decode_repeats\"] >= 0.5 for x in r)"'
check "counter period stored (0.1 s)" 'py "all(abs(x[\"counter_period_s\"] - 0.1) < 0.02 for x in r)"'
check "per-phase power is the script's 150 W within 2 %" \
  'py "all(abs(x[\"decode_avg_power_w\"] - 150) < 3 and abs(x[\"avg_power_w\"] - 150) < 3 for x in r)"'
check "run energy = prefill + decode (one of each)" \
  'py "all(abs(x[\"gpu_energy_j\"] - x[\"prefill_gpu_energy_j\"] - x[\"decode_gpu_energy_j\"]) < 1e-9 for x in r)"'
check "J per request = run energy / batch, gross and net" \
  'py "all(abs(x[\"j_per_request_gross\"] - x[\"gpu_energy_j\"] / 2) < 1e-9 and abs(x[\"j_per_request_net\"] - x[\"gpu_energy_net_j\"] / 2) < 1e-9 for x in r)"'
check "uncertainty stated, below 1 % with aligned windows" \
  'py "all(0 < x[\"gpu_energy_uncert_j\"] < 0.01 * x[\"gpu_energy_j\"] for x in r)"'

"$bin" analyze --db "$tmp/w.db" --table configs --format json >"$tmp/a.json" 2>/dev/null
check "analyze: J/request of the configuration = mean of its runs'" \
  'python3 -c "import json,sys; a=json.load(open(\"$tmp/a.json\")); r=json.load(open(\"$tmp/runs.json\"))[\"rows\"]; m=sum(x[\"j_per_request_gross\"] for x in r)/len(r); sys.exit(0 if abs(a[0][\"j_per_request_mean\"] - m) < 0.01 else 1)"'

# One phase per window: the protocol as it was (no repetitions, keys of older sweeps).
FAKE_NVML="gpus=1 power=150 counter_period=0.1" "$bin" bench "${quick[@]}" --idle 0 \
  --min-window 0 --db "$tmp/one.db" >/dev/null 2>&1
"$bin" export --db "$tmp/one.db" --format json -o "$tmp/runs.json" 2>/dev/null
check "min-window 0: one phase per window" 'py "all(x[\"decode_repeats\"] == 1 and x[\"prefill_repeats\"] == 1 for x in r)"'
check "min-window 0: the stale edges show in the uncertainty" \
  'py "all(x[\"gpu_energy_uncert_j\"] > 0.05 * x[\"gpu_energy_j\"] for x in r)"'

# auto with a counter that moves at every read: windows need no lengthening.
FAKE_NVML="gpus=1 power=150" "$bin" bench "${quick[@]}" --idle 0 --db "$tmp/auto.db" >/dev/null 2>&1
"$bin" export --db "$tmp/auto.db" --format json -o "$tmp/runs.json" 2>/dev/null
check "auto, continuous counter: period below 10 ms, few repetitions" \
  'py "all(x[\"counter_period_s\"] < 0.01 and x[\"decode_repeats\"] < 100 for x in r)"'

"$bin" bench "${quick[@]}" --min-window -3 --db "$tmp/x.db" >/dev/null 2>&1; rc=$?
check "--min-window -3: usage error" '[ $rc -eq 2 ]'
[ $fail -eq 0 ] && echo "test_windows_cli: all checks pass"
exit $fail
