#!/usr/bin/env bash
# test_tokenize_cli.sh — `ecocompute tokenize` end to end (ids, pieces, json/csv/table, --special,
# --decode, --file, model directories, usage and malformed-file errors) and the text path of
# `run` with a model directory's own tokenizer: --prompt, --chat through the chat template, and
# an unknown template said to be unknown.
set -u
bin=${EC_BINARY:?}
data=$(cd "$(dirname "$0")/../data/tokenizers" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; fi; }
# exits CODE DESCRIPTION ARGS...: `ecocompute ARGS` exits CODE with one line on stderr.
exits() {
  local code=$1 what=$2; shift 2
  err=$("$bin" "$@" 2>&1 >/dev/null); rc=$?
  check "$what: exits $code (got $rc)" '[ $rc -eq $code ]'
  check "$what: one line ($err)" '[ "$(printf "%s\n" "$err" | wc -l)" -eq 1 ]'
}
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
qwen=$data/qwen2.5 llama=$data/lenml-llama2/tokenizer.json.gz

out=$("$bin" tokenize --help); rc=$?
check "--help exits 0 with examples" '[ $rc -eq 0 ] && printf "%s" "$out" | grep -q "examples:"'

# Byte-level BPE (Qwen2.5): the ids and pieces Hugging Face tokenizers gives.
out=$("$bin" tokenize --tokenizer "$qwen" --format json "Hello world" 2>/dev/null)
check "qwen json" '[ "$out" = "{\"ids\":[9707,1879],\"tokens\":[\"Hello\",\"Ġworld\"]}" ]'
# Special tokens written in the text are single tokens; --special adds none for Qwen.
out=$("$bin" tokenize --tokenizer "$qwen" --special --format json "<|im_start|>user" 2>/dev/null)
check "qwen inline special" '[ "$(printf "%s" "$out" | json "d[\"ids\"]")" = "[151644, 872]" ]'
# SentencePiece-style BPE: --special adds BOS; decoding drops it unless --special.
out=$("$bin" tokenize --tokenizer "$llama" --special --format json "Hello world" 2>/dev/null)
check "llama --special adds BOS" '[ "$(printf "%s" "$out" | json "d[\"ids\"][0]")" = 1 ]'
ids=$(printf "%s" "$out" | json "\" \".join(map(str, d[\"ids\"]))")
out=$("$bin" tokenize --tokenizer "$llama" --decode $ids)
check "decode drops BOS" '[ "$out" = "Hello world" ]'
out=$("$bin" tokenize --tokenizer "$llama" --decode --special --format json $ids)
check "decode --special keeps it" '[ "$out" = "{\"text\":\"<s> Hello world\"}" ]'
# Table and CSV: one row per token; the stderr line says how many and which file.
out=$("$bin" tokenize --tokenizer "$qwen" --format csv "a, b" 2>"$tmp/err")
check "csv header" '[ "$(printf "%s\n" "$out" | head -1 | tr -d "\r")" = "index,id,token,text,special" ]'
check "csv rows" '[ "$(printf "%s\n" "$out" | wc -l)" -eq 4 ]'
check "stderr count" 'grep -q "^3 tokens (tokenizer.json tokenizer .*qwen2.5/tokenizer.json.gz)" "$tmp/err"'
out=$("$bin" tokenize --tokenizer "$qwen" "line1
line2" 2>/dev/null)
check "table escapes newlines" 'printf "%s" "$out" | grep -q "Ċ *\\\\n"'
printf 'Once upon a time\n' >"$tmp/text.txt"
a=$("$bin" tokenize --tokenizer "$qwen" --format json --file "$tmp/text.txt" 2>/dev/null)
b=$("$bin" tokenize --tokenizer "$qwen" --format json "Once upon a time
" 2>/dev/null)
check "--file = the text" '[ -n "$a" ] && [ "$a" = "$b" ]'
b=$("$bin" tokenize --tokenizer "$qwen" --format json --file - <"$tmp/text.txt" 2>/dev/null)
check "--file - reads stdin" '[ "$a" = "$b" ]'
# A SentencePiece model (through libsentencepiece when built with it).
if out=$("$bin" tokenize --tokenizer "$data/sp-tiny" --special --format json "Hello" 2>"$tmp/err"); then
  check "sentencepiece BOS" '[ "$(printf "%s" "$out" | json "d[\"ids\"][0]")" = 1 ]'
else
  check "sentencepiece refused only for lack of the library" 'grep -q libsentencepiece "$tmp/err"'
fi

# Usage errors: exit 2, one line.
exits 2 "no --tokenizer" tokenize "text"
exits 2 "no text" tokenize --tokenizer "$qwen"
exits 2 "two texts" tokenize --tokenizer "$qwen" a b
exits 2 "bad id" tokenize --tokenizer "$qwen" --decode 12 x
exits 2 "negative id" tokenize --tokenizer "$qwen" --decode -- -3
exits 2 "no ids" tokenize --tokenizer "$qwen" --decode
exits 2 "unknown option" tokenize --tokenizer "$qwen" --bogus x
exits 2 "bad format" tokenize --tokenizer "$qwen" --format xml x
# Failures: exit 1, one line naming the file and what is wrong.
exits 1 "id out of vocabulary" tokenize --tokenizer "$qwen" --decode 999999
exits 1 "missing file" tokenize --tokenizer "$tmp/none.json" x
mkdir "$tmp/empty"
exits 1 "directory without tokenizer" tokenize --tokenizer "$tmp/empty" x
check "...names the directory" 'printf "%s" "$err" | grep -q "$tmp/empty: no tokenizer.json"'
printf '{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}}' >"$tmp/bad.json"
exits 1 "merge of a missing piece" tokenize --tokenizer "$tmp/bad.json" x
check "...names file and field" 'printf "%s" "$err" | grep -q "bad.json: model.merges\[0\]"'
head -c 3000 "$qwen/tokenizer.json.gz" >"$tmp/cut.json.gz"
exits 1 "truncated gzip" tokenize --tokenizer "$tmp/cut.json.gz" x
printf '\xff\xfe' >"$tmp/bin.model"
exits 1 "not a SentencePiece model" tokenize --tokenizer "$tmp/bin.model" x
exits 1 "invalid UTF-8 text" tokenize --tokenizer "$qwen" $'ab\xff'

# run: text in, text out with the model directory's own tokenizer (random weights, so only the
# prompt's text is known; the ids of the prompt are the tokenizer's).
model=$tmp/model
mkdir "$model"
python3 "$here/write_tiny_hf.py" "$model" 32000
cp "$llama" "$model/"
out=$("$bin" run --model "$model" --prompt "Once upon a time" --gen 8 --precision f32 2>"$tmp/err"); rc=$?
check "run --prompt exits 0 ($(cat "$tmp/err"))" '[ $rc -eq 0 ]'
check "run prints the prompt's text first" '[ "${out#Once upon a time}" != "$out" ]'
check "run: timings on stderr" 'grep -q "decode:" "$tmp/err"'
n=$("$bin" tokenize --tokenizer "$model" --special --format json "Once upon a time" 2>/dev/null | json "len(d[\"ids\"])")
out=$("$bin" run --model "$model" --prompt "Once upon a time" --gen 4 --precision f32 --format json 2>/dev/null)
check "run json: prompt tokens = BOS + text" '[ "$(printf "%s" "$out" | json "d[0][\"prompt_tokens\"]")" = "$n" ]'
check "run json: text" '[ "$(printf "%s" "$out" | json "d[0][\"text\"][:16]")" = "Once upon a time" ]'
# generation_config.json's eos_token_id ends the text: make the first generated token an EOS.
first=$(printf "%s" "$out" | json "d[0][\"first_token_ids\"].split()[0]")
printf '{"eos_token_id": [31999, %s]}' "$first" >"$model/generation_config.json"
out=$("$bin" run --model "$model" --prompt "Once upon a time" --gen 4 --precision f32 --format json 2>/dev/null)
check "run: the text ends at generation_config.json's EOS ($first)" '[ "$(printf "%s" "$out" | json "d[0][\"text\"]")" = "Once upon a time" ]'
printf '{"eos_token_id": "</s>"}' >"$model/generation_config.json"
exits 1 "malformed generation_config.json" run --model "$model" --prompt "Once" --gen 2
check "...names file and field" 'printf "%s" "$err" | grep -q "generation_config.json: field .eos_token_id."'
rm "$model/generation_config.json"
# --chat: the template of tokenizer_config.json (Mistral's) wraps the prompt.
printf '{"bos_token": "<s>", "eos_token": "</s>", "chat_template": "{{ bos_token }}{%% for message in messages %%}{{ [INST] + message.content + [/INST] }}{%% endfor %%}"}' >"$model/tokenizer_config.json"
n=$("$bin" tokenize --tokenizer "$model" --format json "<s>[INST] Hi there [/INST]" 2>/dev/null | json "len(d[\"ids\"])")
out=$("$bin" run --model "$model" --prompt "Hi there" --chat --gen 4 --precision f32 --format json 2>/dev/null)
check "run --chat: prompt tokens of the template" '[ "$(printf "%s" "$out" | json "d[0][\"prompt_tokens\"]")" = "$n" ]'
check "run --chat: only the answer" '[ "$(printf "%s" "$out" | json "\"[INST]\" in d[0][\"text\"]")" = False ]'
printf '{"chat_template": "{%% for m in messages %%}### {{ m.content }}{%% endfor %%}"}' >"$model/tokenizer_config.json"
exits 1 "unknown chat template" run --model "$model" --prompt "Hi" --chat --gen 2
check "...says so, naming the file" 'printf "%s" "$err" | grep -q "tokenizer_config.json: chat_template: unknown template"'
exits 2 "--chat without --prompt" run --model "$model" --chat
exits 2 "--system without --chat" run --model "$model" --prompt hi --system x
# eval --ppl with the directory's tokenizer: windows start with its BOS.
out=$("$bin" eval --model "$model" --ppl "$tmp/text.txt" --precision f32 --tokens 4 --format json 2>"$tmp/err"); rc=$?
check "eval --ppl with the model's tokenizer ($(cat "$tmp/err"))" '[ $rc -eq 0 ] && [ "$(printf "%s" "$out" | json "d[0][\"ppl_tokens\"]")" = 5 ]'
rm "$model/tokenizer.json.gz"
exits 1 "--prompt, model directory without a tokenizer" run --model "$model" --prompt hi --gen 2
# A tokenizer without BOS (GPT-2's file alone, like Qwen2's): the prompt is the text alone, and
# perplexity scores every text token but the first, which has no context (5 tokens: 4 scored).
nobos=$tmp/nobos
mkdir "$nobos"
python3 "$here/write_tiny_hf.py" "$nobos" 50257
cp "$data/gpt2/tokenizer.json.gz" "$nobos/"
out=$("$bin" run --model "$nobos" --prompt "Hello world" --gen 2 --precision f32 --format json 2>/dev/null)
check "no BOS: the prompt is the text's 2 tokens" '[ "$(printf "%s" "$out" | json "d[0][\"prompt_tokens\"]")" = 2 ]'
out=$("$bin" eval --model "$nobos" --ppl "$tmp/text.txt" --precision f32 --tokens 4 --format json 2>"$tmp/err"); rc=$?
check "eval --ppl without BOS scores the text's tokens but the first ($(cat "$tmp/err"))" '[ $rc -eq 0 ] && [ "$(printf "%s" "$out" | json "d[0][\"ppl_tokens\"]")" = 4 ]'
exits 1 "no BOS, empty prompt" run --model "$nobos" --prompt "" --gen 2
[ $fail -eq 0 ] && echo "tokenize cli: all checks pass"
exit $fail
