#!/usr/bin/env bash
# test_advise_cli.sh — the advise commands end to end on the repository's data/ folder (no GPU, no
# shared data): estimate's arithmetic and scaling (kWh x price = cost, kWh x intensity = CO2, PUE,
# per day/month/year), its citations, unknown names (exit 2 naming the closest), optimize /
# compare / diagnose / model output that parses, and audit's exit codes and SARIF.
set -u
bin=${EC_BINARY:?}
here=$(cd "$(dirname "$0")" && pwd)
export ECOCOMPUTE_DATA_DIR=$here/../../data
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; fi; }
holds() { awk "BEGIN { exit !($1) }"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# q JSON QUANTITY [KEY]: the value (or KEY) of a quantity row of estimate's JSON.
q() { printf "%s" "$1" | jq -r --arg q "$2" --arg k "${3:-value}" '[.[] | select(.quantity == $q)][0][$k]'; }

cfg=(--model Mistral-7B --gpu A800 --precision fp16 --batch 8)
j=$("$bin" advise estimate "${cfg[@]}" --requests 1000000 --tokens-per-request 300 --price 0.1 \
  --intensity 500 --pue 1.5 --format json 2>/dev/null); rc=$?
check "estimate: exit 0" '[ $rc -eq 0 ]'
tokens=$(q "$j" "generated tokens"); e=$(q "$j" "energy per 1000 tokens")
gpu=$(q "$j" "GPU energy"); fac=$(q "$j" "facility energy")
cost=$(q "$j" "electricity cost"); co2=$(q "$j" "CO2")
check "estimate: tokens = requests x tokens/request" 'holds "$tokens == 300000000"'
check "estimate: measured A800 row, J/1k 628" 'holds "$e == 628" && [ "$(q "$j" "energy per 1000 tokens" method)" = measured ]'
check "estimate: kWh = tokens x J/1k / 1000 / 3.6e6" 'holds "($gpu - $tokens * $e / 1000 / 3.6e6)^2 < 1e-9"'
check "estimate: facility kWh = kWh x PUE" 'holds "($fac - 1.5 * $gpu)^2 < 1e-9"'
check "estimate: cost = facility kWh x price" 'holds "($cost - 0.1 * $fac)^2 < 1e-9"'
check "estimate: CO2 = facility kWh x intensity / 1000" 'holds "($co2 - 0.5 * $fac)^2 < 1e-9"'
check "estimate: energy cites its source row" \
  '[[ "$(q "$j" "energy per 1000 tokens" source)" == *a800_metadata.json* ]]'
check "estimate: car equivalent cites EPA" \
  'printf "%s" "$j" | jq -e "any(.[]; .quantity == \"equivalent\" and (.source | test(\"EPA\")))" >/dev/null'

# region: price and intensity from data/regions.csv, with source and year
j=$("$bin" advise estimate "${cfg[@]}" --tokens 1e9 --region us --format json 2>/dev/null)
check "region us: 0.0806 USD/kWh x kWh" 'holds "($(q "$j" "electricity cost") - 0.0806 * $(q "$j" "facility energy"))^2 < 1e-9"'
check "region us: intensity cited with its year" '[[ "$(q "$j" CO2 basis)" == *369.5*2023* ]]'
# no region, no intensity: the world average, said so; no price: no cost row
j=$("$bin" advise estimate "${cfg[@]}" --tokens 1e9 --format json 2>"$tmp/err")
check "no region: world average stated" '[[ "$(q "$j" CO2 basis)" == *"world average"* ]]'
check "no price: no cost row, a note" '[ "$(q "$j" "electricity cost")" = null ] && grep -q "no cost" "$tmp/err"'

# per day / month / year at the same hours per day scale by days
d=$("$bin" advise estimate "${cfg[@]}" --hours-per-day 8 --per day --format json 2>/dev/null)
m=$("$bin" advise estimate "${cfg[@]}" --hours-per-day 8 --per month --format json 2>/dev/null)
y=$("$bin" advise estimate "${cfg[@]}" --hours-per-day 8 --per year --format json 2>/dev/null)
check "hours/day: a day's tokens = 8 h x 3600 x tok/s" \
  'holds "($(q "$d" "generated tokens") - 8 * 3600 * $(q "$d" throughput))^2 < 1e-3"'
check "per year = 12 x per month" 'holds "($(q "$y" "GPU energy") / $(q "$m" "GPU energy") - 12)^2 < 1e-12"'
check "per month = 365.25/12 x per day" \
  'holds "($(q "$m" "GPU energy") / $(q "$d" "GPU energy") - 365.25 / 12)^2 < 1e-12"'
# Chinese characters: the ratio and its source are printed
j=$("$bin" advise estimate "${cfg[@]}" --chars 1000000 --lang zh --format json 2>/dev/null)
check "chars zh: tokens = chars / 0.70" 'holds "($(q "$j" "generated tokens") - 1000000 / 0.7)^2 < 1e-6"'
j2=$("$bin" advise estimate "${cfg[@]}" --chars 100万 --lang zh --format json 2>/dev/null)
check "chars 100万 = 1000000" '[ "$(q "$j2" "generated tokens")" = "$(q "$j" "generated tokens")" ]'
check "chars zh: source cited" '[[ "$(q "$j" "characters per token" source)" == *tokenizer-arena* ]]'
# the table fits 120 columns
"$bin" advise estimate "${cfg[@]}" --requests 1000 --region eu >"$tmp/t" 2>/dev/null
check "estimate table: rows within 120 columns" '[ "$(grep -v "^\\[" "$tmp/t" | awk "{ if (length > m) m = length } END { print m }")" -le 120 ]'

# bad input: exit 2 with the closest names; a question without data: exit 1, no number
err=$("$bin" advise estimate --model Mistral-7B --gpu H10 --precision fp16 --batch 1 --tokens 1 2>&1 >/dev/null); rc=$?
check "unknown GPU: exit 2" '[ $rc -eq 2 ]'
check "unknown GPU: closest names" '[[ "$err" == *"closest known"*H100* ]]'
err=$("$bin" advise estimate "${cfg[@]}" --tokens 1 --region atlantis 2>&1 >/dev/null); rc=$?
check "unknown region: exit 2 naming the closest" '[ $rc -eq 2 ] && [[ "$err" == *"closest known"* ]]'
err=$("$bin" advise estimate --model Mistral-70B-X --gpu A800 --precision fp16 --batch 1 --tokens 1 2>&1 >/dev/null); rc=$?
check "unknown model: exit 2 naming the closest" '[ $rc -eq 2 ] && [[ "$err" == *"closest known"* ]]'
"$bin" advise estimate "${cfg[@]}" >/dev/null 2>&1; check "no workload: exit 2" '[ $? -eq 2 ]'
"$bin" advise estimate "${cfg[@]}" --tokens 5 --requests 5 >/dev/null 2>&1; check "two workloads: exit 2" '[ $? -eq 2 ]'
"$bin" advise estimate "${cfg[@]}" --tokens 5 --pue 0.5 >/dev/null 2>&1; check "PUE < 1: exit 2" '[ $? -eq 2 ]'
out=$("$bin" advise estimate --model Mistral-7B --gpu A800 --precision int8 --batch 8 --stack reference --tokens 1 2>"$tmp/err"); rc=$?
check "unanswerable: exit 1, no number, says why" '[ $rc -eq 1 ] && [ -z "$out" ] && grep -q "no measurement and no model" "$tmp/err"'
"$bin" advise nonsense >/dev/null 2>&1; check "unknown subcommand: exit 2" '[ $? -eq 2 ]'
for s in optimize diagnose compare estimate audit model; do
  "$bin" advise $s --help >"$tmp/h" 2>&1; rc=$?
  check "advise $s --help: exit 0 with examples" '[ $rc -eq 0 ] && grep -q "^examples:" "$tmp/h"'
done
"$bin" advise estimate "${cfg[@]}" --tokens 1 --data-dir "$tmp" >/dev/null 2>&1
check "a folder without data: exit 1" '[ $? -eq 1 ]'

# optimize: the recommendation meets the constraints and never exceeds VRAM
j=$("$bin" advise optimize --model Qwen2.5-14B --gpu T4 --format json 2>/dev/null); rc=$?
check "optimize: exit 0, JSON" '[ $rc -eq 0 ] && printf "%s" "$j" | jq -e "length > 0" >/dev/null'
check "optimize on a 16 GB T4: 14B fp16 marked as not fitting" \
  'printf "%s" "$j" | jq -e "any(.[]; .precision == \"fp16\" and .meets_constraints == \"no: VRAM\")" >/dev/null'
check "optimize: sorted by gross J/1k" \
  'printf "%s" "$j" | jq -e "[.[].j_per_1k_gross] as \$e | \$e == (\$e | sort)" >/dev/null'
"$bin" advise optimize --model Mistral-7B --gpu A800 --current int8-mixed:1 >"$tmp/o" 2>/dev/null
check "optimize: recommends and states the saving" 'grep -q "^Recommended:" "$tmp/o" && grep -q "less energy" "$tmp/o"'
check "optimize: bar chart" 'grep -q "|####" "$tmp/o"'

# compare and diagnose
j=$("$bin" advise compare --config Mistral-7B:A800:fp16:1 --config Mistral-7B:A800:int8-mixed:1 --format json 2>/dev/null)
check "compare: int8-mixed costs more than fp16 (measured)" \
  'holds "$(printf "%s" "$j" | jq ".[1].j_per_1k_gross / .[0].j_per_1k_gross") > 1.5"'
"$bin" advise compare --config Mistral-7B:A800:fp16:1 >/dev/null 2>&1; check "compare one config: exit 2" '[ $? -eq 2 ]'
j=$("$bin" advise diagnose --model Mistral-7B --gpu A800 --precision int8-mixed --batch 1 --format json 2>/dev/null)
check "diagnose: int8-default trap, red" \
  'printf "%s" "$j" | jq -e "any(.[]; .item == \"int8-default\" and .severity == \"red\")" >/dev/null'
check "diagnose: a fix with its saving" 'printf "%s" "$j" | jq -e "any(.[]; .kind == \"fix\" and .value > 0)" >/dev/null'
j=$("$bin" advise diagnose --model Llama-2-7B --gpu H100 --precision fp16 --batch 64 --stack fused --format json 2>/dev/null)
check "diagnose: no int8/nf4 trap on fused fp16 batch 64" \
  '[ "$(printf "%s" "$j" | jq "[.[] | select(.kind == \"trap\" and .severity == \"red\")] | length")" -eq 0 ]'
# diagnose a stored run (--db --run) and a meter JSON output: the measured figures are used
"$bin" import --db "$tmp/u.db" "$here/../../data/reference/ecocompute-sweep-2026-11-26-packed-b1-b8.csv" >/dev/null 2>&1
j=$("$bin" advise diagnose --db "$tmp/u.db" --run 1 --format json 2>/dev/null); rc=$?
check "diagnose --run: exit 0, measured, the run's energy" \
  '[ $rc -eq 0 ] && printf "%s" "$j" | jq -e "any(.[]; .item == \"energy\" and .detail == \"measured\" and .value > 0)" >/dev/null'
"$bin" advise diagnose --db "$tmp/u.db" --run 999999 >/dev/null 2>&1; check "diagnose unknown run: exit 1" '[ $? -eq 1 ]'
"$bin" advise diagnose --run 1 >/dev/null 2>&1; check "diagnose --run without --db: exit 2" '[ $? -eq 2 ]'
printf '{"gpus":[{"name":"NVIDIA H100 80GB HBM3"}],"gpu_j_per_1k_tokens_gross":700,"tokens":25600,"duration_s":100}\n' >"$tmp/m.json"
j=$("$bin" advise diagnose --meter "$tmp/m.json" --model Llama-2-7B --precision fp16 --batch 1 --format json 2>/dev/null)
check "diagnose --meter: its J/1k and tok/s" \
  'printf "%s" "$j" | jq -e "any(.[]; .item == \"energy\" and .value == 700) and any(.[]; .item == \"throughput\" and .value == 256)" >/dev/null'
echo '{"x":1}' >"$tmp/bad.json"
"$bin" advise diagnose --meter "$tmp/bad.json" --model Llama-2-7B --precision fp16 --batch 1 >/dev/null 2>&1
check "diagnose --meter not a meter output: exit 1" '[ $? -eq 1 ]'
j=$("$bin" advise model --format json 2>/dev/null)
check "model: LOO per stack, numbers" \
  'printf "%s" "$j" | jq -e "any(.[]; .stack == \"fused\" and .gpu_family == \"all\" and (.loo_median_abs_err_tok_s_pct | type) == \"number\")" >/dev/null'

# audit: a trap file, a clean file, exit codes, SARIF
cat >"$tmp/bad.py" <<'PY'
"""load_in_8bit=True in a docstring does not count."""
from transformers import AutoModelForCausalLM, BitsAndBytesConfig
cfg = BitsAndBytesConfig(
    load_in_8bit=True,  # the trap
)
model = AutoModelForCausalLM.from_pretrained("mistralai/Mistral-7B-v0.1", quantization_config=cfg)
PY
cat >"$tmp/good.py" <<'PY'
# load_in_8bit=True would be a trap; here it is only a comment
import torch
from transformers import AutoModelForCausalLM
s = "load_in_8bit=True"
model = AutoModelForCausalLM.from_pretrained("m", torch_dtype=torch.bfloat16)
PY
"$bin" advise audit "$tmp/good.py" >"$tmp/a" 2>/dev/null; rc=$?
check "audit clean file: exit 0, no finding" '[ $rc -eq 0 ] && [ ! -s "$tmp/a" ]'
"$bin" advise audit --fail-on red "$tmp/good.py" >/dev/null 2>&1; check "audit clean --fail-on red: exit 0" '[ $? -eq 0 ]'
"$bin" advise audit "$tmp/bad.py" >"$tmp/a" 2>/dev/null; rc=$?
check "audit without --fail-on: exit 0" '[ $rc -eq 0 ]'
check "audit: red at bad.py:4 with a measured impact" 'grep -q "^red .*bad.py:4  int8-default" "$tmp/a" && grep -q "impact: measured" "$tmp/a"'
"$bin" advise audit --fail-on orange "$tmp" >/dev/null 2>&1; check "audit --fail-on orange: exit 1" '[ $? -eq 1 ]'
"$bin" advise audit --fail-on purple "$tmp" >/dev/null 2>&1; check "audit bad severity: exit 2" '[ $? -eq 2 ]'
"$bin" advise audit "$tmp/missing.py" >/dev/null 2>&1; check "audit missing file: exit 1" '[ $? -eq 1 ]'
"$bin" advise audit --format sarif "$tmp" >"$tmp/s" 2>/dev/null
check "SARIF 2.1.0 with rules and located results" \
  'jq -e ".version == \"2.1.0\" and (.runs[0].tool.driver.rules | length) == 9 and (.runs[0].results | length) >= 1 and all(.runs[0].results[]; .ruleId and .level and .message.text and .locations[0].physicalLocation.region.startLine)" "$tmp/s" >/dev/null'

[ $fail -eq 0 ] && echo "test_advise_cli: all checks pass"
exit $fail
