#!/usr/bin/env bash
# ppl-check.sh — is `ecocompute eval --ppl` the perplexity the reference implementation computes?
# On the GPU machine (no network): the real stories260K model (tests/data) written as a Hugging
# Face directory (bench/llama2c_to_hf.py), the WikiText-2 excerpt (tests/data, 18,718 tokens)
# tokenized once by ecocompute (tok512.bin, BOS first), and the same token ids scored by
# transformers with the same sliding-window protocol (WINDOW, STRIDE: each window scores only the
# tokens after the previous window's end). ecocompute runs the CPU backend (f32, fp16) and the
# CUDA backend (fp16, bf16: it has no f32), storing its rows in $OUT/ppl.db (eval --db), and the
# rows are exported to $OUT/accuracy.csv. Prints one table last: perplexity of each, relative
# difference, tokens scored by each, and whether it is within 0.5 %. Exit 1 when a row is not.
# About a minute. ECOCOMPUTE overrides the binary (default .devpack/bin/ecocompute).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-bench-out}
mkdir -p "$out"
source bench/pack-env.sh # .devpack's libraries on LD_LIBRARY_PATH, NCCL
bin=${ECOCOMPUTE:-$pack/bin/ecocompute}
data=tests/data/models
window=${WINDOW:-512}
stride=${STRIDE:-256}
text=$data/wiki.test.excerpt.raw
hf="$out/stories260K-hf"
mkdir -p "$hf"
python3 bench/llama2c_to_hf.py "$data/stories260K.bin" "$hf"
"$bin" tokenize --tokenizer "$data/tok512.bin" --special --file "$text" --format json >"$out/ids.json"
rm -f "$out/ppl.db"
ev() { "$bin" eval --model "$hf" --tokenizer "$data/tok512.bin" --ppl "$text" --window "$window" \
  --stride "$stride" --tokens 8 --db "$out/ppl.db" --format json "$@"; }
ev --device cpu --precision f32,fp16 >"$out/eval-cpu.json"
if ev --device cuda --precision fp16,bf16 >"$out/eval-cuda.json" 2>"$out/eval-cuda.err"; then :; else
  echo "ppl-check: eval on cuda failed: $(tail -1 "$out/eval-cuda.err")" >&2
  echo "[]" >"$out/eval-cuda.json"
fi
"$bin" export --db "$out/ppl.db" --accuracy -o "$out/accuracy.csv"
python3 - "$hf" "$out" "$window" "$stride" <<'PY'
import json, math, sys
import torch
from transformers import LlamaForCausalLM

hf, out, window, stride = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
ids = json.load(open(f"{out}/ids.json"))["ids"]
assert ids[0] == 1, "the token stream must start with BOS (id 1)"
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = "cuda" if torch.cuda.is_available() else "cpu"
stream = torch.tensor(ids, device=dev).unsqueeze(0)
n = stream.shape[1]


def perplexity(dtype):
    """Hugging Face's "Perplexity of fixed-length models" loop, summing each token's NLL."""
    model = LlamaForCausalLM.from_pretrained(hf, torch_dtype=dtype).to(dev).eval()
    nll, count, prev_end, begin = 0.0, 0, 0, 0
    with torch.no_grad():
        while prev_end < n:
            end = min(begin + window, n)
            first = max(prev_end, begin + 1)  # first token scored in this window
            logits = model(stream[:, begin:end]).logits[0].float()
            logp = torch.log_softmax(logits, dim=-1)
            pos = torch.arange(first - 1 - begin, end - 1 - begin, device=dev)
            tgt = stream[0, first:end]
            nll -= logp[pos, tgt].double().sum().item()
            count += end - first
            prev_end, begin = end, begin + stride
    return math.exp(nll / count), count


ref = {p: perplexity(d) for p, d in (("f32", torch.float32), ("fp16", torch.float16),
                                     ("bf16", torch.bfloat16))}
rows, ok = [], True
for dev_name in ("cpu", "cuda"):
    for r in json.load(open(f"{out}/eval-{dev_name}.json")):
        p = r["precision"]
        t, tn = ref[p]
        diff = 100 * (r["perplexity"] / t - 1)
        good = abs(diff) <= 0.5 and r["ppl_tokens"] == tn
        ok &= good
        rows.append((dev_name, p, r["perplexity"], t, diff, r["ppl_tokens"], tn, good))
with open(f"{out}/ppl-check.csv", "w") as f:
    f.write("backend,precision,ppl_ecocompute,ppl_transformers,rel_diff_pct,tokens_ecocompute,"
            "tokens_transformers,within_0.5pct\n")
    for r in rows:
        f.write(",".join(str(x) for x in r) + "\n")
print(f"stories260K (HF layout), WikiText-2 excerpt: {n} tokens, window {window}, stride {stride}; "
      f"transformers {__import__('transformers').__version__}, torch {torch.__version__} on {dev}")
print(f"{'backend':<8} {'prec':<5} {'ppl ecocompute':>15} {'ppl transformers':>17} {'rel diff %':>11} "
      f"{'tokens (eco/hf)':>16}  verdict")
for d, p, e, t, diff, te, tt, good in rows:
    print(f"{d:<8} {p:<5} {e:>15.4f} {t:>17.4f} {diff:>+11.4f} {f'{te}/{tt}':>16}  "
          f"{'ok' if good else 'NOT within 0.5 % / same tokens'}")
sys.exit(0 if ok and rows else 1)
PY
