#!/usr/bin/env bash
# test_bench_cli.sh — `ecocompute bench`, `export` and `import` end to end with the CPU engine
# and the fake NVML (one GPU at a scripted power): a sweep and its summary, re-running a finished
# sweep, Ctrl-C and --resume, kill -9 at random points (no run lost or stored twice), export ->
# import round trips, a reader while a sweep writes, foreign and damaged database files, and
# usage errors.
set -u
bin=${EC_BINARY:?}
fake=${FAKE_NVML_LIBRARY:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; fi; }
# py EXPR FILE...: evaluates a Python expression with the files' text in f[0], f[1], ...
py() { python3 -c "import csv,json,sys,io; f=[open(p).read() for p in sys.argv[2:]]; sys.exit(0 if ($1) else 1)" "$@"; }
# q DB SQL: runs SQL (statements separated by ;) with Python's sqlite3 module, printing the last
# statement's rows like the sqlite3 shell (no sqlite3 binary needed).
q() {
  python3 - "$1" "$2" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
rows = []
for stmt in filter(str.strip, sys.argv[2].split(";")):
    rows = c.execute(stmt).fetchall()
c.commit()
for r in rows:
    print("|".join(str(v) for v in r))
PY
}
# same_but_run_id A B: two exports with equal rows, run_id aside (each database numbers its
# own runs; a run re-measured after a failed gate leaves a gap in the first one).
same_but_run_id() {
  python3 - "$1" "$2" <<'PY'
import csv, json, sys
def rows(p):
    if p.endswith(".json"):
        j = json.load(open(p))
        return j["columns"], [[r[c] for c in j["columns"]] for r in j["rows"]]
    r = list(csv.reader(open(p, newline="")))
    return r[0], r[1:]
(ha, a), (hb, b) = rows(sys.argv[1]), rows(sys.argv[2])
k = ha.index("run_id")
strip = lambda rs: [x[:k] + x[k + 1:] for x in rs]
sys.exit(0 if ha == hb and a and strip(a) == strip(b) else 1)
PY
}
# rows_ok FILE.csv RUNS CONFIGS: every configuration has run_index 0..RUNS-1 exactly once.
rows_ok() {
  python3 - "$1" "$2" "$3" <<'PY'
import csv, sys, collections
rows = list(csv.DictReader(open(sys.argv[1])))
runs, configs = int(sys.argv[2]), int(sys.argv[3])
by = collections.defaultdict(list)
for r in rows:
    by[(r["model"], r["precision"], r["batch"], r["gen_len"])].append(int(r["run_index"]))
ok = len(by) == configs and all(sorted(v) == list(range(runs)) for v in by.values())
if not ok:
    print({k: sorted(v) for k, v in by.items()})
sys.exit(0 if ok else 1)
PY
}
export ECOCOMPUTE_NVML_LIBRARY=$fake FAKE_NVML="gpus=1 power=150" XDG_DATA_HOME=$tmp/xdg
quick=(--model tiny --gen 8 --prompt-len 8 --warmup 0 --idle 0 --stabilize 0)

# --help shows the default database path (XDG) and examples.
out=$("$bin" bench --help)
check "help names the XDG default db" '[[ "$out" == *"$tmp/xdg/ecocompute/results.db"* ]]'

# A sweep: 2 precisions x 2 batch sizes, JSON summary on stdout, progress on stderr.
"$bin" bench "${quick[@]}" --precision fp16,int8 --batch 1,2 --runs 3 --idle 0.2 \
  --format json --db "$tmp/a.db" >"$tmp/s.json" 2>"$tmp/s.err"; rc=$?
check "sweep exits 0 (got $rc)" '[ $rc -eq 0 ]'
check "summary: 4 configurations" 'py "len(json.loads(f[0])) == 4" "$tmp/s.json"'
# A few ms runs: a preempted clock or counter read moves the average power by a few W.
check "summary: gross J/1k = 150 W / tok rate, net about 0" \
  'py "all(abs(r[\"avg_power_w_mean\"] - 150) < 5 and r[\"j_per_1k_gross_mean\"] > 0 and abs(r[\"j_per_1k_net_mean\"]) < 0.05 * r[\"j_per_1k_gross_mean\"] for r in json.loads(f[0]))" "$tmp/s.json"'
check "summary: delta vs fp16" \
  'py "[r[\"delta_j_per_1k_gross_pct\"] == 0 for r in json.loads(f[0]) if r[\"precision\"] == \"fp16\"] == [True, True]" "$tmp/s.json"'
check "progress: config i/N and run j/n" 'grep -q "config 4/4 .*run 3/3" "$tmp/s.err"'
check "progress: gate verdicts" '[ "$(grep -c "gate " "$tmp/s.err")" -ge 4 ]'
check "default db untouched" '[ ! -e "$tmp/xdg/ecocompute/results.db" ]'

# Export: one row per run, phases, provenance, gross and net.
"$bin" export --db "$tmp/a.db" >"$tmp/a.csv"; rc=$?
check "export exits 0" '[ $rc -eq 0 ]'
check "export: 12 runs, each index once" 'rows_ok "$tmp/a.csv" 3 4'
check "export: phases and provenance" \
  'py "all(int(r[\"prefill_tokens\"]) == 8 * int(r[\"batch\"]) and int(r[\"decode_tokens\"]) == 7 * int(r[\"batch\"]) and r[\"gpu_name\"] == \"Fake H100 0\" and r[\"gpu_energy_method\"] == \"counter\" and r[\"energy_definition\"] == \"gross\" and r[\"session_id\"] and r[\"git_commit\"] for r in csv.DictReader(io.StringIO(f[0])))" "$tmp/a.csv"'
check "export: phase energies add up to the run" \
  'py "all(float(r[\"prefill_gpu_energy_j\"]) + float(r[\"decode_gpu_energy_j\"]) <= float(r[\"gpu_energy_j\"]) * 1.01 for r in csv.DictReader(io.StringIO(f[0])))" "$tmp/a.csv"'
check "session stores the command line" \
  '[ "$(q "$tmp/a.db" "select count(*) from sessions where command_line like \"ecocompute bench --model tiny%\"")" = 1 ]'

# The same sweep again measures nothing new.
"$bin" bench "${quick[@]}" --precision fp16,int8 --batch 1,2 --runs 3 --db "$tmp/a.db" >/dev/null 2>"$tmp/r.err"; rc=$?
check "re-run exits 0" '[ $rc -eq 0 ]'
check "re-run: already measured" 'grep -q "4 configurations finished (4 measured before), 0 runs" "$tmp/r.err"'
# Injected outliers are other weights: the same sweep with --outliers is a new measurement, and
# the stored sweep keeps them (for --resume).
"$bin" bench "${quick[@]}" --precision fp16,int8 --batch 1,2 --runs 1 --outliers 2:30 \
  --db "$tmp/o.db" >/dev/null 2>&1
"$bin" bench "${quick[@]}" --precision fp16,int8 --batch 1,2 --runs 1 --db "$tmp/o.db" \
  >/dev/null 2>"$tmp/o.err"; rc=$?
check "--outliers: the default weights are measured anew" \
  '[ $rc -eq 0 ] && grep -q "4 configurations finished (0 measured before)" "$tmp/o.err"'
stored_outliers="select count(*) from sessions where instr(spec, '\"outliers\":2,') > 0"
check "--outliers: stored with the sweep" '[ "$(q "$tmp/o.db" "$stored_outliers")" = 1 ]'
"$bin" bench "${quick[@]}" --outliers 2:x --db "$tmp/o.db" >/dev/null 2>"$tmp/o2.err"; rc=$?
check "--outliers 2:x: usage error" '[ $rc -eq 2 ] && grep -q "outliers magnitude" "$tmp/o2.err"'

# Round trips: CSV and JSON exports import into a fresh database and export identically;
# importing twice adds nothing.
"$bin" export --db "$tmp/a.db" --format json -o "$tmp/a.json" 2>/dev/null
"$bin" import --db "$tmp/b.db" "$tmp/a.csv" >"$tmp/i.txt"; rc=$?
check "import exits 0" '[ $rc -eq 0 ]'
check "import reports 12 added" 'grep -Eq "a.csv +12 +12 +0" "$tmp/i.txt"'
"$bin" import --db "$tmp/b.db" "$tmp/a.csv" "$tmp/a.json" >"$tmp/i2.txt"
check "re-import adds nothing" '[ "$(grep -Ec " 12 +0 +12 " "$tmp/i2.txt")" -eq 2 ]'
"$bin" export --db "$tmp/b.db" >"$tmp/b.csv"
check "CSV round trip is identical (run ids aside)" 'same_but_run_id "$tmp/a.csv" "$tmp/b.csv"'
"$bin" import --db "$tmp/c.db" "$tmp/a.json" >/dev/null
"$bin" export --db "$tmp/c.db" --format json -o "$tmp/c.json" 2>/dev/null
check "JSON round trip is identical (run ids aside)" 'same_but_run_id "$tmp/a.json" "$tmp/c.json"'
"$bin" import --db "$tmp/c.db" "$tmp/c.json" >/dev/null
"$bin" export --db "$tmp/c.db" --format json -o "$tmp/c2.json" 2>/dev/null
check "export of an imported database is byte-identical" 'cmp -s "$tmp/c.json" "$tmp/c2.json"'
# A folder imports as analyze reads it: its data files recursively, other .csv/.json skipped
# with a note; --db given in the one way every command takes it.
mkdir -p "$tmp/dir/sub" && cp "$tmp/a.csv" "$tmp/dir/sub/" && echo "note,text" >"$tmp/dir/notes.csv"
"$bin" import "$tmp/dir" --db "$tmp/d.db" >"$tmp/i3.txt" 2>"$tmp/i3.err"; rc=$?
check "import FOLDER: exit 0, the data file's 12 rows added" \
  '[ $rc -eq 0 ] && grep -Eq "sub/a.csv +12 +12 +0" "$tmp/i3.txt"'
check "import FOLDER: a file that is not data is skipped, said on stderr" \
  'grep -q "skipped .*notes.csv" "$tmp/i3.err" && ! grep -q notes.csv "$tmp/i3.txt"'
"$bin" import --db "$tmp/d.db" "$tmp/dir/notes.csv" >/dev/null 2>&1; rc=$?
check "import of a named file that is not data: exit 1" '[ $rc -eq 1 ]'
"$bin" import "$tmp/dir" --db >/dev/null 2>"$tmp/err"; rc=$?
check "import --db without a path: usage error" '[ $rc -eq 2 ] && grep -q "\-\-db needs" "$tmp/err"'
"$bin" export --db "$tmp/a.db" --summary --format csv >"$tmp/sum.csv"
check "summary export: one row per configuration" '[ "$(wc -l <"$tmp/sum.csv")" -eq 5 ]'
"$bin" import --db "$tmp/c.db" "$tmp/sum.csv" >/dev/null 2>"$tmp/err"; rc=$?
check "a summary is not importable" '[ $rc -eq 1 ] && grep -q "not an ecocompute export" "$tmp/err"'

# Ctrl-C: stops after the current run, exit 1, says how to resume; --resume finishes the sweep.
# The signal goes once the first run has been measured (not after a fixed delay: the binary's own
# start, ~0.5 s, and a loaded machine would make that a race with its signal handler or its end).
"$bin" bench --model tiny --gen 32 --prompt-len 16 --warmup 0 --idle 0 --stabilize 0 --reruns 0 \
  --precision fp16,int8 --runs 20 --db "$tmp/int.db" >/dev/null 2>"$tmp/int.err" &
pid=$!
for _ in $(seq 400); do grep -q "run 1/20" "$tmp/int.err" && break; sleep 0.05; done
kill -INT $pid
wait $pid; rc=$?
check "SIGINT: exit 1 (got $rc)" '[ $rc -eq 1 ]'
check "SIGINT: says how to resume" 'grep -q "bench --resume --db $tmp/int.db" "$tmp/int.err"'
"$bin" bench --resume --db "$tmp/int.db" >/dev/null 2>"$tmp/res.err"; rc=$?
check "resume exits 0 (got $rc)" '[ $rc -eq 0 ]'
"$bin" export --db "$tmp/int.db" >"$tmp/int.csv"
check "resume: every run once" 'rows_ok "$tmp/int.csv" 20 2'

# kill -9 at random points: restarting the same command until it finishes loses nothing and
# stores nothing twice. Ten restarts are killed after a random 0.01-0.09 s (the whole sweep
# takes ~1 s in a normal build and far longer under ASan, so kills land mid-sweep); the last
# runs to the end. A reader exports
# while the sweep writes.
kill_args=(--model tiny --gen 48 --prompt-len 16 --warmup 1 --idle 0 --stabilize 0 --reruns 0
  --precision fp16,int8 --batch 1,2 --runs 6 --db "$tmp/k.db")
kills=0 reads=0
for attempt in $(seq 1 11); do
  "$bin" bench "${kill_args[@]}" >/dev/null 2>&1 &
  pid=$!
  if [ "$attempt" -le 10 ]; then
    sleep "0.0$(( (RANDOM % 9) + 1 ))"
    if "$bin" export --db "$tmp/k.db" >/dev/null 2>&1; then reads=$((reads + 1)); fi
    if kill -9 $pid 2>/dev/null; then kills=$((kills + 1)); fi
  fi
  wait $pid 2>/dev/null; rc=$?
done
check "kill -9: killed several times ($kills), then finished (rc $rc)" '[ $kills -ge 2 ] && [ $rc -eq 0 ]'
check "kill -9: concurrent exports worked ($reads)" '[ $reads -ge 1 ]'
"$bin" export --db "$tmp/k.db" >"$tmp/k.csv"
check "kill -9: every run exactly once" 'rows_ok "$tmp/k.csv" 6 4'
check "kill -9: database intact" '[ "$(q "$tmp/k.db" "pragma integrity_check")" = ok ]'
check "kill -9: every run has its two phases" \
  '[ "$(q "$tmp/k.db" "select count(*) from phases")" -eq $(( $(q "$tmp/k.db" "select count(*) from runs") * 2 )) ]'

# Quality gates: an impossible CV bound fails, re-runs are bounded, the failing configuration is
# kept and marked; its final attempt is what export shows.
"$bin" bench "${quick[@]}" --runs 3 --cv-tok 0.0000001 --reruns 2 --format json --db "$tmp/g.db" \
  >"$tmp/g.json" 2>"$tmp/g.err"; rc=$?
check "gate fail: exit 0" '[ $rc -eq 0 ]'
check "gate fail: marked fail" 'py "json.loads(f[0])[0][\"gate\"] == \"fail\"" "$tmp/g.json"'
check "gate fail: 2 re-runs" '[ "$(grep -c "re-run [12] of 2" "$tmp/g.err")" -eq 2 ]'
check "gate fail: 9 runs stored, 3 exported" \
  '[ "$(q "$tmp/g.db" "select count(*) from runs")" = 9 ] && [ "$("$bin" export --db "$tmp/g.db" | wc -l)" -eq 4 ]'

# A CPU sweep does not wait the GPU's thermal stabilization between configurations unless
# asked: the stored sweep says 0 s and each configuration's wait is 0; --stabilize still counts.
"$bin" bench --model tiny --gen 8 --prompt-len 8 --warmup 0 --idle 0 --runs 2 --batch 1,2,4 \
  --db "$tmp/cpu.db" >/dev/null 2>"$tmp/cpu.err"; rc=$?
stored_no_wait="select count(*) from sessions where instr(spec, '\"stabilize_s\":0,') > 0"
check "CPU sweep: no stabilization by default (exit 0, waits of 0 s stored)" \
  '[ $rc -eq 0 ] && [ "$(q "$tmp/cpu.db" "select count(*) from configurations where stabilize_s > 0.5")" = 0 ] && [ "$(q "$tmp/cpu.db" "$stored_no_wait")" = 1 ]'
"$bin" bench --model tiny --gen 8 --prompt-len 8 --warmup 0 --idle 0 --runs 2 --batch 1,2 \
  --stabilize 0.5 --db "$tmp/cpu2.db" >/dev/null 2>&1
check "CPU sweep: --stabilize S is honoured" \
  '[ "$(q "$tmp/cpu2.db" "select count(*) from configurations where stabilize_s >= 0.5")" -ge 1 ]'

# Stabilization auto is bounded by --stabilize-max (power keeps changing).
FAKE_NVML="gpus=1 power=100,0.3:200,0.6:100,0.9:200,1.2:100,1.5:200,1.8:100,2.1:200,2.4:100,2.7:200,3.0:100,3.3:200,3.6:100,3.9:200,4.2:100,4.5:200" \
  "$bin" bench "${quick[@]}" --runs 2 --precision fp16,int8 --stabilize auto --stabilize-max 1 \
  --db "$tmp/st.db" >/dev/null 2>"$tmp/st.err"; rc=$?
check "stabilize auto: exit 0" '[ $rc -eq 0 ]'
check "stabilize auto: bounded" 'grep -q "not settled (bound reached) after 1.0 s" "$tmp/st.err"'

# The power trace is stored with the session.
"$bin" bench "${quick[@]}" --runs 2 --interval 10 --trace "$tmp/t.csv" --db "$tmp/t.db" >/dev/null 2>&1
check "trace stored" '[ "$(q "$tmp/t.db" "select count(*) from traces")" -eq $(($(wc -l <"$tmp/t.csv") - 1)) ]'

# Foreign, damaged and newer files: a clear error and the file untouched.
printf 'name,value\nx,1\n' >"$tmp/notes.csv"
q "$tmp/other.db" "create table t(x); insert into t values (1);"
cp "$tmp/a.db" "$tmp/newer.db"; q "$tmp/newer.db" "pragma user_version = 99"
for f in notes.csv other.db newer.db; do
  sum=$(md5sum <"$tmp/$f")
  "$bin" bench "${quick[@]}" --db "$tmp/$f" >/dev/null 2>"$tmp/err"; rc=$?
  check "$f: bench exits 1" '[ $rc -eq 1 ]'
  check "$f: one-line reason" '[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -Eq "not an SQLite|another program|newer" "$tmp/err"'
  check "$f: untouched" '[ "$(md5sum <"$tmp/$f")" = "$sum" ]'
done
"$bin" import --db "$tmp/b.db" "$tmp/notes.csv" >/dev/null 2>"$tmp/err"; rc=$?
check "import of a foreign CSV: exit 1, named" '[ $rc -eq 1 ] && grep -q "notes.csv: not an ecocompute export" "$tmp/err"'
"$bin" export --db "$tmp/none.db" >/dev/null 2>"$tmp/err"; rc=$?
check "export of a missing db: exit 1" '[ $rc -eq 1 ] && [ ! -e "$tmp/none.db" ]'

# Usage errors: one line, exit 2.
for args in "" "--model tiny --runs 0" "--model tiny --precision fp99" "--model tiny --batch 0" \
  "--model tiny --stabilize soon" "--model tiny --device tpu" "--model tiny --format xml" \
  "--model tiny --cv-tok -1" "--model tiny --gen" "--model ,"; do
  # shellcheck disable=SC2086
  err=$("$bin" bench $args --db "$tmp/u.db" 2>&1 >/dev/null); rc=$?
  check "'bench $args' exits 2 (got $rc)" '[ $rc -eq 2 ]'
  check "'bench $args' one line" '[ "$(printf "%s\n" "$err" | wc -l)" -eq 1 ]'
done
for args in "--batch 0" "--format xml" "-o"; do
  # shellcheck disable=SC2086
  "$bin" export $args --db "$tmp/a.db" >/dev/null 2>&1; rc=$?
  check "'export $args' exits 2" '[ $rc -eq 2 ]'
done
"$bin" import --db "$tmp/a.db" >/dev/null 2>&1; check "import without a file exits 2" '[ $? -eq 2 ]'

[ $fail -eq 0 ] && echo "bench cli: all checks pass"
exit $fail
