#!/usr/bin/env bash
# test_eval_wiki.sh — `ecocompute eval --ppl` out of domain: the real 260K TinyStories model reading
# Wikipedia (the first article of the WikiText-2 test split, tests/data) has a float32 perplexity
# far above its perplexity on TinyStories, yet below the uniform guess over its 512 tokens.
set -u
. "$(dirname "$0")/cli_test_lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ppl TEXT: float32 perplexity of the 260K model over the file TEXT.
ppl() {
  "$bin" eval --model "$models/stories260K.bin" --precision f32 --tokens 16 --ppl "$1" \
    --tokenizer "$models/tok512.bin" --threads 1 --format json | jq -r '.[0].perplexity'
}
# The excerpt's first article, "Robert Boulter" (32 lines, 3,607 tokens): short under the
# sanitizers.
head -n 32 "$models/wiki.test.excerpt.raw" >"$tmp/wiki.txt"
stories=$(ppl "$models/tinystories_sample.txt")
wiki=$(ppl "$tmp/wiki.txt")
echo "260K f32 perplexity: TinyStories sample $stories, WikiText-2 first article $wiki"
check "both perplexities are numbers above 1" 'holds "$stories > 1 && $wiki > 1"'
check "Wikipedia is over 5x harder than TinyStories for a TinyStories model" \
  'holds "$wiki > 5 * $stories"'
check "and still better than a uniform guess over 512 tokens" 'holds "$wiki < 512"'
finish "eval wiki"
