#!/usr/bin/env bash
# test_meter_marks.sh — the marker protocol of `ecocompute meter` under the fake NVML (2 GPUs at
# 200 W): windows named by a shell child and by a Python child (the python/ package), bad lines,
# a window never ended, a grandchild that keeps the pipe open, and the package outside the meter.
set -u
bin=${EC_BINARY:?}
export ECOCOMPUTE_NVML_LIBRARY=${FAKE_NVML_LIBRARY:?} FAKE_NVML="gpus=2 power=200"
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; fi; }
jcheck() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$1"; }

# Shell child: two windows, one bad line, one window left open.
"$bin" meter --format json -- sh -c 'm() { echo "$*" >&"$ECOCOMPUTE_MARK_FD"; }
  m begin load; sleep 0.3; m end load; m hello; m end nothing; m begin tail; sleep 0.1' \
  >"$tmp/s.json" 2>"$tmp/s.err"; rc=$?
check "shell child exits 0 (got $rc)" '[ $rc -eq 0 ]'
check "window load: 2 GPUs x 200 W x duration" \
  'jcheck "$tmp/s.json" "(w:=j[\"windows\"][\"load\"]) and 0.25 < w[\"duration_s\"] < 1.5 and abs(w[\"gpu_energy_j\"] - 400*w[\"duration_s\"]) < 15 and len(w[\"gpus\"]) == 2"'
check "window load within the run" 'jcheck "$tmp/s.json" "j[\"windows\"][\"load\"][\"duration_s\"] < j[\"duration_s\"]"'
check "unclosed window is reported as such" 'jcheck "$tmp/s.json" "j[\"windows\"][\"tail\"][\"unclosed\"] is True"'
check "bad line reported once" '[ "$(grep -Ec "ECOCOMPUTE_MARK_FD line [0-9]" "$tmp/s.err")" -eq 1 ]'
check "bad line count" 'grep -q "2 bad ECOCOMPUTE_MARK_FD lines" "$tmp/s.err"'

# Table output: one row per window after the whole command.
"$bin" meter --idle 0.3 -- sh -c 'echo begin step >&"$ECOCOMPUTE_MARK_FD"; sleep 0.2; echo end step >&"$ECOCOMPUTE_MARK_FD"' \
  >"$tmp/t.out" 2>/dev/null
check "table has a window row" 'grep -Eq "^step +0\.[0-9]+ +[0-9.]+ +[0-9.-]+ +[0-9.]+" "$tmp/t.out"'
check "table header names net" 'grep -q "GPU net (J)" "$tmp/t.out"'

# A grandchild holding the pipe open does not keep the meter waiting.
start=$(date +%s)
"$bin" meter -- sh -c 'sleep 5 & echo begin x >&"$ECOCOMPUTE_MARK_FD"; echo end x >&"$ECOCOMPUTE_MARK_FD"' >/dev/null 2>&1
check "meter returns when the child exits" '[ $(( $(date +%s) - start )) -lt 4 ]'

# Python child using the package.
if command -v python3 >/dev/null; then
  "$bin" meter --format json -- python3 "$src/tests/meter/marks_child.py" "$src/python" \
    >"$tmp/p.json" 2>"$tmp/p.err"; rc=$?
  check "python child exits 0 (got $rc; $(cat "$tmp/p.err"))" '[ $rc -eq 0 ]'
  check "python windows load and generate" \
    'jcheck "$tmp/p.json" "sorted(j[\"windows\"]) == [\"generate\", \"load\"] and j[\"windows\"][\"load\"][\"duration_s\"] > 0.25 and j[\"windows\"][\"generate\"][\"gpu_energy_j\"] > 0"'
  # Outside the meter the package says so clearly.
  out=$(env -u ECOCOMPUTE_MARK_FD python3 -c "import sys; sys.path.insert(0, '$src/python'); import ecocompute
try:
    ecocompute.begin_window('x')
except ecocompute.NotUnderMeter as e:
    print('raised', e)" 2>&1)
  check "outside the meter: NotUnderMeter naming the command" 'case "$out" in raised*"ecocompute meter --"*) true;; *) false;; esac'
fi
exit $fail
