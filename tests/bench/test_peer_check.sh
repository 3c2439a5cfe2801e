#!/usr/bin/env bash
# test_peer_check.sh — bench/peer-check.sh end to end on the CPU: the `peer` mode with the
# catalog's `tiny` model, the fake NVML and a stand-in for the PyTorch peer (stand_in_peer.py:
# the same arguments, marker windows and summary), and the `formats` mode with a given read
# bandwidth. At the fake's constant power both sides' gross J/1k are power / tok/s: the report
# pairs the right windows, tokens and runs.
set -u
bin=${EC_BINARY:?}
export ECOCOMPUTE_NVML_LIBRARY=${FAKE_NVML_LIBRARY:?}
root=$(cd "$(dirname "$0")/../.." && pwd)
command -v python3 >/dev/null || { echo "skipping: no python3"; exit 77; }
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; fi; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A counter that moves at every read: window energies are exact integrals of 200 W.
export FAKE_NVML="gpus=1 power=200"
common=(ECOCOMPUTE="$bin" DEVICE=cpu MODEL=tiny PROMPT_LEN=16 GEN=16 MIN_WINDOW=0.3)

env "${common[@]}" OUT="$tmp/peer" BATCHES=1,4 RUNS=2 PEER_RUNS=2 STABILIZE=0 IDLE=0.3 \
  PEER="$root/tests/bench/stand_in_peer.py" bash "$root/bench/peer-check.sh" \
  >"$tmp/peer.out" 2>"$tmp/peer.err"; rc=$?
check "peer mode: exit 0 ($(tail -1 "$tmp/peer.err"))" '[ $rc -eq 0 ]'
check "peer mode: the table has a row per batch" \
  '[ "$(grep -cE "^(1|4) " "$tmp/peer.out")" -eq 2 ]'
check "peer mode: the stand-in's self-check reported" \
  'grep -q "^batch 4: ours n=2 gate .*; peer n=2, 1 graphs, graph == eager over 4 steps" "$tmp/peer.out"'
# Each side's J/1k gross x tok/s = 200 W x 1000; ours is a mean over runs whose speed varies on
# a busy machine (the mean of 1/x exceeds 1/mean), so it gets a wider bound than the peer's
# sleeps, which a loaded 2-core machine also stretches. A wrong pairing of windows, tokens or
# runs is off by far more (batch 4 decodes ~4x the tokens of batch 1).
check "peer mode: at constant power, J/1k gross = W / tok/s on both sides, net ~ 0" \
  'python3 - "$tmp/peer/peer-check.csv" <<'"'"'PY'"'"'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
f = lambda r, k: float(r[k])
ok = len(rows) == 2 and all(
    abs(f(r, "peer_j_per_1k_gross") * f(r, "peer_tok_s") / 2e5 - 1) < 0.1
    and abs(f(r, "ours_j_per_1k_gross") * f(r, "ours_tok_s") / 2e5 - 1) < 0.25
    and abs(f(r, "j_ratio_gross") * f(r, "tok_s_ratio") - 1) < 0.25
    and r["ours_n"] == "2" and r["peer_n"] == "2"
    and abs(f(r, "peer_j_per_1k_net")) < 0.02 * f(r, "peer_j_per_1k_gross")
    for r in rows)
sys.exit(0 if ok else 1)
PY'
check "peer mode: the files of the call" \
  '(for f in peer-check.txt peer-check.db peer-check-runs.csv peer.json peer-meter.json bench.log; do [ -s "$tmp/peer/$f" ] || exit 1; done)'

env "${common[@]}" OUT="$tmp/formats" IDLE=0.3 BATCHES=1,64 FORMATS=fp16,int8 READ_GBS=100 \
  bash "$root/bench/peer-check.sh" formats >"$tmp/formats.out" 2>"$tmp/formats.err"; rc=$?
check "formats mode: exit 0 ($(tail -1 "$tmp/formats.err"))" '[ $rc -eq 0 ]'
check "formats mode: four configurations, roofline against the given 100 GB/s" \
  '[ "$(grep -c "^tiny " "$tmp/formats.out")" -eq 4 ] && grep -q "roofline against 100 GB/s" "$tmp/formats.out"'
check "formats mode: the targets' verdicts" \
  'grep -q "^target batch 1 >= 80 % roofline: " "$tmp/formats.out" && grep -q "^target batch 32-64 J/1k <= fp16: " "$tmp/formats.out"'
check "formats mode: CSV with roofline and deltas" \
  '[ "$(wc -l <"$tmp/formats/formats.csv")" -eq 5 ] && head -1 "$tmp/formats/formats.csv" | grep -q "roofline_pct"'

bash "$root/bench/peer-check.sh" nonsense >/dev/null 2>&1; rc=$?
check "an unknown mode: usage error" '[ $rc -eq 2 ]'
[ $fail -eq 0 ] && echo "test_peer_check: all checks pass"
exit $fail
