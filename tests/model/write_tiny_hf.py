#!/usr/bin/env python3
"""write_tiny_hf.py DIR VOCAB — writes a tiny random-weight Llama checkpoint in Hugging Face
layout (config.json + model.safetensors, F32, tied embeddings) with the given vocabulary size,
so the text path of `run` can be driven end to end with a real tokenizer placed beside it.
Uses only the standard library (struct, array, random)."""
import array
import json
import random
import struct
import sys

out, vocab = sys.argv[1], int(sys.argv[2])
dim, hidden, layers, heads = 16, 32, 1, 2
config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": dim,
          "intermediate_size": hidden, "num_hidden_layers": layers, "num_attention_heads": heads,
          "num_key_value_heads": heads, "vocab_size": vocab, "max_position_embeddings": 256,
          "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "hidden_act": "silu",
          "tie_word_embeddings": True, "torch_dtype": "float32"}
shapes = {"model.embed_tokens.weight": [vocab, dim], "model.norm.weight": [dim]}
for i in range(layers):
    p = f"model.layers.{i}."
    shapes.update({p + "input_layernorm.weight": [dim], p + "post_attention_layernorm.weight": [dim],
                   p + "self_attn.q_proj.weight": [dim, dim], p + "self_attn.k_proj.weight": [dim, dim],
                   p + "self_attn.v_proj.weight": [dim, dim], p + "self_attn.o_proj.weight": [dim, dim],
                   p + "mlp.gate_proj.weight": [hidden, dim], p + "mlp.up_proj.weight": [hidden, dim],
                   p + "mlp.down_proj.weight": [dim, hidden]})
rng = random.Random(1)
header, blobs, offset = {}, [], 0
for name, shape in shapes.items():
    n = 1
    for s in shape:
        n *= s
    if name.endswith("norm.weight"):
        data = array.array("f", [1.0] * n)
    else:
        data = array.array("f", (rng.uniform(-0.5, 0.5) for _ in range(n)))
    raw = data.tobytes()
    header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + len(raw)]}
    blobs.append(raw)
    offset += len(raw)
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
with open(f"{out}/model.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text)
    for b in blobs:
        f.write(b)
with open(f"{out}/config.json", "w") as f:
    json.dump(config, f)
