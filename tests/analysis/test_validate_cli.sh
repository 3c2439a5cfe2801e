#!/usr/bin/env bash
# test_validate_cli.sh — `ecocompute validate` end to end on the seeds' published files: it finds
# the inconsistencies listed in docs/analysis.md §6 in the files that have them (the
# dashboard's power column, output lengths not pinned on the A800, mixed energy definitions,
# compare.html's copied rows), passes files that are consistent, passes a clean synthetic dataset
# (exit 0), and keeps the CLI contract (exit 1 on problems, 2 on usage errors, JSON parses).
set -u
bin=${EC_BINARY:?}
seed=${EC_TEST_DATA:?}/seed-data
[ -d "$seed" ] || { echo "FAIL: test data $seed not found"; exit 1; }
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; fi; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# n JSON CHECK [SEVERITY]: how many findings of a check (and severity) a JSON result lists.
n() { printf "%s" "$1" | jq --arg c "$2" --arg s "${3:-}" \
  '[.[] | select(.check == $c and ($s == "" or .severity == $s))] | length'; }

batch=$seed/ecocompute-dynamic-eval/metadata/batch_size_experiment
raw=$batch/a800_mistral7b_pure_int8_batch_size_raw_20260215_131345.csv
summ=$batch/a800_mistral7b_pure_int8_batch_size_summary_20260215_131345.csv
dash=$seed/ecocompute-dynamic-eval/derived/dashboard_BatchSizeAnalysis_BATCH_SIZE_DATA.csv

# §7.1: the raw A800 sweep and its own summary agree — clean.
"$bin" validate "$raw" "$summ" >"$tmp/out" 2>"$tmp/err"
check "raw sweep + its summary: exit 0" '[ $? -eq 0 ]'
check "raw sweep + summary: 77 records counted" 'grep -q "^77 records from 2 files: 0 errors, 0 warnings" "$tmp/err"'

# §7.1: the dashboard's power column (252-314 W) does not match the raw runs (131-312 W).
json=$("$bin" validate "$raw" "$dash" --format json 2>/dev/null); rc=$?
check "dashboard vs raw: exit 1" '[ $rc -eq 1 ]'
check "dashboard power ≠ runs: 6 summary mismatches" '[ "$(n "$json" summary-mismatch error)" -eq 6 ]'
check "dashboard energy ≠ 1000·P/tok_s: 6 identity errors" '[ "$(n "$json" energy-identity error)" -eq 6 ]'
check "mismatch names the power and the runs' mean" \
  'printf "%s" "$json" | jq -e "[.[] | select(.check == \"summary-mismatch\") | .message] | any(test(\"average power \\\\(W\\\\) 252 but the mean of its 10 runs is 131\"))" >/dev/null'
check "BS=64 (314 W vs 312 W) is within tolerance" \
  '[ "$(printf "%s" "$json" | jq "[.[] | select(.where | test(\"batch 64\"))] | length")" -eq 0 ]'

# A800 large models: generation not length-pinned (fp16 200 tokens, int8 512, nf4 241...).
json=$("$bin" validate "$seed/ecocompute-ai/data/a800_results" --format json 2>/dev/null)
check "A800: 3 output-length warnings (one per model)" '[ "$(n "$json" output-length warning)" -eq 3 ]'
check "A800 Mistral lengths listed" \
  'printf "%s" "$json" | jq -e "any(.[]; .message | test(\"fp16 200, int8-mixed 512\"))" >/dev/null'
check "A800 JSON summaries match their raw runs" '[ "$(n "$json" summary-mismatch)" -eq 0 ]'
check "A800 energies follow 1000·P/tok_s" '[ "$(n "$json" energy-identity)" -eq 0 ]'

# §7.4: the dashboard mixes idle-subtracted (RTX 4090D) and gross (RTX 5090, A800) energies.
json=$("$bin" validate "$seed/ecocompute-dynamic-eval/derived/dashboard_constants_measured_rows.csv" \
  --format json 2>/dev/null)
check "dashboard constants: dataset mixes definitions" \
  'printf "%s" "$json" | jq -e "any(.[]; .check == \"mixed-energy-definition\" and .where == \"dataset\" and (.message | test(\"8 gross, 12 net\")))" >/dev/null'
check "dashboard constants: T4 rows' definition unknown" '[ "$(n "$json" mixed-energy-definition info)" -eq 1 ]'

# §7.9: compare.html's Yi-1.5-6B and Mistral-7B rows carry the A800 Qwen2.5-14B energies.
json=$("$bin" validate "$seed/hongping-zh.github.io/compare_html_benchmarkData.json" \
  "$seed/ecocompute-ai/data/a800_results/a800_summary.csv" --format json 2>/dev/null)
check "compare.html: one duplicate-values warning for the three models" \
  '[ "$(n "$json" duplicate-values warning)" -eq 1 ]'
check "compare.html: the warning names each model once" \
  'printf "%s" "$json" | jq -e "[.[] | select(.check == \"duplicate-values\") | .where | test(\"Yi-1.5-6B.*Mistral-7B|Mistral-7B.*Yi-1.5-6B\")] == [true]" >/dev/null'
check "compare.html: Qwen2.5-14B energies named" \
  'printf "%s" "$json" | jq -e "any(.[]; .check == \"duplicate-values\" and (.where | test(\"Qwen2.5-14B\")) and (.message | test(\"fp16 7360\")))" >/dev/null'

# The whole seed-data folder: every kind above, other files skipped with a note.
"$bin" validate "$seed" --format csv >"$tmp/all.csv" 2>"$tmp/err"
check "whole folder: exit 1" '[ $? -eq 1 ]'
check "whole folder: each finding once (no two rows alike)" \
  '[ -z "$(sort "$tmp/all.csv" | uniq -d)" ]'
check "whole folder: one mixed-definition finding per GPU and mix, naming its models" \
  '[ "$(grep -c "mixed-energy-definition,,\"RTX 4090 Qwen2-0.5B, Qwen2-1.5B, Qwen2.5-3B, Qwen2-7B\"" "$tmp/all.csv")" -eq 1 ]'
check "whole folder: non-data files skipped on stderr" 'grep -q "^skipped .*curves.json: not an ecocompute export, and not a recognised" "$tmp/err"'
check "whole folder: csv header" 'head -1 "$tmp/all.csv" | grep -q "^severity,check,row,where,message"'
for c in energy-identity mixed-energy-definition output-length summary-mismatch duplicate-values; do
  check "whole folder finds $c" 'grep -q ",$c," "$tmp/all.csv"'
done

# A clean synthetic dataset in a seed format (quant-energy trials): consistent, exit 0.
qe=$seed/quant-energy/data/rtx4090_paired_energy_quality_2026-08-19.csv
{ head -1 "$qe"
  for i in 1 2 3; do
    e=$(awk -v i=$i 'BEGIN { printf "%.3f", 1000 * 80 / (50 + i) }')
    echo "clean-$i,2026-01-0${i}T00:00:00Z,NVIDIA GeForce RTX 4090,ada,Qwen/Qwen2.5-3B,3.0,NF4,bitsandbytes,1,2048,256,10,2,10,$e,$((3000 + i)),0,$((50 + i)),80,,,,,,,,measured,direct-nvml,1,,,,,,,,True,clean"
  done; } >"$tmp/clean.csv"
"$bin" validate "$tmp/clean.csv" >"$tmp/out" 2>"$tmp/err"
check "clean synthetic dataset: exit 0" '[ $? -eq 0 ]'
check "clean: 6 records, no findings" 'grep -q "^6 records from 1 files: 0 errors, 0 warnings, 0 notes" "$tmp/err"'

# Planted: one trial whose energy does not follow from its power and throughput.
sed 's/^clean-2,\(.*\),NF4,bitsandbytes,1,2048,256,10,2,10,[0-9.]*,/clean-2,\1,NF4,bitsandbytes,1,2048,256,10,2,10,900,/' \
  "$tmp/clean.csv" >"$tmp/planted.csv"
json=$("$bin" validate "$tmp/planted.csv" --format json 2>/dev/null); rc=$?
check "planted energy: exit 1" '[ $rc -eq 1 ]'
check "planted energy: row 2 flagged" \
  'printf "%s" "$json" | jq -e "length == 1 and .[0].check == \"energy-identity\" and .[0].row == 2" >/dev/null'

# Through the results database and an export file: the same findings as from the seed files.
"$bin" import --db "$tmp/r.db" "$raw" "$dash" >/dev/null 2>&1
check "import into a database" '[ $? -eq 0 ]'
json=$("$bin" validate --db "$tmp/r.db" --format json 2>/dev/null); rc=$?
check "--db: exit 1, the 6 dashboard power mismatches" '[ $rc -eq 1 ] && [ "$(n "$json" summary-mismatch error)" -eq 6 ]'
"$bin" export --db "$tmp/r.db" -o "$tmp/x.json" --format json >/dev/null 2>&1
json=$("$bin" validate "$tmp/x.json" --format json 2>/dev/null)
check "export file: the same 6 mismatches" '[ "$(n "$json" summary-mismatch error)" -eq 6 ]'
err=$("$bin" validate --db "$tmp/r.db" "$raw" 2>&1 >/dev/null); rc=$?
check "--db and files: exit 2" '[ $rc -eq 2 ]'
"$bin" validate --db "$tmp/r.db" >/dev/null 2>"$tmp/err"
check "--db: the closing line names the database" 'grep -q "records from $tmp/r.db: " "$tmp/err"'

# CLI contract.
err=$("$bin" validate 2>&1 >/dev/null); rc=$?
check "no file: exit 2" '[ $rc -eq 2 ]'
err=$("$bin" validate --db 2>&1 >/dev/null); rc=$?
check "--db without a path: exit 2, one line" '[ $rc -eq 2 ] && [ "$(printf "%s\n" "$err" | wc -l)" -eq 1 ]'
err=$("$bin" validate "$raw" --kernels fused 2>&1 >/dev/null); rc=$?
check "analyze's filters are not validate's: exit 2" '[ $rc -eq 2 ] && [[ "$err" == *"unknown option '"'"'--kernels'"'"'"* ]]'
err=$("$bin" validate "$raw" --energy-tol x 2>&1 >/dev/null); rc=$?
check "bad tolerance: exit 2, one line" '[ $rc -eq 2 ] && [ "$(printf "%s\n" "$err" | wc -l)" -eq 1 ]'
err=$("$bin" validate "$seed/quant-energy/curves.json" 2>&1 >/dev/null); rc=$?
check "non-data file named: exit 1 with the reason" '[ $rc -eq 1 ] && [[ "$err" == *"not a recognised seed-data file"* ]]'
printf 'a,b\n"x,1\n' >"$tmp/bad.csv"
err=$("$bin" validate "$tmp/bad.csv" 2>&1 >/dev/null); rc=$?
check "malformed CSV: exit 1, line named" '[ $rc -eq 1 ] && [[ "$err" == *"bad.csv:3: malformed CSV"* ]]'
"$bin" validate --help | grep -q "exit status: 0 no errors" || { echo "FAIL: help explains exit status"; fail=1; }
[ $fail -eq 0 ] && echo "validate cli: all checks pass"
exit $fail
