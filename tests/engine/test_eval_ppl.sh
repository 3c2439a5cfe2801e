#!/usr/bin/env bash
# test_eval_ppl.sh — `ecocompute eval --ppl` on the real 260K TinyStories model: for every
# precision the perplexity over the TinyStories sample is finite, the 8- and 16-bit ones lie
# within 2% of float32, and nf4/nf4-dq are the highest (robust relations only).
set -u
. "$(dirname "$0")/cli_test_lib.sh"

ppl=$("$bin" eval --model "$models/stories260K.bin" --precision f32,fp16,bf16,int8,int8-mixed,nf4,nf4-dq,fp8 \
  --tokens 16 --ppl "$models/tinystories_sample.txt" --tokenizer "$models/tok512.bin" --threads 1 \
  --format json)
check "eval --ppl exits 0 with json" 'printf "%s" "$ppl" | jq -e "length == 8" >/dev/null'
p() { field "$ppl" "$1" perplexity; }
f32=$(p f32)
echo "260K perplexity: f32 $f32; $(for q in fp16 bf16 int8 int8-mixed fp8 nf4 nf4-dq; do printf "%s %s; " $q "$(p $q)"; done)"
check "f32 perplexity finite and above 1" 'holds "$f32 > 1 && $f32 < 1000"'
check "f32 against itself: KL 0, top-1 100%" \
  'holds "$(field "$ppl" f32 mean_kl_nats) == 0 && $(field "$ppl" f32 top1_agreement_pct) == 100"'
for q in fp16 bf16 int8 int8-mixed fp8; do
  check "$q perplexity within 2% of f32" 'holds "$(p $q) > 0.98 * $f32 && $(p $q) < 1.02 * $f32"'
  for n in nf4 nf4-dq; do check "$n perplexity above $q" 'holds "$(p $n) > $(p $q)"'; done
done
check "nf4 and nf4-dq perplexity above f32" 'holds "$(p nf4) > $f32 && $(p nf4-dq) > $f32"'
finish "eval ppl"
