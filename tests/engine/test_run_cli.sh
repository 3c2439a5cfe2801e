#!/usr/bin/env bash
# test_run_cli.sh — `ecocompute run` end to end: the 260K TinyStories model prints, byte for
# byte, the text llama2.c prints for greedy decoding (v0 and v1 checkpoints, f32 and fp16);
# timings go to stderr; --format json parses and carries units in its keys; bad values exit 2
# with one line; a CUDA device fails clearly; the same model as GGUF is refused, naming GGUF.
set -u
. "$(dirname "$0")/cli_test_lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The reference file's first line is llama2.c's command; the rest is what it printed.
tail -n +2 "$models/stories260K_expected_greedy.txt" >"$tmp/expected"
for ckpt in stories260K.bin stories260K_v1.bin; do
  for p in f32 fp16; do
    "$bin" run --model "$models/$ckpt" --tokenizer "$models/tok512.bin" --device cpu --gen 256 \
      --precision $p >"$tmp/out" 2>"$tmp/err"
    check "$ckpt $p exits 0" '[ $? -eq 0 ]'
    check "$ckpt $p prints llama2.c's greedy text byte for byte" 'cmp -s "$tmp/out" "$tmp/expected"'
  done
done
check "timings on stderr, in tok/s" 'grep -q "decode: 255 tok in .* s (.* tok/s)" "$tmp/err"'
# One token fewer is a different text: --gen counts exactly.
"$bin" run --model "$models/stories260K.bin" --tokenizer "$models/tok512.bin" --gen 255 \
  --precision f32 >"$tmp/out" 2>/dev/null
check "--gen 255 prints one token less" '! cmp -s "$tmp/out" "$tmp/expected"'

json=$("$bin" run --model tiny --precision int8 --batch 2 --prompt-len 8 --gen 4 --format json)
check "run --format json parses" 'printf "%s" "$json" | jq -e ".[0].decode_tok_per_s > 0" >/dev/null'
check "run json: prompt and new tokens" \
  'printf "%s" "$json" | jq -e ".[0].prompt_tokens == 8 and .[0].new_tokens == 4" >/dev/null'
check "run json: 4 first token ids" \
  '[ "$(printf "%s" "$json" | jq -r ".[0].first_token_ids" | wc -w)" -eq 4 ]'
# The bytes a step must read: the weights plus, per sequence, the KV cache at the mean context
# (8 + 4/2 positions x 2 (K, V) x 5 layers x 2 kv heads x 32 dims x 2 bytes = 12,800 bytes).
one=$("$bin" run --model tiny --precision int8 --batch 1 --prompt-len 8 --gen 4 --format json)
check "run json: step bytes grow by one sequence's KV cache per sequence" \
  'jq -n -e --argjson a "$one" --argjson b "$json" "(\$b[0].decode_step_mb - \$a[0].decode_step_mb - 0.0128 | fabs) < 1e-9" >/dev/null'
fp16=$("$bin" run --model tiny --precision fp16 --batch 1 --prompt-len 8 --gen 4 --format json)
check "run json: int8 reads fewer bytes a step than fp16" \
  'jq -n -e --argjson a "$one" --argjson h "$fp16" "\$a[0].decode_step_mb < \$h[0].decode_step_mb and \$a[0].decode_step_mb > 0" >/dev/null'
again=$("$bin" run --model tiny --precision int8 --batch 2 --prompt-len 8 --gen 4 --format json)
ids() { printf "%s" "$1" | jq -r ".[0].first_token_ids"; }
check "same seed, same tokens" '[ "$(ids "$json")" = "$(ids "$again")" ]'
csv=$("$bin" run --model tiny --precision nf4 --gen 2 --prompt-len 4 --format csv)
check "csv header names units" '[[ "$(printf "%s" "$csv" | head -1)" == *prefill_tok_per_s* ]]'

usage_error run "missing --model" --precision fp16
usage_error run "--batch 0" --model tiny --batch 0
usage_error run "--gen x" --model tiny --gen x
usage_error run "--precision int3" --model tiny --precision int3
usage_error run "--format xml" --model tiny --format xml
usage_error run "--device tpu" --model tiny --device tpu
usage_error run "--outliers 2:big" --model tiny --outliers 2:big
usage_error run "--prompt without --tokenizer" --model tiny --prompt hello
usage_error run "--threads -1" --model tiny --threads -1
usage_error run "--model without value" --model

# No machine has GPU 99: with or without a CUDA build this is a one-line failure, exit 1.
err=$("$bin" run --model tiny --device cuda:99 2>&1 >/dev/null); rc=$?
check "--device cuda:99 exits 1" '[ $rc -eq 1 ]'
check "--device cuda:99 says why" '[[ "$err" == *CUDA* || "$err" == *cuda* ]]'
check "--device cuda:99 one line" '[ "$(printf "%s\n" "$err" | wc -l)" -eq 1 ]'
# Without the NVIDIA driver the CUDA backend says so (not CUDA's "driver version is insufficient").
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
  err=$("$bin" run --model tiny --device cuda 2>&1 >/dev/null)
  check "no driver: said as such, in one line" \
    '[[ "$err" == *"no NVIDIA driver found"* || "$err" == *"no CUDA backend"* ]] && [ "$(printf "%s\n" "$err" | wc -l)" -eq 1 ]'
fi
err=$("$bin" run --model "$models/stories260K.bin" --prompt-len 500 --gen 100 2>&1 >/dev/null); rc=$?
check "too many positions exits 1" '[ $rc -eq 1 ]'
check "too many positions names max_seq_len" '[[ "$err" == *max_seq_len* ]]'
# The same model as llama.cpp's GGUF (version 1, tokenizer inside): refused in one line that names
# the format, not misread as a llama2.c header.
err=$("$bin" run --model "$models/stories260K_f32_ggufv1.gguf" --device cpu 2>&1 >/dev/null); rc=$?
check "real GGUF file: exit 1, one line naming GGUF" \
  '[ $rc -eq 1 ] && [ "$(printf "%s\n" "$err" | wc -l)" -eq 1 ] && [[ "$err" == *"a GGUF file"* ]]'
finish "run cli"
