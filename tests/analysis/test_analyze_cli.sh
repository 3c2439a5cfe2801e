#!/usr/bin/env bash
# test_analyze_cli.sh — `ecocompute analyze` end to end on seed data: per-configuration stats
# equal to the source's own summaries, Δ vs fp16 with a Welch p-value, ranking, the A800 batch
# scaling law (b ≈ 0.76, R² ≈ 0.99), crossover verdicts, filters, and the output formats.
set -u
bin=${EC_BINARY:?}
seed=${EC_SHARED_DIR:?}/seed-data
[ -d "$seed" ] || { echo "skipping: $seed not found"; exit 77; }
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; fi; }
holds() { awk "BEGIN { exit !($1) }"; }
a800=$seed/ecocompute-ai/data/a800_results

json=$("$bin" analyze "$a800" --format json 2>/dev/null); rc=$?
check "A800 analyze exits 0" '[ $rc -eq 0 ]'
check "json has the five tables" \
  'printf "%s" "$json" | jq -e "keys == [\"configs\",\"crossover\",\"deltas\",\"ranking\",\"scaling\"]" >/dev/null'
# Runs supersede the summary rows of the same configuration: 15 configurations of 10 runs.
check "15 configurations, each of 10 runs" \
  'printf "%s" "$json" | jq -e "(.configs | length) == 15 and all(.configs[]; .n == 10 and .kind == \"runs\")" >/dev/null'
mean=$(printf "%s" "$json" | jq '.configs[] | select(.model == "Mistral-7B-v0.1" and .precision == "fp16") | .energy_j_per_1k_mean')
check "Mistral fp16 mean = the source's 4402.43 J/1k" 'holds "$mean > 4402.42 && $mean < 4402.44"'
d=$(printf "%s" "$json" | jq -c '.deltas[] | select(.model == "Mistral-7B-v0.1" and .precision == "int8-mixed") | [.delta_pct, .welch_p, .delta_pct_ci95_lo, .delta_pct_ci95_hi]')
check "Mistral int8-mixed Δ ≈ +130.8% with a tiny p" \
  'holds "$(printf "%s" "$d" | jq ".[0]") > 130.7 && $(printf "%s" "$d" | jq ".[0]") < 130.9 && $(printf "%s" "$d" | jq ".[1]") < 1e-20"'
check "Δ CI brackets Δ" 'printf "%s" "$d" | jq -e ".[2] < .[0] and .[0] < .[3]" >/dev/null'
check "ranking: nf4 is Mistral's lowest energy" \
  'printf "%s" "$json" | jq -e "[.ranking[] | select(.model == \"Mistral-7B-v0.1\")][0] | .precision == \"nf4\" and .rank == 1" >/dev/null'
check "crossover: A800 nf4 crosses zero inside 7-15 B" \
  'printf "%s" "$json" | jq -e "any(.crossover[]; .precision == \"nf4\" and .verdict == \"crossover in range\" and .crossover_b > 7 and .crossover_b < 15)" >/dev/null'
check "crossover: int8-mixed never does" \
  'printf "%s" "$json" | jq -e "any(.crossover[]; .precision == \"int8-mixed\" and (.verdict | startswith(\"no crossover in range\")) and .crossover_b == null)" >/dev/null'
check "roofline share of fp16 is below 100%" \
  'printf "%s" "$json" | jq -e "all(.configs[]; .roofline_datasheet_pct < 100)" >/dev/null'

# Batch scaling on the raw A800 sweep: energy/1k ≈ a·B^-b over B = 1..64.
raw=$seed/ecocompute-dynamic-eval/metadata/batch_size_experiment/a800_mistral7b_pure_int8_batch_size_raw_20260215_131345.csv
csv=$("$bin" analyze "$raw" --table scaling --format csv 2>/dev/null)
check "scaling csv: header + 1 row" '[ "$(printf "%s\n" "$csv" | wc -l)" -eq 2 ]'
row=$(printf "%s\n" "$csv" | tail -1)
b=$(printf "%s" "$row" | awk -F, '{print $(NF-3)}'); r2=$(printf "%s" "$row" | awk -F, '{print $NF}')
check "scaling exponent b ≈ 0.76" 'holds "$b > 0.74 && $b < 0.78"'
check "scaling R² ≈ 0.99" 'holds "$r2 > 0.98 && $r2 < 1"'

# Filters: --precision keeps the baseline for the deltas but shows only what was asked.
json=$("$bin" analyze "$a800" --precision nf4 --model yi --format json 2>/dev/null)
check "filters: one configuration shown" '[ "$(printf "%s" "$json" | jq ".configs | length")" -eq 1 ]'
check "filters: its delta vs fp16 is there" \
  'printf "%s" "$json" | jq -e "(.deltas | length) == 1 and .deltas[0].model == \"Yi-1.5-9B\"" >/dev/null'

# The same dataset through the results database gives the same deltas.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" import --db "$tmp/r.db" "$a800"/energy_*.json >/dev/null 2>&1
a=$("$bin" analyze "$a800" --table deltas --format csv 2>/dev/null | cut -d, -f2- | sort)
b=$("$bin" analyze --db "$tmp/r.db" --table deltas --format csv 2>/dev/null | cut -d, -f2- | sort)
check "--db: deltas equal those from the files" '[ -n "$a" ] && [ "$a" = "$b" ]'

out=$("$bin" analyze "$a800" 2>/dev/null)
check "table output names units" '[[ "$out" == *"J/1k tok"* && "$out" == *"Energy def"* && "$out" == *"p (Welch)"* ]]'
err=$("$bin" analyze "$a800" --format csv 2>&1 >/dev/null); rc=$?
check "csv without --table: exit 2, one line" '[ $rc -eq 2 ] && [ "$(printf "%s\n" "$err" | wc -l)" -eq 1 ]'
err=$("$bin" analyze "$a800" --baseline fp17 2>&1 >/dev/null); rc=$?
check "bad baseline: exit 2" '[ $rc -eq 2 ]'
err=$("$bin" analyze 2>&1 >/dev/null); rc=$?
check "no input: exit 2" '[ $rc -eq 2 ]'
[ $fail -eq 0 ] && echo "analyze cli: all checks pass"
exit $fail
