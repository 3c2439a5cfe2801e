#!/usr/bin/env bash
# test_table_width_cli.sh — every command's default table fits a 120-column terminal on the test
# data (a CPU sweep of stories260K metered with the fake NVML, and the seed data), --wide shows
# the columns a narrow table leaves out, and json/csv keep every field.
set -u
bin=${EC_BINARY:?}
data=${EC_TEST_DATA:?}
seed=$data/seed-data
model=$data/models/stories260K.bin
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; fi; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export ECOCOMPUTE_NVML_LIBRARY=${FAKE_NVML_LIBRARY:?} FAKE_NVML="gpus=1 power=150" \
  XDG_DATA_HOME=$tmp/xdg

# The widest line of a file, in characters (not bytes: labels hold ±, Δ, …).
width() { python3 -c 'import sys; print(max((len(l.rstrip("\n")) for l in open(sys.argv[1], encoding="utf-8")), default=0))' "$1"; }
n=0
fits() { # fits NAME ARGS...: the command's stdout is at most 120 characters wide
  local name=$1; shift
  n=$((n + 1))
  "$bin" "$@" >"$tmp/out$n" 2>"$tmp/err$n"
  local w; w=$(width "$tmp/out$n")
  check "$name: default table fits 120 columns (widest line $w)" '[ "$w" -le 120 ]'
  check "$name: printed something" '[ -s "$tmp/out$n" ]'
}

db=$tmp/r.db
sweep=(--model "$model" --precision f32,fp16 --batch 1,2 --gen 8 --prompt-len 8 --runs 2
       --warmup 0 --idle 0 --stabilize 0 --min-window 0 --db "$db")
fits "bench" bench "${sweep[@]}"
fits "bench --resume" bench --resume --db "$db"
fits "export table" export --db "$db" --format table
fits "export --summary table" export --db "$db" --summary --format table
"$bin" export --db "$db" -o "$tmp/runs.csv" 2>/dev/null
fits "import" import --db "$tmp/i.db" "$tmp/runs.csv" "$seed/ecocompute-ai"
fits "analyze --db" analyze --db "$db"
for t in configs deltas ranking scaling crossover; do
  fits "analyze seed-data --table $t" analyze "$seed" --table "$t"
done
fits "analyze seed-data" analyze "$seed"
fits "validate seed-data" validate "$seed"
fits "compare" compare "$db" "$db"
fits "compare seed-data" compare "$seed/ecocompute-ai" "$seed/ecocompute-ai"
fits "gpus" gpus
fits "models" models
fits "version" version
fits "meter" meter -- true
fits "run" run --model "$model" --gen 8
fits "eval" eval --model "$model" --tokens 16
fits "tokenize" tokenize --tokenizer "$data/models/tokenizer.bin" "Once upon a time"
fits "advise optimize" advise optimize --model Mistral-7B --gpu A800
fits "advise diagnose" advise diagnose --model Mistral-7B --gpu A800 --precision nf4 --batch 1
fits "advise compare" advise compare --config Mistral-7B:A800:fp16:1 --config Mistral-7B:A800:int8-mixed:1
fits "advise estimate" advise estimate --model Llama-2-7B --gpu H100 --precision fp16 --batch 8 \
  --requests 1000000 --tokens-per-request 300 --per month --region us
fits "advise model" advise model
printf 'from transformers import BitsAndBytesConfig\ncfg = BitsAndBytesConfig(load_in_8bit=True)\n' \
  >"$tmp/bad.py"
fits "advise audit" advise audit "$tmp/bad.py"

# The summary's narrow table names what it left out; --wide (any position) shows those columns;
# json and csv keep every field whatever the width.
"$bin" export --db "$db" --summary --format table >"$tmp/narrow" 2>"$tmp/narrow.err"
"$bin" export --wide --db "$db" --summary --format table >"$tmp/wide" 2>"$tmp/wide.err"
check "narrow summary: the columns left out are named on stderr" \
  'grep -q "columns left out to fit 120 characters: .*Kernels.*--wide shows every column" "$tmp/narrow.err"'
check "narrow summary: Kernels left out" '! head -1 "$tmp/narrow" | grep -q Kernels'
check "--wide summary: every column, no note" \
  'head -1 "$tmp/wide" | grep -q Kernels && [ "$(width "$tmp/wide")" -gt 120 ] && [ ! -s "$tmp/wide.err" ]'
"$bin" export --db "$db" --summary --format csv >"$tmp/sum.csv"
check "csv summary keeps every field" \
  'head -1 "$tmp/sum.csv" | grep -q "kernels,device,tp,gpu_name,batch,prompt_len,gen_len,runs"'
"$bin" export --db "$db" --summary --format json >"$tmp/sum.json"
check "json summary keeps every field" \
  'python3 -c "import json,sys; r=json.load(open(sys.argv[1]))[0]; sys.exit(not {\"kernels\",\"prompt_len\",\"avg_power_w_cv_pct\"} <= set(r))" "$tmp/sum.json"'
# A long finding continues on the next lines of its row instead of being cut.
"$bin" validate "$seed/ecocompute-dynamic-eval" >"$tmp/v" 2>/dev/null
check "validate: a long finding wraps, its end kept" 'grep -q "were subtracted)" "$tmp/v"'
# --wide after `--` belongs to the metered command.
"$bin" meter --format json -- sh -c 'echo "$1" >"$2"' sh --wide "$tmp/arg" >/dev/null 2>&1
check "meter: --wide after -- is the command's argument" '[ "$(cat "$tmp/arg")" = --wide ]'

[ $fail -eq 0 ] && echo "table widths: all $n outputs fit 120 columns"
exit $fail
