#!/usr/bin/env python3
"""torch_graph_peer.py — a CUDA-graph PyTorch fp16 decode with a static KV cache (gpt-fast's).

The strongest PyTorch decode that runs offline on the GPU machine, to measure ecocompute's fp16
decode against (issue 62, target 4).

A Llama decoder in plain PyTorch (no transformers; torch.compile's reduce-overhead mode failed
on that machine): random fp16 weights of a catalog shape (bench/torch_baseline.py's SHAPES),
RMSNorm, RoPE, GQA, SwiGLU; a static KV cache [batch][kv_heads][max_seq][head_dim] per layer;
the prompt prefilled in one forward (scaled_dot_product_attention, causal); each decode step
captured once into a CUDA graph and replayed, with the greedy argmax fed back on the GPU inside
the graph (position, next token and the mask live in device tensors updated in place, so a
replay needs no host work).

What makes it strong without a compiler, each a fact of how the step is written:
- one graph per 64-position bucket of the context (--bucket): a step attends to the cache up to
  its bucket's end, not to max_seq, so it reads about the KV bytes it needs (gpt-fast reads the
  whole cache every step; --bucket 0 does that);
- GQA without copies: the G query heads of a KV head are SDPA's query rows ([B][kv][G][hd]);
- fused projections (q/k/v in one matrix, gate/up in one), residual adds inside the GEMMs
  (addmm), RoPE in three kernels (rotate-half as a roll with the sign folded into the sine
  table), F.rms_norm, the additive mask built once per step;
- every elementwise op that a compiler would fuse is a kernel of its own inside the graph: that
  is the cost of running without one.

Decode is measured as ecocompute's protocol measures it (docs/measurement.md): a decode phase is
gen - 1 steps after the prefill's first token; each measured window repeats the whole phase from
the same KV position (same cache positions rewritten, same greedy tokens) until it lasts
--min-window seconds. Windows are named through the marker protocol (python/ecocompute):
`idle` (the model and context resident, nothing running: the idle power to take off for net
energy, as bench's baseline is taken with its backend loaded) and `decode_b<B>_r<i>`, their
edges at updates of the energy counter as bench's (CounterEdges). Run under
`ecocompute meter --format json -- python3 bench/torch_graph_peer.py --summary S.json`: the
meter's JSON holds each window's energy, S.json what each window did (repetitions, tokens, the
seconds of the work and of the wait for the closing update) and the self-checks. Everything
else goes to stderr (the meter's JSON is stdout).

Self-checks (printed, and kept in the summary; a failure is reported, the measurement goes on):
the graph-replayed steps give the same tokens as the same step run eagerly, and the eager
steps' tokens and logits agree with one full causal forward over prompt + generated tokens.
"""
import argparse
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))  # the marker protocol's package
sys.path.insert(0, HERE)

import ecocompute  # noqa: E402
from torch_baseline import SHAPES  # noqa: E402  (the catalog's shapes, transformers' names)


def log(msg):
    print(f"torch_graph_peer: {msg}", file=sys.stderr, flush=True)


class Model:
    """Random fp16 weights of one shape; every linear is [out][in] as F.linear takes it."""

    def __init__(self, torch, shape, max_seq, device, seed):
        self.dim = shape["hidden_size"]
        self.hidden = shape["intermediate_size"]
        self.n_layers = shape["num_hidden_layers"]
        self.heads = shape["num_attention_heads"]
        self.kv_heads = shape["num_key_value_heads"]
        self.vocab = shape["vocab_size"]
        self.head_dim = self.dim // self.heads
        self.group = self.heads // self.kv_heads  # query heads per KV head
        self.eps = 1e-5
        self.max_seq = max_seq
        hd, f16 = self.head_dim, torch.float16
        gen = torch.Generator(device=device).manual_seed(seed)

        def weight(rows, cols):  # the initializer range of Llama configs
            return torch.empty(rows, cols, dtype=f16, device=device).normal_(0, 0.02, generator=gen)

        def ones(n):
            return torch.ones(n, dtype=f16, device=device)

        self.qd, self.kd = self.heads * hd, self.kv_heads * hd
        self.emb = weight(self.vocab, self.dim)                    # [vocab][dim]
        self.layers = []
        for _ in range(self.n_layers):
            self.layers.append(dict(
                attn_norm=ones(self.dim),                          # [dim]
                wqkv=weight(self.qd + 2 * self.kd, self.dim),      # [(H + 2 Hkv) hd][dim]
                wo=weight(self.dim, self.qd),                      # [dim][H hd]
                ffn_norm=ones(self.dim),                           # [dim]
                w_gate_up=weight(2 * self.hidden, self.dim),       # [2 hidden][dim]
                w_down=weight(self.dim, self.hidden),              # [dim][hidden]
            ))
        self.final_norm = ones(self.dim)                           # [dim]
        self.lm_head = weight(self.vocab, self.dim)                # [vocab][dim], untied
        # RoPE (rotate-half convention): cos [max_seq][hd]; sin with the rotation's sign folded
        # in, so that rotate_half(x) * sin == x.roll(hd / 2) * sin_signed.
        theta = shape["rope_theta"]
        inv = 1.0 / theta ** (torch.arange(0, hd, 2, device=device, dtype=torch.float32) / hd)
        ang = torch.outer(torch.arange(max_seq, device=device, dtype=torch.float32), inv)
        ang = torch.cat([ang, ang], dim=-1)                        # [max_seq][hd]
        self.cos = ang.cos().to(f16)
        sign = torch.cat([-torch.ones(hd // 2, device=device), torch.ones(hd // 2, device=device)])
        self.sin_signed = (ang.sin() * sign).to(f16)

    def weight_bytes(self):
        per_layer = sum(t.numel() * t.element_size() for t in self.layers[0].values())
        return (self.emb.numel() + self.lm_head.numel()) * 2 + self.dim * 2 + \
            per_layer * self.n_layers


class State:
    """The decode state a graph reads and writes in place: the KV cache (views of the largest
    batch's), the next input token, its position, the generated tokens, the mask's positions."""

    def __init__(self, torch, m, k_cache, v_cache, batch, device):
        self.batch = batch
        self.k = [c[:batch] for c in k_cache]   # per layer [B][Hkv][max_seq][hd]
        self.v = [c[:batch] for c in v_cache]
        self.tok = torch.zeros(batch, dtype=torch.long, device=device)              # [B]
        self.pos = torch.zeros(1, dtype=torch.long, device=device)                  # [1]
        self.out = torch.zeros(batch, m.max_seq, dtype=torch.long, device=device)   # [B][max_seq]
        self.positions = torch.arange(m.max_seq, device=device)                     # [max_seq]


def make_ops(torch):
    F = torch.nn.functional

    if hasattr(F, "rms_norm"):
        def rms(m, x, w):
            return F.rms_norm(x, (m.dim,), w, m.eps)
    else:  # before torch 2.4
        def rms(m, x, w):
            xf = x.float()
            return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + m.eps)).to(x.dtype) * w

    def rope(x, cos, sin_signed):
        return torch.addcmul(x * cos, x.roll(x.shape[-1] // 2, dims=-1), sin_signed)

    def linear_add(x, h, w):
        """x + h @ w.T for 2-D x and h: the residual add inside the GEMM (beta = 1)."""
        return torch.addmm(x, h, w.t())

    def decode_step(m, st, end):
        """One step for every sequence: the token at st.pos in, the greedy next token written
        to st.tok and st.out[:, pos + 1], st.pos advanced. Attends to cache positions
        [0, end); positions after st.pos in that range are masked. Returns logits [B][vocab]."""
        B, G, hd = st.batch, m.group, m.head_dim
        x = F.embedding(st.tok, m.emb)                                          # [B][dim]
        cos = m.cos.index_select(0, st.pos)                                     # [1][hd]
        sin = m.sin_signed.index_select(0, st.pos)
        mask = torch.zeros(1, 1, 1, end, dtype=x.dtype, device=x.device)        # [1][1][1][end]
        mask.masked_fill_(st.positions[:end].view(1, 1, 1, end) > st.pos, float("-inf"))
        for i, L in enumerate(m.layers):
            qkv = F.linear(rms(m, x, L["attn_norm"]), L["wqkv"])                # [B][(H+2Hkv) hd]
            qk = rope(qkv[:, :m.qd + m.kd].view(B, m.heads + m.kv_heads, hd), cos, sin)
            q = qk[:, :m.heads].view(B, m.kv_heads, G, hd)                      # [B][Hkv][G][hd]
            k = qk[:, m.heads:].view(B, m.kv_heads, 1, hd)                      # [B][Hkv][1][hd]
            v = qkv[:, m.qd + m.kd:].view(B, m.kv_heads, 1, hd)
            st.k[i].index_copy_(2, st.pos, k)
            st.v[i].index_copy_(2, st.pos, v)
            a = F.scaled_dot_product_attention(q, st.k[i][:, :, :end], st.v[i][:, :, :end],
                                               attn_mask=mask)                  # [B][Hkv][G][hd]
            x = linear_add(x, a.reshape(B, m.qd), L["wo"])
            g, u = F.linear(rms(m, x, L["ffn_norm"]), L["w_gate_up"]).chunk(2, dim=-1)
            x = linear_add(x, F.silu(g) * u, L["w_down"])
        logits = F.linear(rms(m, x, m.final_norm), m.lm_head)                  # [B][vocab]
        nxt = logits.argmax(dim=-1)                                             # [B]
        st.tok.copy_(nxt)
        st.pos.add_(1)
        st.out.index_copy_(1, st.pos, nxt.view(B, 1))
        return logits

    def forward(m, st, ids):
        """Causal forward over ids [B][T] from position 0, filling cache positions [0, T).
        Returns the final-normed hidden states [B][T][dim]."""
        B, T = ids.shape
        G, hd = m.group, m.head_dim
        x = F.embedding(ids, m.emb)                                             # [B][T][dim]
        cos, sin = m.cos[:T].view(1, T, 1, hd), m.sin_signed[:T].view(1, T, 1, hd)
        for i, L in enumerate(m.layers):
            qkv = F.linear(rms(m, x, L["attn_norm"]), L["wqkv"])                # [B][T][...]
            qk = rope(qkv[..., :m.qd + m.kd].view(B, T, m.heads + m.kv_heads, hd), cos, sin)
            q = qk[:, :, :m.heads].transpose(1, 2)                              # [B][H][T][hd]
            k = qk[:, :, m.heads:].transpose(1, 2)                              # [B][Hkv][T][hd]
            v = qkv[..., m.qd + m.kd:].view(B, T, m.kv_heads, hd).transpose(1, 2)
            st.k[i][:, :, :T].copy_(k)
            st.v[i][:, :, :T].copy_(v)
            if G > 1:
                k, v = k.repeat_interleave(G, dim=1), v.repeat_interleave(G, dim=1)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)         # [B][H][T][hd]
            x = x + F.linear(a.transpose(1, 2).reshape(B, T, m.qd), L["wo"])
            g, u = F.linear(rms(m, x, L["ffn_norm"]), L["w_gate_up"]).chunk(2, dim=-1)
            x = x + F.linear(F.silu(g) * u, L["w_down"])
        return rms(m, x, m.final_norm)

    return decode_step, forward


class Peer:
    """One batch size: prefill, the captured decode graphs, and decode phases by replay."""

    def __init__(self, torch, ops, m, st, prompt, gen, bucket):
        self.torch, self.m, self.st, self.prompt, self.gen = torch, m, st, prompt, gen
        self.decode_step, self.forward = ops
        P = prompt.shape[1]
        # The attention end of the step whose input sits at position p (p = P .. P + gen - 2).
        self.plan = [m.max_seq if bucket <= 0 else min(m.max_seq, -(-(p + 1) // bucket) * bucket)
                     for p in range(P, P + gen - 1)]
        self.graphs = {}
        self.first = None

    def prefill(self):
        """Prompt forward; the first generated token is the argmax at the last position."""
        torch, m, st = self.torch, self.m, self.st
        h = self.forward(m, st, self.prompt)
        first = torch.nn.functional.linear(h[:, -1], m.lm_head).argmax(dim=-1)
        self.first = first
        return first

    def reset(self):
        """Back to the state right after the prefill: the first token at position P."""
        P = self.prompt.shape[1]
        self.st.tok.copy_(self.first)
        self.st.pos.fill_(P)
        self.st.out[:, P].copy_(self.first)

    def capture(self):
        """One graph per distinct attention end, each after two eager steps on a side stream
        (cuBLAS and the allocator set themselves up outside the capture)."""
        torch = self.torch
        for end in sorted(set(self.plan)):
            self.reset()
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(2):
                    self.decode_step(self.m, self.st, end)
            torch.cuda.current_stream().wait_stream(side)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                self.decode_step(self.m, self.st, end)
            self.graphs[end] = g
        self.reset()
        torch.cuda.synchronize()

    def eager_steps(self, n):
        """n decode steps without graphs from the first token; their logits [n][B][vocab]."""
        self.reset()
        return [self.decode_step(self.m, self.st, end).float() for end in self.plan[:n]]

    def graph_steps(self, n):
        self.reset()
        for end in self.plan[:n]:
            self.graphs[end].replay()

    def decode_phase(self):
        """The whole decode phase by replay: gen - 1 steps from the first token."""
        self.reset()
        for end in self.plan:
            self.graphs[end].replay()

    def generated(self, n):
        P = self.prompt.shape[1]
        return self.st.out[:, P + 1:P + 1 + n].clone()          # [B][n]


def self_check(torch, peer, steps):
    """Graph replay against eager steps, and eager steps against one full causal forward."""
    m, P = peer.m, peer.prompt.shape[1]
    logits_eager = peer.eager_steps(steps)
    tok_eager = peer.generated(steps)
    peer.graph_steps(steps)
    tok_graph = peer.generated(steps)
    # One forward over prompt + [first, e1 .. e_{n-1}]: positions P .. P + n - 1 predict e1 .. e_n.
    ids = torch.cat([peer.prompt, peer.first.view(-1, 1), tok_eager[:, :steps - 1]], dim=1)
    h = peer.forward(m, peer.st, ids)
    ref = torch.nn.functional.linear(h[:, P:], m.lm_head).float()             # [B][steps][vocab]
    eager = torch.stack(logits_eager, dim=1)                                    # [B][steps][vocab]
    diff = (eager - ref).abs().max().item()
    scale = ref.abs().max().item()
    agree = (ref.argmax(dim=-1) == tok_eager).float().mean().item()
    peer.prefill()  # the cache as the prefill leaves it, for the measured phases
    return dict(graph_equals_eager=bool(torch.equal(tok_eager, tok_graph)),
                graph_token_agreement=(tok_eager == tok_graph).float().mean().item(),
                steps=steps, tokens_eager=tok_eager[0].tolist(), tokens_graph=tok_graph[0].tolist(),
                reference_token_agreement=agree, max_abs_logit_diff=diff, max_abs_logit=scale)


class CounterEdges:
    """Window edges at updates of the GPU's NVML energy counter, as bench's aligned windows
    have them (docs/measurement.md): the counter moves about every 0.1 s, and a window whose
    edges fall between updates reads stale energy at both ends (on ~1 s windows 3.5 % RMS
    against 0.4 % aligned, docs/results.md). The meter reads the counter when it reads a mark,
    so a mark written just after an update gets that update's value. NVML through ctypes (the
    driver's library; no Python binding needed), GPU 0: the GPU machine has one GPU."""

    def __init__(self):
        import ctypes
        self.ct = ctypes
        self.nvml = ctypes.CDLL("libnvidia-ml.so.1")
        self.handle = ctypes.c_void_p()
        self.mj = ctypes.c_ulonglong()
        if self.nvml.nvmlInit_v2() != 0 or self.nvml.nvmlDeviceGetHandleByIndex_v2(
                ctypes.c_uint(0), ctypes.byref(self.handle)) != 0:
            raise OSError("NVML: no GPU 0")
        self.read()

    def read(self):
        if self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle, self.ct.byref(self.mj)):
            raise OSError("NVML: no energy counter")
        return self.mj.value

    def wait_update(self, limit_s=0.5):
        """Returns right after the counter moved (or after limit_s)."""
        v0, t0 = self.read(), time.perf_counter()
        while self.read() == v0 and time.perf_counter() - t0 < limit_s:
            pass


def counter_edges():
    try:
        return CounterEdges()
    except OSError as exc:
        log(f"window edges not aligned to counter updates: {exc}")
        return None


def aligned_window(edges, name, work):
    """Runs work() inside window `name`, its edges at counter updates when edges is given.
    Returns work()'s value, its seconds, and the wait after it for the closing update (its
    energy, at idle power, is the report's to take off as bench does)."""
    if edges:
        edges.wait_update()
    ecocompute.begin_window(name)
    t0 = time.perf_counter()
    value = work()
    t1 = time.perf_counter()
    if edges:
        edges.wait_update()
    ecocompute.end_window(name)
    return value, t1 - t0, time.perf_counter() - t1


def measure(torch, peer, edges, name, min_window, estimate_s):
    """One window named `name` of whole decode phases, repeated until it lasts min_window s
    (first as many as the estimate says, then one more at a time): ecocompute's protocol.
    Returns the phases, their seconds and the closing wait."""
    def work():
        reps = max(1, math.ceil(min_window / estimate_s)) if min_window > 0 else 1
        t0 = time.perf_counter()
        for _ in range(reps):
            peer.decode_phase()
        torch.cuda.synchronize()
        while time.perf_counter() - t0 < min_window:
            peer.decode_phase()
            reps += 1
            torch.cuda.synchronize()
        return reps

    torch.cuda.synchronize()
    return aligned_window(edges, name, work)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="Llama-2-7B", choices=sorted(SHAPES))
    ap.add_argument("--batch", default="1,8,64", help="comma-separated batch sizes")
    ap.add_argument("--prompt-len", type=int, default=512)
    ap.add_argument("--gen", type=int, default=256, help="new tokens per sequence (>= 3)")
    ap.add_argument("--runs", type=int, default=3, help="measured windows per batch size")
    ap.add_argument("--warmup", type=int, default=3, help="decode phases before measuring")
    ap.add_argument("--min-window", type=float, default=5.0,
                    help="seconds each measured window lasts at least (0: one phase)")
    ap.add_argument("--idle", type=float, default=5.0,
                    help="seconds of the `idle` window (model resident), 0: none")
    ap.add_argument("--stabilize", type=float, default=0.0,
                    help="seconds to wait before each batch size but the first")
    ap.add_argument("--bucket", type=int, default=64,
                    help="positions per attention bucket (one graph each); 0: attend to "
                         "the whole cache every step, as gpt-fast does")
    ap.add_argument("--check-steps", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--summary", required=True, help="JSON file to write")
    a = ap.parse_args()
    batches = [int(b) for b in a.batch.split(",")]
    if a.gen < 3 or a.prompt_len < 1 or min(batches) < 1 or a.runs < 1:
        ap.error("--gen must be >= 3, --prompt-len, --runs and every batch >= 1")
    ecocompute.configure(strict=False)  # unmetered it still runs and times (a warning says so)

    import torch
    torch.set_grad_enabled(False)
    dev = torch.device("cuda")
    max_seq = a.prompt_len + a.gen
    summary = dict(model=a.model, torch=torch.__version__, cuda=torch.version.cuda,
                   device=torch.cuda.get_device_name(dev), prompt_len=a.prompt_len, gen=a.gen,
                   bucket=a.bucket, min_window_s=a.min_window, idle_window=None, batches=[])

    def save():
        with open(a.summary + ".part", "w") as f:
            json.dump(summary, f, indent=1)
        os.replace(a.summary + ".part", a.summary)

    t = time.perf_counter()
    m = Model(torch, SHAPES[a.model], max_seq, dev, a.seed)
    bmax = max(batches)
    k_cache = [torch.zeros(bmax, m.kv_heads, max_seq, m.head_dim, dtype=torch.float16, device=dev)
               for _ in range(m.n_layers)]
    v_cache = [torch.zeros_like(c) for c in k_cache]
    gen = torch.Generator(device=dev).manual_seed(a.seed)
    prompts = torch.randint(3, m.vocab, (bmax, a.prompt_len), device=dev, generator=gen)
    torch.cuda.synchronize()
    summary["weight_bytes"] = m.weight_bytes()
    log(f"{a.model}: {m.weight_bytes() / 1e9:.2f} GB of weights, KV cache for batch {bmax} "
        f"x {max_seq} positions, in {time.perf_counter() - t:.1f} s; torch {torch.__version__}")
    edges = counter_edges()
    summary["edges"] = "counter updates" if edges else "plain"
    if a.idle > 0:
        summary["idle_window"] = "idle"
        aligned_window(edges, "idle", lambda: time.sleep(a.idle))
    save()
    ops = make_ops(torch)
    for n, b in enumerate(batches):
        rec = dict(batch=b, decode_steps=a.gen - 1, tokens_per_phase=b * (a.gen - 1), windows=[])
        summary["batches"].append(rec)
        peer = None
        try:
            if n > 0 and a.stabilize > 0:
                time.sleep(a.stabilize)
            peer = Peer(torch, ops, m, State(torch, m, k_cache, v_cache, b, dev), prompts[:b],
                        a.gen, a.bucket)
            peer.prefill()
            peer.capture()
            rec["graphs"] = len(peer.graphs)
            rec["check"] = self_check(torch, peer, min(a.check_steps, a.gen - 1))
            c = rec["check"]
            log(f"batch {b}: self-check: graph tokens {'==' if c['graph_equals_eager'] else '!='}"
                f" eager tokens ({100 * c['graph_token_agreement']:.1f} % equal; row 0: eager "
                f"{c['tokens_eager']}, graph {c['tokens_graph']}); eager vs full "
                f"forward: tokens agree {100 * c['reference_token_agreement']:.1f} %, max |logit "
                f"diff| {c['max_abs_logit_diff']:.4f} of max |logit| {c['max_abs_logit']:.3f}")
            for _ in range(a.warmup):
                peer.decode_phase()
            torch.cuda.synchronize()
            t = time.perf_counter()
            peer.decode_phase()
            torch.cuda.synchronize()
            rec["phase_s_estimate"] = est = time.perf_counter() - t
            for r in range(a.runs):
                name = f"decode_b{b}_r{r + 1}"
                reps, secs, wait = measure(torch, peer, edges, name, a.min_window, est)
                rec["windows"].append(dict(name=name, repeats=reps, work_s=secs,
                                           end_wait_s=wait, tokens=reps * rec["tokens_per_phase"]))
                log(f"batch {b}: {name}: {reps} phases in {secs:.2f} s, "
                    f"{reps * rec['tokens_per_phase'] / secs:.1f} tok/s, "
                    f"{1e3 * secs / (reps * (a.gen - 1)):.3f} ms a step")
        except Exception as exc:  # an OOM or a capture error at one batch: reported, go on
            msg = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
            rec["error"] = msg
            log(f"batch {b}: failed: {msg}")
        peer = None  # its graphs and their memory pools go before the next batch size
        torch.cuda.empty_cache()
        save()
    log(f"summary in {a.summary}")


if __name__ == "__main__":
    main()
