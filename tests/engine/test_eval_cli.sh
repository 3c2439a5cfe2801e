#!/usr/bin/env bash
# test_eval_cli.sh — `ecocompute eval` end to end on the synthetic `small` model with injected
# outlier features: fp16 is nearly exact, LLM.int8 (int8-mixed) is closer to float32 than plain
# int8, and nf4 is the furthest (orderings only, never magic numbers); bad values exit 2.
set -u
. "$(dirname "$0")/cli_test_lib.sh"

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

usage_error eval "--precision f32,bogus" --model tiny --precision f32,bogus
usage_error eval "--ppl without --tokenizer" --model tiny --ppl "$models/tinystories_sample.txt"
usage_error eval "--tokens 0" --model tiny --tokens 0
usage_error eval "--prompt-len above --tokens" --model tiny --tokens 4 --prompt-len 5
usage_error eval "--format yaml" --model tiny --format yaml
err=$("$bin" eval --model "$models/stories260K.bin" --ppl /nonexistent --tokenizer "$models/tok512.bin" 2>&1 >/dev/null); rc=$?
check "missing --ppl file exits 1" '[ $rc -eq 1 ]'
finish "eval cli"
