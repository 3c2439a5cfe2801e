#!/usr/bin/env python3
"""llama2c_to_hf.py MODEL.bin OUT_DIR — writes a llama2.c checkpoint (version 0: 7 x int32
header, fp32 tensors, as stories260K.bin) as a Hugging Face Llama directory (config.json +
model.safetensors, F32) that `transformers` and `ecocompute` both load, so the two can be run on
the same weights. llama2.c rotates adjacent pairs of q/k; Hugging Face rotates the two halves of
each head, so the rows of Wq and Wk are permuted as Meta's conversion script does. Standard
library only (struct, array, json)."""
import array
import json
import struct
import sys


def main(src, out):
    data = open(src, "rb").read()
    dim, hidden, layers, heads, kv_heads, vocab, seq = struct.unpack_from("7i", data, 0)
    shared = vocab > 0
    vocab = abs(vocab)
    head_dim = dim // heads
    kv_dim = kv_heads * head_dim
    off = 28

    def take(n):
        nonlocal off
        a = array.array("f")
        a.frombytes(data[off:off + 4 * n])
        off += 4 * n
        return a

    def rows(a, nrows, ncols):
        return [a[r * ncols:(r + 1) * ncols] for r in range(nrows)]

    def permute(w, n_heads, nrows):
        # HF row (h, j, i) = llama2.c row (h, i, j): head h, pair i in 0..hd/2, member j in 0..1
        r = rows(w, nrows, dim)
        half = head_dim // 2
        outr = []
        for h in range(n_heads):
            for j in range(2):
                for i in range(half):
                    outr.append(r[h * head_dim + 2 * i + j])
        res = array.array("f")
        for x in outr:
            res.extend(x)
        return res

    emb = take(vocab * dim)
    att_norm = [take(dim) for _ in range(layers)]
    wq = [take(dim * dim) for _ in range(layers)]
    wk = [take(kv_dim * dim) for _ in range(layers)]
    wv = [take(kv_dim * dim) for _ in range(layers)]
    wo = [take(dim * dim) for _ in range(layers)]
    ffn_norm = [take(dim) for _ in range(layers)]
    w1 = [take(hidden * dim) for _ in range(layers)]
    w2 = [take(dim * hidden) for _ in range(layers)]
    w3 = [take(hidden * dim) for _ in range(layers)]
    final_norm = take(dim)
    off += 2 * seq * (head_dim // 2) * 4  # the legacy freq_cis tables: not weights
    tensors = {"model.embed_tokens.weight": (emb, [vocab, dim]),
               "model.norm.weight": (final_norm, [dim])}
    if not shared:
        tensors["lm_head.weight"] = (take(vocab * dim), [vocab, dim])
    for i in range(layers):
        p = f"model.layers.{i}."
        tensors.update({
            p + "input_layernorm.weight": (att_norm[i], [dim]),
            p + "post_attention_layernorm.weight": (ffn_norm[i], [dim]),
            p + "self_attn.q_proj.weight": (permute(wq[i], heads, dim), [dim, dim]),
            p + "self_attn.k_proj.weight": (permute(wk[i], kv_heads, kv_dim), [kv_dim, dim]),
            p + "self_attn.v_proj.weight": (wv[i], [kv_dim, dim]),
            p + "self_attn.o_proj.weight": (wo[i], [dim, dim]),
            p + "mlp.gate_proj.weight": (w1[i], [hidden, dim]),
            p + "mlp.down_proj.weight": (w2[i], [dim, hidden]),
            p + "mlp.up_proj.weight": (w3[i], [hidden, dim]),
        })
    header, blobs, pos = {"__metadata__": {"format": "pt"}}, [], 0
    for name, (a, shape) in tensors.items():
        raw = a.tobytes()
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [pos, pos + len(raw)]}
        blobs.append(raw)
        pos += len(raw)
    head = json.dumps(header).encode()
    head += b" " * (-len(head) % 8)
    with open(f"{out}/model.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + b"".join(blobs))
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": dim,
              "intermediate_size": hidden, "num_hidden_layers": layers,
              "num_attention_heads": heads, "num_key_value_heads": kv_heads,
              "vocab_size": vocab, "max_position_embeddings": seq, "rms_norm_eps": 1e-5,
              "rope_theta": 10000.0, "hidden_act": "silu", "tie_word_embeddings": shared,
              "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "float32"}
    with open(f"{out}/config.json", "w") as f:
        json.dump(config, f, indent=1)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: llama2c_to_hf.py MODEL.bin OUT_DIR")
    main(sys.argv[1], sys.argv[2])
