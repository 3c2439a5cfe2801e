#!/usr/bin/env bash
# test_tp_cli.sh — tensor parallelism from the command line, on CPU ranks (how CI checks the
# sharding without GPUs) and the fake NVML with two GPUs: `run --device cpu --tp 2` prints the
# tokens and text of one device for f32; `bench --tp 1,2` stores two configurations with their
# world size, resumes both, charges each the energy of the metered GPUs and keeps each GPU's
# share; `export` shows the tp column; bad device lists and --tp values are usage errors.
set -u
bin=${EC_BINARY:?}
fake=${FAKE_NVML_LIBRARY:?}
models=${EC_TEST_DATA:?}/models
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; fi; }
usage_error() {
  local cmd=$1 what=$2; shift 2
  err=$("$bin" "$cmd" "$@" 2>&1 >/dev/null); rc=$?
  check "$cmd $what exits 2" '[ $rc -eq 2 ]'
  check "$cmd $what: one line" '[ "$(printf "%s\n" "$err" | wc -l)" -eq 1 ]'
}

# ---- run: two CPU ranks generate what one device does (f32: the same sums, split) ----
tail -n +2 "$models/stories260K_expected_greedy.txt" >"$tmp/expected"
"$bin" run --model "$models/stories260K.bin" --tokenizer "$models/tok512.bin" --device cpu \
  --tp 2 --gen 256 --precision f32 >"$tmp/out" 2>"$tmp/err"
check "run --tp 2 exits 0" '[ $? -eq 0 ]'
check "run --tp 2 prints llama2.c's greedy text byte for byte" 'cmp -s "$tmp/out" "$tmp/expected"'
one=$("$bin" run --model tiny --precision f32 --device cpu --batch 2 --prompt-len 8 --gen 12 --format json)
two=$("$bin" run --model tiny --precision f32 --device cpu --tp 2 --batch 2 --prompt-len 8 --gen 12 --format json)
ids() { printf "%s" "$1" | jq -r ".[0].first_token_ids"; }
check "tiny f32: tp 2 tokens = tp 1 tokens" '[ -n "$(ids "$one")" ] && [ "$(ids "$one")" = "$(ids "$two")" ]'
check "run json names the world size" \
  '[ "$(printf "%s" "$two" | jq -r ".[0].tp")" = 2 ] && [ "$(printf "%s" "$one" | jq -r ".[0].tp")" = 1 ]'
err=$("$bin" run --model tiny --device cpu --tp 3 --gen 2 2>&1 >/dev/null); rc=$?
check "a model that does not split over 3 exits 1" '[ $rc -eq 1 ]'
check "... saying why, in one line" \
  '[[ "$err" == *"cannot be split over 3"* ]] && [ "$(printf "%s\n" "$err" | wc -l)" -eq 1 ]'

# ---- bench: the world size is a sweep dimension and part of a configuration ----
export ECOCOMPUTE_NVML_LIBRARY=$fake FAKE_NVML="gpus=2 power=100" XDG_DATA_HOME=$tmp/xdg
sweep=(--model tiny --precision f32 --tp 1,2 --device cpu --gen 4 --prompt-len 4 --runs 2
       --warmup 0 --idle 0 --stabilize 0 --reruns 0 --cv-tok 1000 --cv-power 1000 --threads 1
       --db "$tmp/tp.db")
"$bin" bench "${sweep[@]}" --format csv >"$tmp/summary.csv" 2>"$tmp/err"
check "bench --tp 1,2 exits 0" '[ $? -eq 0 ]'
check "bench: 2 configurations" 'grep -q "2 configurations finished (0 measured before)" "$tmp/err"'
check "summary: one row per world size" \
  'python3 -c "import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); sys.exit(sorted(x[\"tp\"] for x in r) != [\"1\",\"2\"])" "$tmp/summary.csv"'
"$bin" bench "${sweep[@]}" >/dev/null 2>"$tmp/err2"
check "the same sweep again finds both finished" \
  'grep -q "2 configurations finished (2 measured before), 0 runs" "$tmp/err2"'
"$bin" export --db "$tmp/tp.db" --format csv -o "$tmp/runs.csv"
check "export: tp column, 2 runs at each world size, interconnect recorded" \
  'python3 - "$tmp/runs.csv" <<PY
import csv, sys, collections
r = list(csv.DictReader(open(sys.argv[1])))
n = collections.Counter(x["tp"] for x in r)
ok = n == {"1": 2, "2": 2}
ok &= all(x["interconnect"] == ("none" if x["tp"] == "1" else "unknown") for x in r)
sys.exit(not ok)
PY'
check "each metered GPU's energy, summing to the phase's" \
  'python3 - "$tmp/runs.csv" <<PY
import csv, sys
for x in csv.DictReader(open(sys.argv[1])):
    for ph in ("prefill", "decode"):
        each = [float(v) for v in x[ph + "_gpu_energy_per_gpu_j"].split(";")]
        total = float(x[ph + "_gpu_energy_j"])
        if len(each) != 2 or abs(sum(each) - total) > 1e-9 * max(1, total):
            sys.exit(1)
PY'
"$bin" export --db "$tmp/tp.db" --format table >"$tmp/table.txt"
check "the export table shows TP" 'head -1 "$tmp/table.txt" | grep -q " TP "'
"$bin" analyze --db "$tmp/tp.db" --table configs --format csv >"$tmp/configs.csv"
check "analyze: one configuration per world size, named in its tp column" \
  'python3 - "$tmp/configs.csv" <<PY
import csv, sys
sys.exit(sorted(x["tp"] for x in csv.DictReader(open(sys.argv[1]))) != ["1", "2"])
PY'
"$bin" analyze --db "$tmp/tp.db" --table configs >"$tmp/configs.txt"
check "analyze's narrow table keeps TP when a model is split" 'sed -n 2p "$tmp/configs.txt" | grep -q " TP "'
"$bin" report --db "$tmp/tp.db" --format md -o "$tmp/report.md" 2>/dev/null
check "report: the split configuration's view names its GPUs and world size" \
  'grep -q "^### Fake H100 0 ×2 (tensor parallel) · tiny" "$tmp/report.md"'
check "report: the runs table has a TP column with both world sizes" \
  'grep -q "^| Run id | GPU | Model | Precision | Kernels | Batch | TP |" "$tmp/report.md" &&
   grep -q "| tiny | f32 | fused | 1 | 2 |" "$tmp/report.md"'
"$bin" analyze --db "$tmp/tp.db" --table scaling --format csv >"$tmp/scaling.csv"
check "analyze's scaling table has a tp column" 'head -1 "$tmp/scaling.csv" | grep -q "tp"'
"$bin" import --db "$tmp/copy.db" "$tmp/runs.csv" 2>/dev/null
"$bin" export --db "$tmp/copy.db" --format csv -o "$tmp/again.csv"
check "export -> import -> export keeps tp and the GPUs' energies" \
  'python3 - "$tmp/runs.csv" "$tmp/again.csv" <<PY
import csv, sys
a, b = ([{k: v for k, v in x.items() if k != "run_id"} for x in csv.DictReader(open(p))] for p in sys.argv[1:])
sys.exit(a != b)
PY'
"$bin" import --db "$tmp/copy.db" "$tmp/runs.csv" 2>"$tmp/err3"
"$bin" export --db "$tmp/copy.db" --format csv -o "$tmp/again2.csv"
check "a second import adds nothing" '[ "$(wc -l <"$tmp/again2.csv")" -eq 5 ]'

# ---- usage errors: one line, exit 2 ----
usage_error run "--tp 0" --model tiny --tp 0
usage_error run "--tp 9" --model tiny --tp 9
usage_error run "--device cuda:0,0" --model tiny --device cuda:0,0
usage_error run "--device cuda:0,x" --model tiny --device cuda:0,x
usage_error run "--device cpu,1" --model tiny --device cpu,1
usage_error run "a list and another --tp" --model tiny --device cuda:0,1 --tp 3
usage_error eval "a list and another --tp" --model tiny --device cuda:0,1 --tp 4
usage_error bench "--tp x" --model tiny --tp x
usage_error bench "--tp 1,9" --model tiny --tp 1,9
usage_error bench "a list swept over other world sizes" --model tiny --device cuda:0,1 --tp 1,2
usage_error bench "--device cuda:1,1" --model tiny --device cuda:1,1

[ $fail -eq 0 ] && echo "test_tp_cli: all checks pass"
exit $fail
