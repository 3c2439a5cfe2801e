#!/usr/bin/env bash
# test_analyze_cli.sh — `ecocompute analyze` end to end: kernel families kept apart on a planted
# dataset (baselines, crossovers, scaling, --kernels); then on seed data: per-configuration stats
# equal to the source's own summaries, Δ vs fp16 with a Welch p-value, ranking, the A800 batch
# scaling law (b ≈ 0.76, R² ≈ 0.99), crossover verdicts, filters, and the output formats.
set -u
bin=${EC_BINARY:?}
seed=${EC_TEST_DATA:?}/seed-data
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; fi; }
holds() { awk "BEGIN { exit !($1) }"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Kernel families. An export with fused and reference kernels of one GPU at three model sizes,
# two runs per configuration (mean exactly as planted). fp16 costs 1000·N J/1k fused and 2000·N
# reference (N = billions of parameters); nf4 is Δ% = 30 − 20·ln N against fused fp16 (crosses
# zero at e^1.5 = 4.48 B) and 40 + 5·ln N against reference fp16 (never crosses). Llama-2-7B fp16
# also runs at batch 8 and 64: fused energy ∝ B^-0.5, reference ∝ B^-0.8. The reference rows
# come first: an analysis that ignored kernels would take them as every nf4 row's baseline,
# fit one crossover over both families, and one scaling law over both.
awk 'BEGIN {
  OFS = ","
  print "source,energy_definition,gpu_name,model,params_b,precision,kernels,device,batch," \
        "prompt_len,gen_len,run_index,tok_s,avg_power_w,j_per_1k_gross"
  split("TinyLlama-1.1B Qwen2.5-3B Llama-2-7B", m, " "); split("1.1 3.086 6.738", p, " ")
  split("reference fused", k, " ")
  for (f = 1; f <= 2; f++) for (i = 1; i <= 3; i++) for (q = 1; q <= 2; q++) {
    n = p[i]; base = (k[f] == "fused" ? 1000 : 2000) * n
    d = k[f] == "fused" ? 30 - 20 * log(n) : 40 + 5 * log(n)
    e = q == 1 ? base : base * (1 + d / 100)
    for (r = 0; r < 2; r++)
      print "ecocompute", "gross", "NVIDIA H100 80GB HBM3", m[i], n, q == 1 ? "fp16" : "nf4", \
            k[f], "cuda:0", 1, 512, 256, r, 100, 400, sprintf("%.9g", e * (r ? 1.01 : 0.99))
  }
  for (f = 1; f <= 2; f++) for (b = 8; b <= 64; b *= 8) for (r = 0; r < 2; r++)
    print "ecocompute", "gross", "NVIDIA H100 80GB HBM3", "Llama-2-7B", 6.738, "fp16", k[f], \
          "cuda:0", b, 512, 256, r, 100, 400, \
          sprintf("%.9g", (k[f] == "fused" ? 6738 * b^-0.5 : 13476 * b^-0.8) * (r ? 1.01 : 0.99))
}' >"$tmp/families.csv"
json=$("$bin" analyze "$tmp/families.csv" --format json 2>/dev/null); rc=$?
check "families: analyze exits 0" '[ $rc -eq 0 ]'
check "families: configs, deltas and ranking name the kernels" \
  'printf "%s" "$json" | jq -e "all(.configs[], .deltas[], .ranking[]; .kernels == \"fused\" or .kernels == \"reference\")" >/dev/null'
check "families: each nf4 row has the fp16 baseline of its own family" \
  'printf "%s" "$json" | jq -e "[.deltas[] | select(.kernels == \"fused\" and .model == \"Llama-2-7B\") | .delta_pct * 10 | round / 10] == [-8.2]" >/dev/null'
check "families: reference nf4 Llama-2-7B +49.5% vs reference fp16" \
  'printf "%s" "$json" | jq -e "[.deltas[] | select(.kernels == \"reference\" and .model == \"Llama-2-7B\") | .delta_pct * 10 | round / 10] == [49.5]" >/dev/null'
check "families: one crossover per family" \
  'printf "%s" "$json" | jq -e "[.crossover[] | .kernels] | sort == [\"fused\", \"reference\"]" >/dev/null'
check "families: fused nf4 crosses zero at e^1.5 = 4.48 B" \
  'printf "%s" "$json" | jq -e "any(.crossover[]; .kernels == \"fused\" and .verdict == \"crossover in range\" and (.crossover_b * 100 | round) == 448)" >/dev/null'
check "families: reference nf4 never crosses" \
  'printf "%s" "$json" | jq -e "any(.crossover[]; .kernels == \"reference\" and .verdict == \"no crossover in range (costs more)\")" >/dev/null'
check "families: one scaling law per family (b = 0.5 fused, 0.8 reference)" \
  'printf "%s" "$json" | jq -e "[.scaling[] | [.kernels, (.b * 1000 | round / 1000)]] | sort == [[\"fused\", 0.5], [\"reference\", 0.8]]" >/dev/null'
json=$("$bin" analyze "$tmp/families.csv" --kernels reference --format json 2>/dev/null); rc=$?
# (jq 1.6 -e exits 0 on empty input: the exit status is checked too)
check "--kernels: only that family shown, its deltas kept" \
  '[ $rc -eq 0 ] && printf "%s" "$json" | jq -e "(.configs | length) == 8 and all(.configs[]; .kernels == \"reference\") and (.deltas | length) == 3 and (.crossover | length) == 1" >/dev/null'
"$bin" import --db "$tmp/families.db" "$tmp/families.csv" >/dev/null 2>&1
csv=$("$bin" analyze --db "$tmp/families.db" --kernels fused --table crossover --format csv 2>/dev/null)
check "--db --kernels fused: one crossover row, 4.48 B" \
  '[ "$(printf "%s\n" "$csv" | wc -l)" -eq 2 ] && [[ "$(printf "%s\n" "$csv" | tail -1)" == *",fused,nf4,"*",4.48,"* ]]'
csv=$("$bin" analyze "$tmp/families.csv" --kernels bitsandbytes --table deltas --format csv 2>/dev/null); rc=$?
check "--kernels of no row: exit 0, header only" '[ $rc -eq 0 ] && [ "$(printf "%s\n" "$csv" | wc -l)" -eq 1 ]'

# --max-meter-gap: the same runs with a meter cross-check, TinyLlama's fused fp16 runs 12 % apart
# (a short window). Left out, its nf4 row loses its baseline: fused keeps 2 deltas of 3, and the
# crossover, fitted on 3 B and 7 B alone, still lies at 4.48 B (the planted Δ is exactly linear).
awk -F, 'BEGIN { OFS = "," }
  NR == 1 { print $0, "disagreement_pct"; next }
  { print $0, ($4 == "TinyLlama-1.1B" && $6 == "fp16" && $7 == "fused") ? -12 : 0.5 }' \
  "$tmp/families.csv" >"$tmp/gap.csv"
json=$("$bin" analyze "$tmp/gap.csv" --kernels fused --format json 2>/dev/null)
check "meter gaps kept without --max-meter-gap: 3 fused deltas" \
  'printf "%s" "$json" | jq -e "(.deltas | length) == 3" >/dev/null'
json=$("$bin" analyze "$tmp/gap.csv" --kernels fused --max-meter-gap 5 --format json 2>/dev/null)
rc=$?
check "--max-meter-gap 5: the 12 % runs and the delta against them left out, crossover 4.48 B" \
  '[ $rc -eq 0 ] && printf "%s" "$json" | jq -e "(.deltas | length) == 2 and all(.deltas[]; .model != \"TinyLlama-1.1B\") and (.configs | length) == 7 and (.crossover[0].crossover_b * 100 | round) == 448" >/dev/null'
json=$("$bin" analyze "$tmp/families.csv" --kernels fused --max-meter-gap 5 --format json 2>/dev/null)
check "--max-meter-gap keeps runs without the cross-check" \
  'printf "%s" "$json" | jq -e "(.deltas | length) == 3" >/dev/null'
err=$("$bin" analyze "$tmp/gap.csv" --max-meter-gap -1 2>&1 >/dev/null); rc=$?
check "--max-meter-gap -1: exit 2, one line naming the flag" \
  '[ $rc -eq 2 ] && [ "$(printf "%s\n" "$err" | wc -l)" -eq 1 ] && [[ "$err" == *--max-meter-gap* ]]'

# An unnamed stack (a seed source that labels only its quantized rows) still serves as baseline.
sed -e 's/,reference,/,,/' "$tmp/families.csv" | grep -v ',fused,' >"$tmp/unnamed.csv"
csv=$("$bin" analyze "$tmp/unnamed.csv" --table deltas --format csv 2>/dev/null)
check "unnamed-kernels baseline: 3 deltas" '[ "$(printf "%s\n" "$csv" | wc -l)" -eq 4 ]'

[ -d "$seed" ] || { echo "FAIL: test data $seed not found"; exit 1; }
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
# The selection options both views share (src/cli/analyze_args.c).
for view in "" --accuracy; do
  err=$("$bin" analyze "$a800" $view --precision fp17 2>&1 >/dev/null); rc=$?
  check "analyze $view --precision fp17: exit 2, one line naming it" \
    '[ $rc -eq 2 ] && [ "$(printf "%s\n" "$err" | wc -l)" -eq 1 ] && [[ "$err" == *fp17* ]]'
  err=$("$bin" analyze "$a800" $view --model 2>&1 >/dev/null); rc=$?
  check "analyze $view --model without a value: exit 2, one line naming it" \
    '[ $rc -eq 2 ] && [ "$(printf "%s\n" "$err" | wc -l)" -eq 1 ] && [[ "$err" == *--model* ]]'
done
# An empty table always says why. A CPU sweep without RAPL has no energy figure at all; with
# RAPL (a fake powercap tree) its CPU energy is shown in J/1k tokens, labelled; beside a GPU
# (the fake NVML) the GPU's, the CPU's and their sum each have their column.
mkdir -p "$tmp/pc/intel-rapl:0"
echo package-0 >"$tmp/pc/intel-rapl:0/name"
echo 1000 >"$tmp/pc/intel-rapl:0/energy_uj"
echo 262143328850 >"$tmp/pc/intel-rapl:0/max_energy_range_uj"
cpu_sweep() { "$bin" bench --model tiny --gen 8 --prompt-len 8 --warmup 0 --idle 0 --runs 2 \
  --precision fp16,int8 --db "$1" >/dev/null 2>&1; }
ECOCOMPUTE_NVML_LIBRARY=/nonexistent ECOCOMPUTE_POWERCAP_ROOT=/nonexistent cpu_sweep "$tmp/none.db"
out=$("$bin" analyze --db "$tmp/none.db" 2>/dev/null)
check "no energy: no bare (none)" '! grep -qx "(none)" <<<"$out"'
check "no energy: each of the 5 tables says why" \
  '[ "$(grep -c "^(none: none of the 4 records has an energy figure" <<<"$out")" -eq 5 ]'
ECOCOMPUTE_NVML_LIBRARY=/nonexistent ECOCOMPUTE_POWERCAP_ROOT=$tmp/pc cpu_sweep "$tmp/cpu.db"
out=$("$bin" analyze --db "$tmp/cpu.db" 2>/dev/null)
check "RAPL only: CPU J/1k tok listed per configuration" \
  '[ "$(grep -Ec "^ +tiny +(fp16|int8) .* 0\.0 " <<<"$out")" -eq 2 ] && grep -q "CPU J/1k tok" <<<"$out"'
check "RAPL only: the GPU tables say they compare GPU energy" \
  '[ "$(grep -c "^(none: the 2 configurations have CPU energy only" <<<"$out")" -eq 4 ]'
ECOCOMPUTE_NVML_LIBRARY=${FAKE_NVML_LIBRARY:?} FAKE_NVML="gpus=1 power=150" \
  ECOCOMPUTE_POWERCAP_ROOT=$tmp/pc cpu_sweep "$tmp/both.db"
out=$("$bin" analyze --db "$tmp/both.db" --table configs 2>/dev/null)
check "GPU + RAPL: GPU, CPU and summed J/1k each labelled" \
  'grep -q "GPU J/1k tok  CPU J/1k tok  GPU+CPU J/1k" <<<"$out"'
"$bin" analyze --db "$tmp/both.db" --table configs --format csv >"$tmp/both.csv" 2>/dev/null
check "GPU + RAPL: csv keeps the CPU and summed figures" \
  'head -1 "$tmp/both.csv" | grep -q "energy_j_per_1k_mean,cpu_j_per_1k_mean,gpu_cpu_j_per_1k_mean"'
out=$("$bin" analyze "$seed/ecocompute-ai/data/a800_results" --table scaling 2>/dev/null)
check "one batch size: the scaling table says it needs three" \
  'grep -q "^(none: no configuration was measured at 3 or more batch sizes (most: 1)" <<<"$out"'

# --latest: one configuration measured by two commits (old: 1000 J/1k, new: 800) is the new
# commit's mean, not the pool of both programs; report --latest shows the same runs.
{
  echo "source,energy_definition,gpu_name,model,params_b,precision,kernels,device,batch,prompt_len,gen_len,run_index,tok_s,avg_power_w,j_per_1k_gross,git_commit,timestamp_utc"
  for r in 0 1; do
    echo "ecocompute,gross,NVIDIA H200,Llama-2-7B,6.738,fp16,fused,cuda:0,1,512,256,$r,250,600,1000,old,2026-11-01T10:0$r:00Z"
    echo "ecocompute,gross,NVIDIA H200,Llama-2-7B,6.738,fp16,fused,cuda:0,1,512,256,$r,260,600,800,new,2026-11-02T10:0$r:00Z"
  done
} >"$tmp/two-commits.csv"
mean_n() { python3 -c 'import csv,sys; r=list(csv.DictReader(sys.stdin)); print(len(r), r[0]["n"], r[0]["energy_j_per_1k_mean"])'; }
check "without --latest: both commits pooled (n 4, mean 900)" \
  '[ "$("$bin" analyze "$tmp/two-commits.csv" --table configs --format csv 2>/dev/null | mean_n)" = "1 4 900.0" ]'
check "--latest: the newest commit's runs (n 2, mean 800)" \
  '[ "$("$bin" analyze "$tmp/two-commits.csv" --latest --table configs --format csv 2>/dev/null | mean_n)" = "1 2 800.0" ]'
err=$("$bin" analyze "$tmp/two-commits.csv" --latest --table configs 2>&1 >/dev/null)
check "--latest says how many runs it left out" '[[ "$err" == *"--latest left out 2 runs of older commits"* ]]'
"$bin" report "$tmp/two-commits.csv" --latest --format md -o "$tmp/latest.md" 2>/dev/null
check "report --latest: two runs, the new commit's" \
  'grep -q "^Coverage: 2 runs" "$tmp/latest.md" && ! grep -q "| old |" "$tmp/latest.md"'

[ $fail -eq 0 ] && echo "analyze cli: all checks pass"
exit $fail
