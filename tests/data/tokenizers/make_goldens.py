#!/usr/bin/env python3
"""make_goldens.py — the goldens of texts.json from Python's `tokenizers` (Hugging Face) and
`sentencepiece`, the reference libraries themselves, to confirm goldens.json (written by
make_goldens.mjs from the npm build of the same Rust tokenizers and from spm_encode).

    python3 make_goldens.py            # compare with goldens.json: prints agreements/differences
    python3 make_goldens.py --write    # rewrite goldens.json from Python

Exit status 0 when every case agrees (or after --write), 1 otherwise."""
import gzip
import json
import os
import sys

from tokenizers import Tokenizer
import sentencepiece as spm

HERE = os.path.dirname(os.path.abspath(__file__))
os.chdir(HERE)
texts = json.load(open("texts.json", encoding="utf-8"))
out = {"generator": "make_goldens.py (Python tokenizers, sentencepiece)", "tokenizers": {}}

# variants.json: the shipped files with other steps or added-token flags (see make_goldens.mjs).
variants = json.load(open("variants.json", encoding="utf-8"))
for name in ["qwen2.5", "lenml-llama2", "gpt2"] + list(variants):
    variant = variants.get(name, {})
    base = variant.get("base", name)
    path = f"{base}/tokenizer.json.gz"
    spec = json.loads(gzip.decompress(open(path, "rb").read()).decode("utf-8"))
    spec.update(variant.get("replace", {}))
    for added in spec.get("added_tokens") or []:
        added.update(variant.get("added_flags", {}).get(added["content"], {}))
    tok = Tokenizer.from_str(json.dumps(spec))
    cases = []
    for text in texts:
        plain = tok.encode(text, add_special_tokens=False)
        special = tok.encode(text, add_special_tokens=True)
        cases.append({"text": text, "ids": plain.ids, "tokens": plain.tokens,
                      "ids_special": special.ids,
                      "decoded": tok.decode(plain.ids, skip_special_tokens=True),
                      "decoded_special": tok.decode(special.ids, skip_special_tokens=False)})
    out["tokenizers"][name] = {"path": path, "cases": cases}
    if variant:
        out["tokenizers"][name]["variant"] = name

sp = spm.SentencePieceProcessor(model_file="sp-tiny/tokenizer.model")
cases = []
for text in texts:
    ids = sp.encode(text)
    cases.append({"text": text, "ids": ids, "ids_special": [sp.bos_id()] + ids,
                  "decoded": sp.decode(ids)})
out["tokenizers"]["sp-tiny"] = {"path": "sp-tiny/tokenizer.model", "cases": cases}

# The chat prompt transformers renders for Qwen2.5 (what test_tokenizer_json.c expects of
# ec_chat_render), when transformers is installed.
try:
    import tempfile
    from transformers import AutoTokenizer
    with tempfile.TemporaryDirectory() as d:
        with open(f"{d}/tokenizer.json", "wb") as f:
            f.write(gzip.decompress(open("qwen2.5/tokenizer.json.gz", "rb").read()))
        with open(f"{d}/tokenizer_config.json", "w", encoding="utf-8") as f:
            f.write(open("qwen2.5/tokenizer_config.json", encoding="utf-8").read())
        hf = AutoTokenizer.from_pretrained(d)
        chat = hf.apply_chat_template([{"role": "user", "content": "Why is the sky blue?"}],
                                      tokenize=False, add_generation_prompt=True)
    want = ("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
            "assistant.<|im_end|>\n<|im_start|>user\nWhy is the sky blue?<|im_end|>\n"
            "<|im_start|>assistant\n")
    print("chat template (Qwen2.5):", "agrees" if chat == want else f"DIFFERS: {chat!r}")
except ImportError:
    print("chat template: transformers not installed, not checked")

if "--write" in sys.argv:
    with open("goldens.json", "w", encoding="utf-8") as f:
        f.write(json.dumps(out, separators=(",", ":")).replace('},{"text"', '},\n{"text"') + "\n")
    print("wrote goldens.json")
    sys.exit(0)

have = json.load(open("goldens.json", encoding="utf-8"))
agree = differ = 0
for name, t in have["tokenizers"].items():
    mine = {c["text"]: c for c in out["tokenizers"][name]["cases"]}
    for c in t["cases"]:
        p = mine.get(c["text"])
        keys = [k for k in ("ids", "ids_special", "decoded", "decoded_special") if k in c]
        bad = [k for k in keys if p is None or p.get(k) != c[k]]
        if bad:
            differ += 1
            print(f"DIFFER {name} {c['text'][:50]!r}: {bad}")
        else:
            agree += 1
print(f"{agree} cases agree, {differ} differ")
sys.exit(1 if differ else 0)
