#!/usr/bin/env python3
"""tp_report.py RUNS.csv... — what splitting a model over GPUs costs, from `ecocompute export`
CSVs of `bench --tp` runs (bench/tp-check.sh; the published study is
docs/results/tp-2026-11-29-h200x2.csv).

One row per model, precision, batch and world size (tp), with n runs:
  * tok/s and J/1k tokens gross and net (idle-subtracted), each mean with its 95 % CI half-width
    (Student t; "-" below two runs);
  * against tp 1 of the same model, precision and batch: the change in tok/s, in J/1k gross and
    in J/1k net, and "vs idle": against tp 1 plus what the GPUs tp 1 leaves unused draw idle
    over tp 1's runs (the difference of the two configurations' idle baselines times tp 1's run
    time), i.e. what a box of tp GPUs spends when all but one wait;
  * each GPU's decode energy (J, mean per run).
A configuration whose tp 1 ran on other GPUs (another gpu_uuid) is marked †: its comparison
mixes machines as well as world sizes, and gets no "vs idle" figure.
"""
import collections
import csv
import math
import statistics
import sys

def t_central(t, df):
    """P(|T| <= t) for Student's t with a whole number df of degrees of freedom, in closed form
    (the finite series in theta = atan(t / sqrt(df)))."""
    theta = math.atan(t / math.sqrt(df))
    s, c2 = math.sin(theta), math.cos(theta) ** 2
    if df % 2:
        term = total = 1.0
        for k in range(1, (df - 1) // 2):
            term *= c2 * (2 * k) / (2 * k + 1)
            total += term
        return 2 / math.pi * (theta + (s * math.cos(theta) * total if df > 1 else 0.0))
    term = total = 1.0
    for k in range(1, df // 2):
        term *= c2 * (2 * k - 1) / (2 * k)
        total += term
    return s * total


def t95(df):
    """The two-sided 95 % Student t quantile at df degrees of freedom, by bisection (as
    ec_t_quantile in src/analysis/stats.c)."""
    lo, hi = 0.0, 64.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_central(mid, df) < 0.95 else (lo, mid)
    return (lo + hi) / 2


def num(r, k):
    v = r.get(k)
    return float(v) if v not in ("", None) else float("nan")


def mean_ci(values):
    """(mean, 95 % CI half-width or NaN)."""
    m = statistics.mean(values)
    if len(values) < 2:
        return m, float("nan")
    return m, t95(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))


def first_gpu(r):
    return (r.get("gpu_uuid") or "").split(";")[0]


def load(paths):
    by = collections.defaultdict(list)
    for p in paths:
        with open(p, newline="", encoding="utf-8") as f:
            for r in csv.DictReader(f):
                by[(r["model"], r["precision"], int(r["batch"]), int(r.get("tp") or 1))].append(r)
    return by


def rows(by):
    out = []
    for key in sorted(by):
        rs, base = by[key], by.get(key[:3] + (1,))
        tok, tok_ci = mean_ci([num(r, "tok_s") for r in rs])
        gross, gross_ci = mean_ci([num(r, "j_per_1k_gross") for r in rs])
        net, net_ci = mean_ci([num(r, "j_per_1k_net") for r in rs])
        row = {"key": key, "n": len(rs), "tok": tok, "tok_ci": tok_ci, "gross": gross,
               "gross_ci": gross_ci, "net": net, "net_ci": net_ci, "d_tok": float("nan"),
               "d_gross": float("nan"), "d_net": float("nan"), "d_idle": float("nan"),
               "other_gpus": False}
        if base and key[3] > 1:
            pct = lambda a, b: 100 * (a / b - 1)
            row["d_tok"] = pct(tok, statistics.mean(num(r, "tok_s") for r in base))
            row["d_gross"] = pct(gross, statistics.mean(num(r, "j_per_1k_gross") for r in base))
            row["d_net"] = pct(net, statistics.mean(num(r, "j_per_1k_net") for r in base))
            row["other_gpus"] = {first_gpu(r) for r in base} != {first_gpu(r) for r in rs}
            if not row["other_gpus"]:
                extra_w = (statistics.mean(num(r, "idle_power_w") for r in rs) -
                           statistics.mean(num(r, "idle_power_w") for r in base))
                box = statistics.mean(
                    (num(r, "gpu_energy_j") + extra_w * num(r, "total_time_s")) * 1000 /
                    (int(r["batch"]) * int(r["gen_len"])) for r in base)
                row["d_idle"] = pct(gross, box)
        per = [r["decode_gpu_energy_per_gpu_j"].split(";") for r in rs
               if r.get("decode_gpu_energy_per_gpu_j")]
        row["per_gpu"] = ([statistics.mean(float(p[g]) for p in per) for g in range(len(per[0]))]
                          if per else [])
        out.append(row)
    return out


def fmt(v, spec):
    return "-" if math.isnan(v) else format(v, spec)


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: tp_report.py RUNS.csv...")
    print(f"{'model':<12} {'prec':<10} {'batch':>5} {'tp':>2} {'n':>2} {'tok/s':>8} {'±':>5} "
          f"{'J/1k gross':>10} {'±':>5} {'J/1k net':>9} {'±':>5} {'dtok%':>6} {'dJ%':>6} "
          f"{'dJnet%':>6} {'vs idle%':>8}  decode J per GPU")
    for r in rows(load(sys.argv[1:])):
        m, p, b, t = r["key"]
        mark = " †" if r["other_gpus"] else ""
        print(f"{m:<12} {p:<10} {b:>5} {t:>2} {r['n']:>2} {fmt(r['tok'], '8.1f')} "
              f"{fmt(r['tok_ci'], '5.1f'):>5} {fmt(r['gross'], '10.1f')} "
              f"{fmt(r['gross_ci'], '5.1f'):>5} {fmt(r['net'], '9.1f')} {fmt(r['net_ci'], '5.1f'):>5} "
              f"{fmt(r['d_tok'], '+6.1f'):>6} {fmt(r['d_gross'], '+6.1f'):>6} "
              f"{fmt(r['d_net'], '+6.1f'):>6} {fmt(r['d_idle'], '+8.1f'):>8}  "
              + " ".join(f"{e:.1f}" for e in r["per_gpu"]) + mark)


if __name__ == "__main__":
    main()
