#!/usr/bin/env python3
"""report.py OUTDIR — the one table of bench/gpu.sh: ecocompute's fp16 decode (from `run
--energy --format csv` rows in OUTDIR/ecocompute.csv) next to PyTorch + transformers (from
OUTDIR/torch_*.energy.csv written by trace_energy.py), same shapes, same GPU, same meter.

Decode figures only (prefill excluded on both sides). Energies are GPU board energy: gross, and
net of the idle power measured in the same process with the model loaded. Roofline % uses the
calibrated read bandwidth; for PyTorch it is ecocompute's bytes per step over its time per step.
"""
import csv
import glob
import os
import sys


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return float("nan")


def torch_rows(path):
    """{(model, batch): dict} of decode figures from one trace_energy.py output."""
    rows = read_csv(path)
    by = {r["label"]: r for r in rows}
    idle = {r["label"][5:]: num(r["avg_power_w"]) for r in rows if r["label"].startswith("idle ")}
    out = {}
    for label, r in by.items():
        if not label.endswith(" full"):
            if label.endswith(" failed"):
                mode, model, b = label[:-7].split(" ")
                out[(mode, model, int(b[1:]))] = {"failed": r["note"]}
            continue
        mode, model, b = label[:-5].split(" ")
        pre = by.get(label[:-5] + " prefill")
        batch = int(b[1:])
        secs = num(r["seconds"]) - num(pre["seconds"])
        energy = num(r["energy_j_gross"]) - num(pre["energy_j_gross"])
        gen = int(r["tokens"]) // batch
        tokens = batch * (gen - 1)
        out[(mode, model, batch)] = {
            "tok_s": tokens / secs, "ms_step": 1e3 * secs / (gen - 1),
            "j1k_gross": 1e3 * energy / tokens,
            "j1k_net": 1e3 * (energy - idle.get(model, float("nan")) * secs) / tokens,
            "avg_w": energy / secs}
    return out


def main():
    d = sys.argv[1]
    eco = read_csv(os.path.join(d, "ecocompute.csv"))
    torch = {}
    for p in sorted(glob.glob(os.path.join(d, "torch_*.energy.csv"))):
        torch.update(torch_rows(p))
    hdr = ["stack", "model", "batch", "tok/s", "ms/step", "roofline %", "J/1k gross",
           "J/1k net", "avg W", "vs eager tok/s", "vs eager J gross"]
    table = []
    for r in eco:
        model, batch = r["model"], int(r["batch"])
        tok_s, roof = num(r["decode_tok_per_s"]), num(r["roofline_pct"])
        j_gross = num(r["decode_j_per_1k_tok_gross"])
        eager = torch.get(("eager", model, batch), {})
        table.append(["ecocompute fp16", model, batch, tok_s, num(r["decode_ms_per_step"]), roof,
                      j_gross, num(r["decode_j_per_1k_tok_net"]), num(r["decode_avg_power_w"]),
                      tok_s / eager.get("tok_s", float("nan")),
                      j_gross / eager.get("j1k_gross", float("nan"))])
        for mode in ("eager", "compile"):
            t = torch.get((mode, model, batch))
            if not t:
                continue
            name = "transformers " + ("eager" if mode == "eager" else "static+compile")
            if "failed" in t:
                table.append([name, model, batch, "failed: " + t["failed"]] + [""] * 7)
                continue
            table.append([name, model, batch, t["tok_s"], t["ms_step"], roof * t["tok_s"] / tok_s,
                          t["j1k_gross"], t["j1k_net"], t["avg_w"], "", ""])

    def fmt(v):
        if isinstance(v, float):
            return "-" if v != v else (f"{v:.2f}" if abs(v) < 100 else f"{v:.0f}")
        return str(v)

    cells = [hdr] + [[fmt(v) for v in row] for row in table]
    widths = [max(len(row[i]) for row in cells if i < len(row)) for i in range(len(hdr))]
    for row in cells:
        print("  ".join(c.ljust(w) if i < 2 else c.rjust(w)
                        for i, (c, w) in enumerate(zip(row, widths))))


if __name__ == "__main__":
    main()
