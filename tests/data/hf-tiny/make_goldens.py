#!/usr/bin/env python3
"""make_goldens.py --out DIR [--keep-dir] — tiny random-weight checkpoints of each architecture the
seeds measured, saved by Hugging Face transformers itself, with transformers' float32 logits and
greedy continuation as goldens for tests/engine/test_hf_arch.c.

Runs on a machine with torch and transformers (>= 4.43 for Llama-3.1's rope scaling; CPU is
enough, no network). Each model: hidden 64, 2 layers, 4 heads of 16, 2 KV heads (Llama-2: 4, MHA
as in Llama-2-7B), intermediate 128, vocab 256, weights drawn with torch.manual_seed and stored in
BF16; the goldens are computed in float32 from those BF16 values, which is what the engine reads.

  llama2   LlamaConfig, theta 1e4, eps 1e-5, MHA, untied
  llama31  LlamaConfig, theta 5e5, rope_scaling llama3 (factor 8, low 1, high 4, original
           context 64 so that all three bands turn within the test's positions), untied,
           generation_config eos_token_id [2, 3]
  mistral  MistralConfig, theta 1e6, sliding_window 4096 of 8192 positions; sharded (100 kB
           shards, model.safetensors.index.json)
  qwen2    Qwen2Config, q/k/v biases (random, not transformers' zeros), tie_word_embeddings
  phi3     Phi3Config, fused qkv_proj and gate_up_proj, no rope scaling (Phi-3-mini-4k)
  yi       LlamaConfig as Yi-1.5: theta 5e6, eps 1e-6

Writes DIR/<model>/{config.json, generation_config.json, model.safetensors (mistral:
model-0000K-of-0000N.safetensors + model.safetensors.index.json), goldens.json, logits.f32} and
DIR/SHA256SUMS; then packs DIR into DIR.tar (members hf-tiny/...) and removes DIR unless
--keep-dir, so that one file comes back from the GPU machine. Unpack with
`tar -xf hf-tiny.tar -C tests/data` and check with `cd tests/data/hf-tiny && sha256sum -c SHA256SUMS`.

goldens.json: {"model", "transformers", "torch", "tokens" [12], "logits_file": "logits.f32"
(float32 little-endian [12][256], every position of the tokens), "greedy" [16] (argmax
continuation), "greedy_gaps" [16] (top-1 minus top-2 logit at each step), "eos_token_id" [...]
(generation_config.json's, as a list)}. Prints a table last.
"""
import argparse
import hashlib
import json
import math
import os
import shutil
import struct
import sys
import tarfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import (  # noqa: E402
    LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM, Phi3Config,
    Phi3ForCausalLM, Qwen2Config, Qwen2ForCausalLM)

TOKENS = [1, 7, 33, 2, 19, 5, 39, 0, 12, 25, 8, 30]  # test_hf_arch.c reads them from goldens.json
GREEDY = 16
COMMON = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, vocab_size=256, hidden_act="silu", bos_token_id=1,
              eos_token_id=2, pad_token_id=None, tie_word_embeddings=False,
              attn_implementation="eager")

# name, config class, model class, config fields, seed, save options, generation eos override
MODELS = [
    ("llama2", LlamaConfig, LlamaForCausalLM,
     dict(num_key_value_heads=4, max_position_embeddings=4096, rms_norm_eps=1e-5,
          rope_theta=10000.0), 1, {}, None),
    ("llama31", LlamaConfig, LlamaForCausalLM,
     dict(max_position_embeddings=512, rms_norm_eps=1e-5, rope_theta=500000.0,
          rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                        "high_freq_factor": 4.0, "original_max_position_embeddings": 64}),
     2, {}, [2, 3]),
    ("mistral", MistralConfig, MistralForCausalLM,
     dict(max_position_embeddings=8192, sliding_window=4096, rms_norm_eps=1e-5,
          rope_theta=1000000.0), 3, {"max_shard_size": "100KB"}, None),
    ("qwen2", Qwen2Config, Qwen2ForCausalLM,
     dict(max_position_embeddings=32768, rms_norm_eps=1e-6, rope_theta=1000000.0,
          tie_word_embeddings=True, use_sliding_window=False), 4, {}, None),
    ("phi3", Phi3Config, Phi3ForCausalLM,
     dict(max_position_embeddings=4096, original_max_position_embeddings=4096,
          rms_norm_eps=1e-5, rope_theta=10000.0, rope_scaling=None, sliding_window=None),
     5, {}, None),
    ("yi", LlamaConfig, LlamaForCausalLM,
     dict(max_position_embeddings=4096, rms_norm_eps=1e-6, rope_theta=5000000.0), 6, {}, None),
]


def randomize(model, seed):
    """Norm gains 1 +- 0.25, biases +- 0.5, matrices of std 1/sqrt(in): logits of std ~1, every
    tensor distinct from its default (transformers initialises norms to 1 and biases to 0)."""
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            z = torch.randn(p.shape, dtype=torch.float32)
            if p.dim() == 1 and "norm" in name:
                p.copy_(1 + 0.25 * z)
            elif p.dim() == 1:
                p.copy_(0.5 * z)
            else:
                p.copy_(z / math.sqrt(p.shape[1]))


def logits_of(model, ids):
    with torch.no_grad():
        return model(torch.tensor([ids], dtype=torch.long)).logits[0].float()


def build(root, name, config_cls, model_cls, fields, seed, save_opts, eos):
    cfg = config_cls(**{**COMMON, **fields})
    model = model_cls(cfg).eval()
    randomize(model, seed)
    if eos is not None:
        model.generation_config.eos_token_id = eos
    model = model.to(torch.bfloat16)
    out = os.path.join(root, name)
    model.save_pretrained(out, safe_serialization=True, **save_opts)
    if not os.path.exists(os.path.join(out, "generation_config.json")):
        model.generation_config.save_pretrained(out)
    # The BF16 values, computed in float32 as the engine does, by a model built afresh: .to()
    # also rounds the rotary inv_freq buffer to BF16, which a plain .float() would keep (logits
    # then drift from the engine's by ~1e-3 after a few positions); load_state_dict leaves that
    # non-persistent buffer as the config computes it.
    state = {k: v.float() for k, v in model.state_dict().items()}
    generation_config = model.generation_config
    model = model_cls(cfg).eval()
    model.load_state_dict(state)
    model.generation_config = generation_config
    logits = logits_of(model, TOKENS)
    flat = logits.flatten().tolist()
    with open(os.path.join(out, "logits.f32"), "wb") as f:
        f.write(struct.pack(f"<{len(flat)}f", *flat))
    ids, greedy, gaps = list(TOKENS), [], []
    for _ in range(GREEDY):
        last = logits_of(model, ids)[-1]
        top = torch.topk(last, 2).values
        nxt = int(torch.argmax(last))
        greedy.append(nxt)
        gaps.append(float(top[0] - top[1]))
        ids.append(nxt)
    gen_eos = model.generation_config.eos_token_id
    gen_eos = gen_eos if isinstance(gen_eos, list) else [gen_eos]
    goldens = {"model": name, "config_class": config_cls.__name__,
               "transformers": transformers.__version__, "torch": torch.__version__,
               "tokens": TOKENS, "logits_file": "logits.f32",
               "logits_shape": [len(TOKENS), cfg.vocab_size], "greedy": greedy,
               "greedy_gaps": [round(g, 6) for g in gaps], "eos_token_id": gen_eos}
    with open(os.path.join(out, "goldens.json"), "w") as f:
        json.dump(goldens, f, indent=1)
        f.write("\n")
    params = sum(p.numel() for p in model.parameters())
    return name, config_cls.__name__, params, sorted(os.listdir(out)), float(logits.abs().max()), \
        greedy


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="directory to write (its name: hf-tiny)")
    ap.add_argument("--keep-dir", action="store_true", help="keep DIR beside DIR.tar")
    a = ap.parse_args()
    root = os.path.abspath(a.out)
    if os.path.exists(root):
        sys.exit(f"make_goldens.py: {root} exists; give a new directory")
    os.makedirs(root)
    rows = [build(root, *m) for m in MODELS]
    sums = []
    for dirpath, _, files in sorted(os.walk(root)):
        for fn in sorted(files):
            path = os.path.join(dirpath, fn)
            rel = os.path.relpath(path, root)
            with open(path, "rb") as f:
                sums.append(f"{hashlib.sha256(f.read()).hexdigest()}  {rel}")
    with open(os.path.join(root, "SHA256SUMS"), "w") as f:
        f.write("\n".join(sums) + "\n")
    tar = root.rstrip("/") + ".tar"
    with tarfile.open(tar, "w") as t:
        t.add(root, arcname="hf-tiny")
    total = sum(os.path.getsize(os.path.join(d, fn)) for d, _, fs in os.walk(root) for fn in fs)
    if not a.keep_dir:
        shutil.rmtree(root)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}; "
          f"{len(sums)} files, {total} bytes in {tar}")
    print(f"{'model':8} {'config':12} {'params':>7} {'max|logit|':>10}  files / greedy")
    for name, cls, params, files, mx, greedy in rows:
        print(f"{name:8} {cls:12} {params:7d} {mx:10.3f}  {' '.join(files)}")
        print(f"{'':41}greedy {greedy}")


if __name__ == "__main__":
    main()
