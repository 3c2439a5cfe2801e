#!/usr/bin/env python3
"""report_sweep.py OUT_DIR — markdown tables of the sweeps of issues #5 and #7 (bench/gpu.sh
sweep:..., eval, outliers): per model, batch, kernel family and precision, decode tok/s, energy
per 1000 generated tokens gross and net, average power, the change against fp16 of the same
kernel family, model, batch and lengths, the meter gap (energy counter vs integrated instant
power, flagged with ‡ above 5 % together with the deltas it touches), KL and top-1 agreement vs
float32, and int8-mixed's outlier columns; then `ecocompute analyze --table crossover` per
kernel family.

Reads the runs through `ecocompute export --format csv` (docs/data-schema.md), not the database
schema; OUT_DIR/eval/MODEL.csv (`ecocompute eval --format csv`) and OUT_DIR/outliers.csv (written
by gpu.sh from `run --verbose`). The binary is $ECOCOMPUTE, else build/ecocompute of this tree.
Python standard library only.

Energy per 1k tokens is bench's: the whole run's GPU energy (prefill + decode) per batch x gen
generated tokens; "prefill J" is the prefill window's energy (the same prompt tokens for every
precision of a model and batch); "decode J/1k" is the decode window alone per decode token,
comparable to `ecocompute run --energy`'s decode figures. At batch 64 with a 512-token
prompt the prefill is a large share of the whole run (about half with 128 new tokens), so the
whole run and both windows are shown, each with its Δ. Net = gross - the session's idle power x
time.
"""
import csv
import io
import math
import os
import subprocess
import sys

# A run whose energy counter and integrated instant power disagree by more than this (the
# threshold of `ecocompute meter`'s warning) has a window too short for the counter's ~100 ms
# steps (DESIGN §4): its energy, and any Δ against it, is flagged as no finding.
METER_GAP_WARN_PCT = 5.0


def noisy(gap):
    """Whether a meter gap (in %) flags its run; NaN (no cross-check) does not."""
    return gap > METER_GAP_WARN_PCT


PRECISION_ORDER = ["f32", "fp16", "bf16", "int8", "int8-mixed", "nf4", "nf4-dq", "fp8"]
KERNELS_ORDER = ["fused", "reference"]


def binary():
    if os.environ.get("ECOCOMPUTE"):
        return os.environ["ECOCOMPUTE"]
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "ecocompute")


def ecocompute(*args):
    """stdout of one ecocompute command; its stderr (notes, counts) is dropped."""
    r = subprocess.run([binary(), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if r.returncode != 0:
        sys.exit(f"report_sweep.py: ecocompute {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def mean(values):
    v = [x for x in values if not math.isnan(x)]
    return sum(v) / len(v) if v else math.nan


def order(value, known):
    return (known.index(value), value) if value in known else (len(known), value)


def fmt(v, kind="num"):
    """Cell text: '-' for unknown, thousands separators for large numbers."""
    if isinstance(v, str):
        return v or "-"
    if v is None or math.isnan(v):
        return "-"
    if kind == "pct":
        return f"{v:+.1f} %"
    if kind == "ratio":
        return f"{v:.2f}"
    if kind == "sci":
        return f"{v:.2e}"
    if kind == "cols":
        return f"{v:.2f}"
    if kind == "gap":
        return f"{v:.1f}"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"


def markdown(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def configurations(db):
    """{key: figures} with key = (model, kernels, device, batch, prompt, gen, precision); the
    runs of a configuration (its final attempt, as export gives them) averaged."""
    groups = {}
    for r in csv.DictReader(io.StringIO(ecocompute("export", "--db", db, "--format", "csv"))):
        key = (r["model"], r["kernels"], r["device"], int(r["batch"]), int(r["prompt_len"]),
               int(r["gen_len"]), r["precision"])
        groups.setdefault(key, []).append(r)
    out = {}
    for key, rs in groups.items():
        dec = [1e3 * num(r["decode_gpu_energy_j"]) / num(r["decode_tokens"])
               if num(r["decode_tokens"]) > 0 else math.nan for r in rs]
        out[key] = {
            "n": len(rs), "gate": rs[0]["gate"], "params_b": num(rs[0]["params_b"]),
            "gpu": rs[0]["gpu_name"], "driver": rs[0]["driver"], "commit": rs[0]["git_commit"],
            "tok_s": mean(num(r["tok_s"]) for r in rs),
            "j_gross": mean(num(r["j_per_1k_gross"]) for r in rs),
            "j_net": mean(num(r["j_per_1k_net"]) for r in rs),
            "j_pre": mean(num(r.get("prefill_gpu_energy_j")) for r in rs),
            "j_dec": mean(dec),
            "w": mean(num(r["avg_power_w"]) for r in rs),
            "idle_w": mean(num(r["idle_power_w"]) for r in rs),
            "gap": max((abs(num(r.get("disagreement_pct"))) for r in rs), default=math.nan),
        }
    return out


def eval_results(out_dir):
    """{(model, precision): row} from OUT_DIR/eval/MODEL.csv."""
    res = {}
    d = os.path.join(out_dir, "eval")
    if not os.path.isdir(d):
        return res
    for name in sorted(os.listdir(d)):
        if not name.endswith(".csv"):
            continue
        with open(os.path.join(d, name)) as f:
            for r in csv.DictReader(f):
                res[(name[:-4], r["precision"])] = r
    return res


def outlier_results(out_dir):
    """{(model, batch): mean outlier columns per call} from OUT_DIR/outliers.csv."""
    path = os.path.join(out_dir, "outliers.csv")
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return {(r["model"], int(r["batch"])): num(r["mean_outlier_columns"])
                for r in csv.DictReader(f)}


def sweep_tables(cfg, evals, outliers):
    """One section per (prompt, gen) pair, one table per model, sorted by size."""
    parts = []
    for plen, gen in sorted({(k[4], k[5]) for k in cfg}):
        keys = [k for k in cfg if (k[4], k[5]) == (plen, gen)]
        precs = sorted({k[6] for k in keys}, key=lambda p: order(p, PRECISION_ORDER))
        parts.append(f"## Prompt {plen}, {gen} new tokens: {', '.join(precs)}\n")
        models = sorted({k[0] for k in keys}, key=lambda m: (cfg[next(
            k for k in keys if k[0] == m)]["params_b"], m))
        for model in models:
            mk = sorted((k for k in keys if k[0] == model),
                        key=lambda k: (k[3], order(k[1], KERNELS_ORDER), k[2],
                                       order(k[6], PRECISION_ORDER)))
            params = cfg[mk[0]]["params_b"]
            parts.append(f"### {model} ({params:.2f} B parameters)\n")
            header = ["batch", "kernels", "precision", "runs", "tok/s", "speed vs fp16",
                      "J/1k gross", "J/1k net", "ΔE gross", "ΔE net", "prefill J gross",
                      "ΔE prefill gross", "decode J/1k gross", "ΔE decode gross", "avg W",
                      "meter gap %", "KL vs f32 (nats)", "top-1 %", "outlier cols"]
            rows = []
            for k in mk:
                c = cfg[k]
                base = cfg.get(k[:6] + ("fp16",), {})
                ratio = (lambda a, b: a / b if b and not math.isnan(b) else math.nan)
                ev = evals.get((model, k[6]), {})
                cols = outliers.get((model, k[3]), math.nan) if k[6] == "int8-mixed" else None
                mark = " ‡" if noisy(c["gap"]) or noisy(base.get("gap", math.nan)) else ""
                delta = (lambda key: fmt(100 * (ratio(c[key], base.get(key)) - 1), "pct") + mark
                         if k[6] != "fp16" else "–")
                rows.append([
                    str(k[3]), k[1] + ("" if k[2].startswith("cuda") else f" ({k[2]})"), k[6],
                    f"{c['n']}", fmt(c["tok_s"]),
                    fmt(ratio(c["tok_s"], base.get("tok_s")), "ratio"),
                    fmt(c["j_gross"]), fmt(c["j_net"]), delta("j_gross"), delta("j_net"),
                    fmt(c["j_pre"]), delta("j_pre"), fmt(c["j_dec"]), delta("j_dec"), fmt(c["w"]),
                    fmt(c["gap"], "gap") + (" ‡" if noisy(c["gap"]) else ""),
                    fmt(num(ev.get("mean_kl_nats")), "sci"),
                    fmt(num(ev.get("top1_agreement_pct")), "ratio"),
                    "" if cols is None else fmt(cols, "cols")])
            parts.append(markdown(header, rows) + "\n")
    return parts


def crossover_tables(db, kernels):
    parts = ["## Crossover model size (ecocompute analyze --table crossover)\n",
             "Δ% of energy per 1k tokens (whole run, gross) vs fp16 of the same kernel family, "
             "model and batch, fitted as α + β·ln(parameters); the crossover is where it is "
             f"zero (docs/analysis.md). Fitted on the runs whose meter gap is at most "
             f"{METER_GAP_WARN_PCT:g} % (`--max-meter-gap`): a flagged run, or a flagged "
             "baseline, leaves its configuration out of the fit.\n"]
    for k in kernels:
        text = ecocompute("analyze", "--db", db, "--table", "crossover", "--kernels", k,
                          "--max-meter-gap", f"{METER_GAP_WARN_PCT:g}", "--format", "csv")
        rows = list(csv.reader(io.StringIO(text)))
        parts.append(f"### kernels {k}\n")
        if len(rows) < 2:
            parts.append("(no precision with fp16 baselines at 2 or more model sizes)\n")
            continue
        parts.append(markdown(rows[0], [[c or "-" for c in r] for r in rows[1:]]) + "\n")
    return parts


def eval_table(evals):
    if not evals:
        return []
    rows = [[m, p, r["positions"], fmt(num(r["mean_kl_nats"]), "sci"),
             fmt(num(r["top1_agreement_pct"]), "ratio"), r["max_abs_dlogit"]]
            for (m, p), r in sorted(evals.items(),
                                    key=lambda kv: (kv[0][0], order(kv[0][1], PRECISION_ORDER)))]
    return ["## Accuracy vs float32 (ecocompute eval)\n",
            "Teacher-forced on the float32 model's own greedy continuation of a synthetic "
            "prompt; float32 on the CPU, the precisions on the sweep's device, fused kernels.\n",
            markdown(["model", "precision", "positions", "mean KL (nats)", "top-1 %",
                      "max abs Δlogit"], rows) + "\n"]


def outlier_table(out_dir, outliers):
    if not outliers:
        return []
    rows = [[m, str(b), fmt(v, "cols"), f"outliers/{m}_b{b}.txt"]
            for (m, b), v in sorted(outliers.items())]
    return ["## int8-mixed outlier columns (ecocompute run --verbose)\n",
            "Mean over layers and linear inputs of the columns with |x| ≥ 6 in any token of a "
            "call, averaged over the calls (prefill and decode steps); per layer in the files.\n",
            markdown(["model", "batch", "mean outlier columns", "per layer"], rows) + "\n"]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: report_sweep.py OUT_DIR")
    out_dir = sys.argv[1]
    db = os.path.join(out_dir, "results.db")
    evals, outliers = eval_results(out_dir), outlier_results(out_dir)
    parts = ["# Sweeps of issues 5 and 7\n"]
    if os.path.exists(db):
        cfg = configurations(db)
        envs = sorted({(c["gpu"], c["driver"], c["commit"]) for c in cfg.values()})
        for gpu, driver, commit in envs:
            parts.append(f"- GPU {gpu or '(none)'}, driver {driver or '-'}, "
                         f"ecocompute commit {commit or '-'}")
        idle = sorted({round(c["idle_w"], 1) for c in cfg.values() if not math.isnan(c["idle_w"])})
        parts.append(f"- {len(cfg)} configurations; idle power per bench session: "
                     f"{', '.join(f'{w:g} W' for w in idle) or 'not measured'}")
        runs = sorted({c["n"] for c in cfg.values()})
        parts.append(f"- Measured runs per configuration: {', '.join(map(str, runs))} (bench/gpu.sh: "
                     "1 warm-up and SWEEP_RUNS measured runs, 1 by default, no stabilization wait, a "
                     "5 s idle baseline per bench session, quality gates off; a simplification to "
                     "fit the device budget). Δ and speed: against fp16 of the same kernel family, "
                     "model, batch and lengths.")
        parts.append(f"- meter gap %: the largest difference between the energy counter and the "
                     f"integrated instant power over a configuration's run windows. ‡: above "
                     f"{METER_GAP_WARN_PCT:g} % in that row or in its fp16 baseline — a window "
                     "too short for the counter's ~100 ms steps; its energy and Δ are not "
                     "findings (repeat with more tokens or runs).\n")
        parts += sweep_tables(cfg, evals, outliers)
        kernels = sorted({k[1] for k in cfg}, key=lambda k: order(k, KERNELS_ORDER))
        parts += crossover_tables(db, kernels)
    else:
        parts.append(f"(no {db}: run bash bench/gpu.sh sweep:...)\n")
    parts += eval_table(evals)
    parts += outlier_table(out_dir, outliers)
    print("\n".join(parts))


if __name__ == "__main__":
    main()
