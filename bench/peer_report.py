#!/usr/bin/env python3
"""peer_report.py — the tables of bench/peer-check.sh (issue 62), from what the tools wrote.

  peer_report.py peer RUNS.csv METER.json PEER.json [--csv OUT.csv]
      ecocompute's decode against bench/torch_graph_peer.py's, per batch size: tok/s and
      decode J/1k tokens (gross and net) of both, and ours as ratios to the peer's.
  peer_report.py formats RUNS.csv MODELS.csv READ_BYTES_PER_S [--csv OUT.csv]
      every format and batch size: decode tok/s, % of the read-bandwidth roofline, decode
      J/1k tokens (gross and net), and the verdict of each issue 62 target.

RUNS.csv: `ecocompute export` of the bench database (one row per measured run). METER.json:
`ecocompute meter --format json` of the peer; PEER.json: the peer's --summary. MODELS.csv:
`ecocompute models --format csv`. READ_BYTES_PER_S: `ecocompute calibrate`'s read bandwidth.

Decode figures on both sides are per decode phase (gen - 1 steps after the prefill's first
token): tok/s = decode tokens / decode seconds, J/1k = decode energy × 1000 / decode tokens.
Net = gross − idle power × time: ours with bench's idle baseline (its backend loaded), the
peer's with its own `idle` window (the model and a CUDA context resident). The peer's windows
with edges at counter updates (work_s, end_wait_s in its summary) count tok/s over the work
and take the closing wait off at idle power, as bench's aligned windows do. Values are means
over runs (windows); n says how many.
"""
import argparse
import csv
import json
import math
import statistics
import sys

# Issue 62's targets: batch 1, every fused format >= 80 % of roofline; batch 2-16 >= 70 %;
# batch 32-64, every quantized format's J/1k (gross and net) <= fp16's of the same batch.
ROOFLINE_TARGETS = ((1, 1, 80.0), (2, 16, 70.0))
ENERGY_BATCHES = (32, 64)


def num(v):
    try:
        x = float(v)
    except (TypeError, ValueError):
        return math.nan
    return x


def mean(v):
    v = [x for x in v if not math.isnan(x)]
    return statistics.fmean(v) if v else math.nan


def sd(v):
    v = [x for x in v if not math.isnan(x)]
    return statistics.stdev(v) if len(v) > 1 else math.nan


def fmt(x, digits=1):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:,.{digits}f}"


def ours_by_config(path):
    """Mean decode figures of each configuration in an export: key (model, precision,
    kernels, batch, prompt, gen) -> dict."""
    groups = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            key = (r["model"], r["precision"], r["kernels"], int(r["batch"]),
                   int(r["prompt_len"]), int(r["gen_len"]))
            groups.setdefault(key, []).append(r)
    out = {}
    for key, rs in groups.items():
        toks = [num(r["decode_tokens"]) for r in rs]
        tok_s = [num(r["tok_s"]) for r in rs]
        gross = [1e3 * num(r["decode_gpu_energy_j"]) / t for r, t in zip(rs, toks)]
        net = [1e3 * num(r["decode_gpu_energy_net_j"]) / t for r, t in zip(rs, toks)]
        out[key] = dict(n=len(rs), gate=rs[-1].get("gate", ""), tok_s=mean(tok_s),
                        tok_s_sd=sd(tok_s), gross=mean(gross), gross_sd=sd(gross),
                        net=mean(net), net_sd=sd(net),
                        gap=max((abs(num(r.get("disagreement_pct"))) for r in rs
                                 if not math.isnan(num(r.get("disagreement_pct")))),
                                default=math.nan))
    return out


def peer_by_batch(meter_path, summary_path):
    """The peer's decode figures per batch size from its meter windows; and its summary."""
    with open(meter_path) as f:
        meter = json.load(f)
    with open(summary_path) as f:
        summ = json.load(f)
    wins = meter.get("windows") or {}
    idle_w = math.nan
    if summ.get("idle_window") in wins:
        w = wins[summ["idle_window"]]
        idle_w = num(w["gpu_energy_j"]) / num(w["duration_s"])
    out = {}
    for rec in summ["batches"]:
        tok_s, gross, net = [], [], []
        for w in rec.get("windows", []):
            m = wins.get(w["name"])
            if not m or m.get("unclosed"):
                continue
            secs, e = num(m["duration_s"]), num(m["gpu_energy_j"])
            # Edges at counter updates: the work's own seconds, and the wait for the closing
            # update taken off at idle power, as bench does (without an idle figure it stays).
            wait = w.get("end_wait_s", 0.0) if not math.isnan(idle_w) else 0.0
            tok_s.append(w["tokens"] / w.get("work_s", secs))
            gross.append(1e3 * (e - idle_w * wait if wait else e) / w["tokens"])
            net.append(1e3 * (e - idle_w * secs) / w["tokens"])
        out[rec["batch"]] = dict(n=len(tok_s), tok_s=mean(tok_s), tok_s_sd=sd(tok_s),
                                 gross=mean(gross), net=mean(net), check=rec.get("check"),
                                 graphs=rec.get("graphs"), error=rec.get("error"))
    return out, summ, idle_w


def ratio(a, b):
    return a / b if b and not math.isnan(a) and not math.isnan(b) else math.nan


def check_text(c):
    if not c:
        return "no self-check"
    # Where they differ, the share of equal tokens (summaries from before it was kept lack it)
    same = c.get("graph_token_agreement")
    differ = "" if c["graph_equals_eager"] or same is None else f" ({100 * same:.1f} % equal)"
    return (f"graph {'==' if c['graph_equals_eager'] else '!='} eager over {c['steps']} steps"
            f"{differ}; "
            f"full forward agrees on {100 * c['reference_token_agreement']:.0f} % of tokens, "
            f"max |Δlogit| {c['max_abs_logit_diff']:.3g} of {c['max_abs_logit']:.3g}")


def print_table(head, rows):
    w = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    for r in [head] + rows:
        print("  ".join(str(x).rjust(n) if i else str(x).ljust(n)
                        for i, (x, n) in enumerate(zip(r, w))))


def report_peer(a):
    ours = ours_by_config(a.runs)
    peer, summ, idle_w = peer_by_batch(a.meter, a.peer)
    model, P, G = summ["model"], summ["prompt_len"], summ["gen"]
    head = ["batch", "ours tok/s", "peer tok/s", "ratio", "ours J/1k gross", "net",
            "peer J/1k gross", "net", "ratio gross", "net"]
    rows, csv_rows = [], []
    for b in sorted(peer):
        o = ours.get((model, "fp16", "fused", b, P, G))
        p = peer[b]
        if o is None:
            print(f"peer_report: no ecocompute runs of {model} fp16 fused batch {b}, "
                  f"prompt {P}, gen {G} in {a.runs}", file=sys.stderr)
            o = dict(n=0, tok_s=math.nan, tok_s_sd=math.nan, gross=math.nan, net=math.nan,
                     gate="")
        r_tok = ratio(o["tok_s"], p["tok_s"])
        r_gross, r_net = ratio(o["gross"], p["gross"]), ratio(o["net"], p["net"])
        rows.append([b, fmt(o["tok_s"]), fmt(p["tok_s"]), fmt(r_tok, 2), fmt(o["gross"]),
                     fmt(o["net"]), fmt(p["gross"]), fmt(p["net"]), fmt(r_gross, 2),
                     fmt(r_net, 2)])
        csv_rows.append(dict(model=model, batch=b, prompt_len=P, gen=G, ours_n=o["n"],
                             ours_gate=o["gate"], ours_tok_s=o["tok_s"],
                             ours_tok_s_sd=o["tok_s_sd"], peer_n=p["n"], peer_tok_s=p["tok_s"],
                             peer_tok_s_sd=p["tok_s_sd"], tok_s_ratio=r_tok,
                             ours_j_per_1k_gross=o["gross"], ours_j_per_1k_net=o["net"],
                             peer_j_per_1k_gross=p["gross"], peer_j_per_1k_net=p["net"],
                             j_ratio_gross=r_gross, j_ratio_net=r_net,
                             peer_graph_equals_eager=(p["check"] or {}).get("graph_equals_eager"),
                             peer_error=p["error"] or ""))
    print(f"{model}, fp16, prompt {P}, {G} new tokens: decode, ecocompute (fused) against the "
          f"CUDA-graph PyTorch peer (torch {summ.get('torch')}, {summ.get('device')}); "
          f"ratio = ours / peer")
    print_table(head, rows)
    print(f"peer idle (model resident): {fmt(idle_w)} W; attention buckets of "
          f"{summ.get('bucket')} positions; window edges: {summ.get('edges', 'plain')}")
    for b in sorted(peer):
        o = ours.get((model, "fp16", "fused", b, P, G)) or {}
        p = peer[b]
        line = p["error"] and f"failed: {p['error']}" or check_text(p["check"])
        print(f"batch {b}: ours n={o.get('n', 0)} gate {o.get('gate') or '–'}; peer n={p['n']}, "
              f"{p['graphs'] or '–'} graphs, {line}")
    write_csv(a.csv, csv_rows)


def model_row(path, name):
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["name"] == name:
                return r
    return None


def step_bytes(mrow, precision, batch, context):
    """The bytes a decode step must read, as `run --energy` counts them
    (ec_decode_step_bytes, src/engine/roofline.c): the weights, less an untied embedding
    table (only indexed), plus K and V (16-bit) of every layer and KV head over the context
    of each sequence. NaN when the catalog lists no size for the precision."""
    col = {"int8-mixed": "int8", "bf16": "fp16"}.get(precision, precision) + "_gb"
    if col not in mrow:
        return math.nan
    dim, heads, kv = int(mrow["dim"]), int(mrow["heads"]), int(mrow["kv_heads"])
    layers, hidden, vocab = int(mrow["layers"]), int(mrow["hidden_dim"]), int(mrow["vocab"])
    hd = dim // heads
    # The catalog does not print whether the head is tied: an untied head adds vocab x dim
    # parameters, which the printed parameter count (1e6 resolution) shows.
    body = vocab * dim + layers * (dim * (heads + 2 * kv) * hd + heads * hd * dim +
                                   3 * dim * hidden + 2 * dim) + dim
    params = num(mrow["params_b"]) * 1e9
    untied = abs(params - (body + vocab * dim)) < abs(params - body)
    w = num(mrow[col]) * 1e9 - (vocab * dim * 2 if untied else 0)
    return w + 2.0 * layers * kv * hd * 2.0 * context * batch


def report_formats(a):
    ours = ours_by_config(a.runs)
    bw = float(a.read_bw)
    rows, csv_rows, verdicts = [], [], []
    fp16 = {(k[0], k[3], k[4], k[5]): v for k, v in ours.items() if k[1] == "fp16"}
    for key in sorted(ours, key=lambda k: (k[0], k[3], k[2], k[1])):
        model, prec, kern, b, P, G = key
        o = ours[key]
        mrow = model_row(a.models, model)
        sb = step_bytes(mrow, prec, b, P + G / 2.0) if mrow else math.nan
        roof = 100.0 * o["tok_s"] * sb / (b * bw) if bw > 0 else math.nan
        base = fp16.get((model, b, P, G))
        d_gross = 100 * (o["gross"] / base["gross"] - 1) if base and prec != "fp16" else math.nan
        d_net = 100 * (o["net"] / base["net"] - 1) if base and prec != "fp16" else math.nan
        target = ""
        if kern == "fused":
            for lo, hi, pct in ROOFLINE_TARGETS:
                if lo <= b <= hi:
                    ok = roof >= pct
                    target = f"roofline >= {pct:.0f} %: {'pass' if ok else 'FAIL'}"
                    span = f"{lo}" if lo == hi else f"{lo}-{hi}"
                    verdicts.append((f"batch {span} >= {pct:.0f} % roofline", ok,
                                     f"{prec} b{b} {fmt(roof)} %"))
            if ENERGY_BATCHES[0] <= b <= ENERGY_BATCHES[1] and prec != "fp16":
                ok = base is not None and d_gross <= 0 and d_net <= 0
                target = (target + "; " if target else "") + \
                    f"J/1k <= fp16: {'pass' if ok else 'FAIL'}"
                verdicts.append((f"batch {ENERGY_BATCHES[0]}-{ENERGY_BATCHES[1]} J/1k <= fp16",
                                 ok, f"{prec} b{b} {d_gross:+.1f} % / {d_net:+.1f} %"))
        rows.append([model, b, prec, kern, o["n"], fmt(o["tok_s"]), fmt(roof),
                     fmt(o["gross"]), fmt(o["net"]),
                     "–" if math.isnan(d_gross) else f"{d_gross:+.1f} / {d_net:+.1f}", target])
        csv_rows.append(dict(model=model, batch=b, precision=prec, kernels=kern,
                             prompt_len=P, gen=G, n=o["n"], gate=o["gate"], tok_s=o["tok_s"],
                             tok_s_sd=o["tok_s_sd"], roofline_pct=roof,
                             step_bytes=sb, read_bytes_per_s=bw,
                             j_per_1k_gross=o["gross"], j_per_1k_net=o["net"],
                             delta_gross_pct=d_gross, delta_net_pct=d_net,
                             meter_gap_pct=o["gap"], target=target))
    P, G = (next(iter(ours))[4:6]) if ours else (0, 0)
    print(f"decode, prompt {P}, {G} new tokens; roofline against {bw / 1e9:,.0f} GB/s read; "
          f"J/1k decode, Δ vs fp16 of the same batch (gross / net)")
    print_table(["model", "batch", "precision", "kernels", "n", "tok/s", "roofline %",
                 "J/1k gross", "net", "Δ % vs fp16", "issue 62 target"], rows)
    for name in dict.fromkeys(v[0] for v in verdicts):
        got = [v for v in verdicts if v[0] == name]
        fails = [v[2] for v in got if not v[1]]
        print(f"target {name}: " + ("pass" if not fails else
                                    f"{len(fails)} of {len(got)} miss: " + ", ".join(fails)))
    write_csv(a.csv, csv_rows)


def write_csv(path, rows):
    if not path or not rows:
        return
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) and not math.isnan(v)
                            else "" if isinstance(v, float) else v) for k, v in r.items()})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    p = sub.add_parser("peer")
    p.add_argument("runs")
    p.add_argument("meter")
    p.add_argument("peer")
    p.add_argument("--csv")
    f = sub.add_parser("formats")
    f.add_argument("runs")
    f.add_argument("models")
    f.add_argument("read_bw")
    f.add_argument("--csv")
    a = ap.parse_args()
    (report_peer if a.mode == "peer" else report_formats)(a)


if __name__ == "__main__":
    main()
