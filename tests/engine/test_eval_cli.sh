#!/usr/bin/env bash
# test_eval_cli.sh — `ecocompute eval` end to end. On the synthetic `small` model with injected
# outlier features: fp16 is nearly exact, LLM.int8 (int8-mixed) is closer to float32 than plain
# int8, and nf4 is the furthest. On the real 260K model: perplexities over the TinyStories
# sample are finite, the 8- and 16-bit ones within 2% of float32, and nf4 the highest.
# Only orderings are asserted, never magic numbers.
set -u
bin=${EC_BINARY:?}
models=${EC_SHARED_DIR:?}/models
[ -r "$models/stories260K.bin" ] || { echo "skipping: $models not readable"; exit 77; }
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; fi; }
# field JSON PRECISION KEY: the value of KEY in the row of PRECISION.
field() { printf "%s" "$1" | jq -r --arg p "$2" ".[] | select(.precision == \$p) | .$3"; }
# holds EXPR: a floating-point relation, evaluated by awk.
holds() { awk "BEGIN { exit !($1) }"; }

small=$("$bin" eval --model small --precision fp16,int8,int8-mixed,nf4 --outliers 4:40 \
  --tokens 8 --prompt-len 4 --format json)
check "eval small exits 0 with json" 'printf "%s" "$small" | jq -e "length == 4" >/dev/null'
kl() { field "$small" "$1" mean_kl_nats; }
echo "small: KL fp16 $(kl fp16), int8-mixed $(kl int8-mixed), int8 $(kl int8), nf4 $(kl nf4) nats"
check "fp16 is nearly exact (KL < 1e-4 nats)" 'holds "$(kl fp16) < 1e-4"'
check "fp16 agrees on every top-1" 'holds "$(field "$small" fp16 top1_agreement_pct) == 100"'
check "int8-mixed closer to f32 than int8" 'holds "$(kl int8-mixed) < $(kl int8)"'
check "int8 closer to f32 than nf4" 'holds "$(kl int8) < $(kl nf4)"'
check "fp16 closer than int8-mixed" 'holds "$(kl fp16) < $(kl int8-mixed)"'
check "max |dlogit| orders like KL" \
  'holds "$(field "$small" fp16 max_abs_dlogit) < $(field "$small" int8-mixed max_abs_dlogit)"'

ppl=$("$bin" eval --model "$models/stories260K.bin" --precision f32,fp16,bf16,int8,int8-mixed,nf4,fp8 \
  --tokens 16 --ppl "$models/tinystories_sample.txt" --tokenizer "$models/tok512.bin" --threads 1 \
  --format json)
check "eval --ppl exits 0 with json" 'printf "%s" "$ppl" | jq -e "length == 7" >/dev/null'
p() { field "$ppl" "$1" perplexity; }
f32=$(p f32)
echo "260K perplexity: f32 $f32, fp16 $(p fp16), bf16 $(p bf16), int8 $(p int8), int8-mixed $(p int8-mixed), fp8 $(p fp8), nf4 $(p nf4)"
check "f32 perplexity finite and above 1" 'holds "$f32 > 1 && $f32 < 1000"'
check "f32 against itself: KL 0, top-1 100%" \
  'holds "$(field "$ppl" f32 mean_kl_nats) == 0 && $(field "$ppl" f32 top1_agreement_pct) == 100"'
for q in fp16 bf16 int8 int8-mixed fp8; do
  check "$q perplexity within 2% of f32" 'holds "$(p $q) > 0.98 * $f32 && $(p $q) < 1.02 * $f32"'
  check "nf4 perplexity above $q" 'holds "$(p nf4) > $(p $q)"'
done
check "nf4 perplexity above f32" 'holds "$(p nf4) > $f32"'

usage_error() { # $1 = description, rest = arguments: must exit 2 with one line on stderr
  local what=$1; shift
  err=$("$bin" eval "$@" 2>&1 >/dev/null); rc=$?
  check "$what exits 2" '[ $rc -eq 2 ]'
  check "$what: one line" '[ "$(printf "%s\n" "$err" | wc -l)" -eq 1 ]'
}
usage_error "--precision f32,bogus" --model tiny --precision f32,bogus
usage_error "--ppl without --tokenizer" --model tiny --ppl "$models/tinystories_sample.txt"
usage_error "--tokens 0" --model tiny --tokens 0
usage_error "--prompt-len above --tokens" --model tiny --tokens 4 --prompt-len 5
usage_error "--format yaml" --model tiny --format yaml
err=$("$bin" eval --model "$models/stories260K.bin" --ppl /nonexistent --tokenizer "$models/tok512.bin" 2>&1 >/dev/null); rc=$?
check "missing --ppl file exits 1" '[ $rc -eq 1 ]'
[ $fail -eq 0 ] && echo "eval cli: all checks pass"
exit $fail
