#!/usr/bin/env bash
# test_accuracy_cli.sh — accuracy stored beside energy, end to end on the real 260K model and the
# WikiText-2 excerpt: `eval --db` stores one row per precision with its text's SHA-256, window,
# stride and tokens scored; a second evaluation adds rows (append-only); `export --accuracy` →
# `import` → `export --accuracy` is byte-identical in CSV and JSON and a re-import adds nothing;
# `analyze --accuracy` joins the rows to energy runs of the same model (J/1k and Δ perplexity
# side by side) and says why when there are no accuracy rows; a file that is not a results
# database is never written; bench/llama2c_to_hf.py's copy of the model is the same model.
set -u
. "$(dirname "$0")/../engine/cli_test_lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
model="$models/stories260K.bin"
head -n 4 "$models/wiki.test.excerpt.raw" >"$tmp/wiki.txt"
ev() { "$bin" eval --model "$model" --tokenizer "$models/tok512.bin" --ppl "$tmp/wiki.txt" \
  --tokens 8 --threads 1 --window 128 --stride 64 "$@"; }

out=$(ev --precision fp16,int8,nf4 --db "$tmp/a.db" --format json 2>"$tmp/err")
check "eval --db exits 0" '[ $? -eq 0 ]'
check "eval says it stored 3 rows" 'grep -q "3 accuracy rows stored in $tmp/a.db" "$tmp/err"'
check "the output states window and stride" \
  '[ "$(field "$out" fp16 window)" = 128 ] && [ "$(field "$out" fp16 stride)" = 64 ]'
rows=$("$bin" export --db "$tmp/a.db" --accuracy --format json)
row() { printf "%s" "$rows" | jq -r --arg p "$1" "[.rows[] | select(.precision == \$p)][0].$2"; }
check "3 rows stored" '[ "$(printf "%s" "$rows" | jq ".rows | length")" = 3 ]'
sha=$(sha256sum "$tmp/wiki.txt" | cut -d" " -f1)
check "the text's name and SHA-256 are stored" \
  '[ "$(row fp16 dataset)" = wiki.txt ] && [ "$(row fp16 dataset_sha256)" = "$sha" ]'
check "the tokenizer and its SHA-256" \
  '[ "$(row nf4 tokenizer)" = tok512.bin ] && [ "$(row nf4 tokenizer_sha256)" = "$(sha256sum "$models/tok512.bin" | cut -d" " -f1)" ]'
check "model as given, kernels, device, window, stride" \
  '[ "$(row int8 model)" = "$model" ] && [ "$(row int8 kernels)" = fused ] && [ "$(row int8 device)" = cpu ] && [ "$(row int8 window)" = 128 ] && [ "$(row int8 stride)" = 64 ]'
check "the stored perplexity and tokens scored are the printed ones" \
  'holds "$(row int8 perplexity) == $(field "$out" int8 perplexity) || ($(row int8 perplexity) - $(field "$out" int8 perplexity))^2 < 1e-8" && [ "$(row int8 ppl_tokens)" = "$(field "$out" int8 ppl_tokens)" ]'
check "KL, top-1, version and commit stored" \
  'holds "$(row nf4 kl_vs_f32) > 0 && $(row nf4 top1_agreement_pct) <= 100" && [ -n "$(row nf4 git_commit)" ] && [ -n "$(row nf4 ecocompute_version)" ]'

ev --precision fp16 --db "$tmp/a.db" >/dev/null 2>&1
check "a second evaluation adds a row" \
  '[ "$("$bin" export --db "$tmp/a.db" --accuracy --format json | jq ".rows | length")" = 4 ]'

for fmt in csv json; do
  "$bin" export --db "$tmp/a.db" --accuracy --format $fmt -o "$tmp/one.$fmt" 2>/dev/null
  "$bin" import --db "$tmp/$fmt.db" "$tmp/one.$fmt" >/dev/null
  again=$("$bin" import --db "$tmp/$fmt.db" --format json "$tmp/one.$fmt" | jq ".[0].added")
  "$bin" export --db "$tmp/$fmt.db" --accuracy --format $fmt -o "$tmp/two.$fmt" 2>/dev/null
  check "$fmt: export → import → export is identical" 'cmp -s "$tmp/one.$fmt" "$tmp/two.$fmt"'
  check "$fmt: a second import adds nothing" '[ "$again" = 0 ]'
done

# Energy runs of the same model (as bench would store them, here as an export): analyze joins.
{
  printf 'source,energy_definition,gpu_name,model,precision,kernels,device,batch,prompt_len,gen_len,run_index,tok_s,j_per_1k_gross\r\n'
  for p in fp16:100:110 int8:150:160 nf4:90:96; do
    IFS=: read -r prec a b <<<"$p"
    printf 'ecocompute,gross,Test GPU,%s,%s,fused,cuda:0,1,16,64,0,50,%s\r\n' "$model" "$prec" "$a"
    printf 'ecocompute,gross,Test GPU,%s,%s,fused,cuda:0,1,16,64,1,50,%s\r\n' "$model" "$prec" "$b"
  done
} >"$tmp/runs.csv"
"$bin" import --db "$tmp/a.db" "$tmp/runs.csv" >/dev/null
view=$("$bin" analyze --accuracy --db "$tmp/a.db" --format json 2>/dev/null)
v() { printf "%s" "$view" | jq -r --arg p "$1" "[.[] | select(.precision == \$p)][0].$2"; }
check "analyze --accuracy: one row per precision with energy" \
  '[ "$(printf "%s" "$view" | jq length)" = 3 ] && [ "$(v int8 gpu)" = "Test GPU" ]'
check "J/1k tokens is the runs' mean and ΔE is vs fp16" \
  'holds "$(v fp16 energy_j_per_1k) == 105 && $(v int8 energy_j_per_1k) == 155" && holds "($(v int8 delta_energy_pct) - 47.619)^2 < 1e-4"'
check "Δ perplexity vs fp16 beside it" \
  'holds "($(v nf4 delta_ppl_pct) - 100 * ($(v nf4 perplexity) / $(v fp16 perplexity) - 1))^2 < 1e-6" && holds "$(v nf4 delta_ppl_pct) > 0"'
check "the latest of the repeated fp16 evaluations, counted" '[ "$(v fp16 evaluations)" = 2 ]'
table=$("$bin" analyze --accuracy --db "$tmp/a.db" 2>/dev/null)
check "the table names the text, window and stride" \
  'printf "%s" "$table" | grep -q "perplexity: wiki.txt (sha256 ${sha:0:12}…), window 128, stride 64, on cpu"'
check "the table fits 120 columns" '[ "$(printf "%s\n" "$table" | awk "{ print length }" | sort -n | tail -1)" -le 120 ]'

"$bin" import --db "$tmp/energy.db" "$tmp/runs.csv" >/dev/null
none=$("$bin" analyze --accuracy --db "$tmp/energy.db" 2>/dev/null); rc=$?
check "no accuracy rows: exit 0 and say why" \
  '[ $rc -eq 0 ] && printf "%s" "$none" | grep -q "(none: .*holds no accuracy rows: .ecocompute eval --ppl FILE --db"'

printf 'not a database\n' >"$tmp/notes.txt"
ev --precision fp16 --db "$tmp/notes.txt" >/dev/null 2>&1; rc=$?
check "eval --db refuses a file that is not a results database, untouched" \
  '[ $rc -eq 1 ] && [ "$(cat "$tmp/notes.txt")" = "not a database" ]'
# bench/ppl-check.sh compares with transformers through a Hugging Face copy of the model: the copy
# must be the same model (same perplexity from ecocompute's HF loader as from the .bin).
mkdir -p "$tmp/hf"
python3 "$(dirname "$0")/../../bench/llama2c_to_hf.py" "$model" "$tmp/hf"
bin_ppl=$(ev --precision f32 --format json | jq -r ".[0].perplexity")
hf_ppl=$("$bin" eval --model "$tmp/hf" --tokenizer "$models/tok512.bin" --ppl "$tmp/wiki.txt" \
  --tokens 8 --threads 1 --window 128 --stride 64 --precision f32 --format json | jq -r ".[0].perplexity")
check "llama2c_to_hf.py: the HF copy has the .bin's perplexity ($bin_ppl vs $hf_ppl)" \
  'holds "($hf_ppl / $bin_ppl - 1)^2 < 1e-10"'

usage_error eval "--stride above --window" --model "$model" --tokenizer "$models/tok512.bin" \
  --ppl "$tmp/wiki.txt" --window 64 --stride 65
usage_error eval "--window without --ppl" --model tiny --window 64
usage_error export "--accuracy with --summary" --accuracy --summary
finish "accuracy cli"
