#!/usr/bin/env python3
"""torch_baseline.py — the seed studies' stack (PyTorch + transformers `generate`, fp16, random
weights from a config) on the shapes of bench/gpu.sh, metered by ecocompute's own sampler.

Run under `ecocompute meter --trace T.csv -- python3 bench/torch_baseline.py --marks M.csv ...`:
the script writes, for every measured interval, a row `label,t0_s,t1_s,tokens` on the trace's
time axis (ECOCOMPUTE_METER_T0, see docs/measurement.md); bench/trace_energy.py then integrates
the trace's instant power over each interval. Decode is isolated the way ecocompute's engine
counts it: a generate() of 1 new token (the prefill) is measured next to a generate() of GEN new
tokens, and decode = the difference (GEN - 1 tokens per sequence).

Modes: `eager` (what the seeds measured) and `compile` (static KV cache + torch.compile
reduce-overhead; reported as failed with the error if it does not work offline).
"""
import argparse
import os
import sys
import time

SHAPES = {  # the catalog's shapes (src/model/catalog.c), from each model's config.json
    "Llama-2-7B": dict(hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                       num_attention_heads=32, num_key_value_heads=32, vocab_size=32000,
                       rope_theta=10000.0, max_position_embeddings=4096),
    "TinyLlama-1.1B": dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
                           num_attention_heads=32, num_key_value_heads=4, vocab_size=32000,
                           rope_theta=10000.0, max_position_embeddings=2048),
    "Llama-3.1-8B": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                         num_attention_heads=32, num_key_value_heads=8, vocab_size=128256,
                         rope_theta=500000.0, max_position_embeddings=131072),
}


def now_trace_s(t0):
    return time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--marks", required=True, help="CSV of measured intervals to write")
    ap.add_argument("--runs", required=True,
                    help="comma-separated MODEL:BATCH items, e.g. Llama-2-7B:1,Llama-2-7B:8")
    ap.add_argument("--prompt-len", type=int, default=512)
    ap.add_argument("--gen", type=int, default=256)
    ap.add_argument("--mode", choices=["eager", "compile"], default="eager")
    ap.add_argument("--idle", type=float, default=5.0, help="idle seconds with the model loaded")
    a = ap.parse_args()
    t0 = float(os.environ["ECOCOMPUTE_METER_T0"])

    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    marks = open(a.marks, "w")
    marks.write("label,t0_s,t1_s,tokens,note\n")
    torch.manual_seed(0)
    current = None
    model = None
    for item in a.runs.split(","):
        name, batch = item.split(":")
        batch = int(batch)
        if current != name:
            model = None
            torch.cuda.empty_cache()
            cfg = LlamaConfig(**SHAPES[name], torch_dtype=torch.float16)
            torch.set_default_dtype(torch.float16)
            with torch.device("cuda"):
                model = LlamaForCausalLM(cfg).eval()
            torch.set_default_dtype(torch.float32)
            current = name
            if a.idle > 0:  # idle with this model's context and weights resident
                torch.cuda.synchronize()
                s = now_trace_s(t0)
                time.sleep(a.idle)
                marks.write(f"idle {name},{s:.6f},{now_trace_s(t0):.6f},0,\n")
        ids = torch.randint(3, model.config.vocab_size, (batch, a.prompt_len), device="cuda")
        kw = dict(do_sample=False, pad_token_id=0, eos_token_id=None)
        gen_model = model
        label = f"{a.mode} {name} b{batch}"
        try:
            if a.mode == "compile":
                kw["cache_implementation"] = "static"
                model.forward = torch.compile(model.forward, mode="reduce-overhead", fullgraph=True)
            with torch.inference_mode():
                gen_model.generate(ids, max_new_tokens=8, min_new_tokens=8, **kw)  # warm-up
                torch.cuda.synchronize()
                for n_new, tag in ((1, "prefill"), (a.gen, "full")):
                    s = now_trace_s(t0)
                    out = gen_model.generate(ids, max_new_tokens=n_new, min_new_tokens=n_new, **kw)
                    torch.cuda.synchronize()
                    e = now_trace_s(t0)
                    assert out.shape[1] == a.prompt_len + n_new, out.shape
                    marks.write(f"{label} {tag},{s:.6f},{e:.6f},{batch * n_new},\n")
                    marks.flush()
                    print(f"{label} {tag}: {batch * n_new} tokens in {e - s:.3f} s", file=sys.stderr)
        except Exception as exc:  # reported in the table, e.g. a CUDA-graph error of compile
            msg = str(exc).splitlines()[0][:120].replace(",", ";") if str(exc) else type(exc).__name__
            marks.write(f"{label} failed,0,0,0,{msg}\n")
            print(f"{label}: failed: {msg}", file=sys.stderr)
        marks.flush()
    marks.close()


if __name__ == "__main__":
    main()
