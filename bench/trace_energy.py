#!/usr/bin/env python3
"""trace_energy.py TRACE.csv MARKS.csv — energy of marked intervals from an `ecocompute meter`
trace, for programs metered from outside (bench/torch_baseline.py).

Energy of [t0, t1] = trapezoid integral of the trace's instant power (field 186), with the power
at the edges interpolated linearly — the "integrated" method of docs/measurement.md (the energy
counter is read at most once a second, too coarse for intervals of a few seconds). Prints CSV:
label,seconds,tokens,energy_j_gross,avg_power_w.
"""
import csv
import sys


def load_power(path):
    pts = []
    with open(path) as f:
        for row in csv.DictReader(f):
            if row["power_instant_w"]:
                pts.append((float(row["t_s"]), float(row["power_instant_w"])))
    pts.sort()
    return pts


def power_at(pts, t):
    lo, hi = 0, len(pts) - 1
    if t <= pts[0][0]:
        return pts[0][1]
    if t >= pts[-1][0]:
        return pts[-1][1]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if pts[mid][0] <= t:
            lo = mid
        else:
            hi = mid
    (ta, pa), (tb, pb) = pts[lo], pts[hi]
    return pa + (pb - pa) * (t - ta) / (tb - ta)


def integrate(pts, t0, t1):
    inside = [p for p in pts if t0 < p[0] < t1]
    seq = [(t0, power_at(pts, t0))] + inside + [(t1, power_at(pts, t1))]
    return sum((b[0] - a[0]) * (a[1] + b[1]) / 2 for a, b in zip(seq, seq[1:]))


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: trace_energy.py TRACE.csv MARKS.csv")
    pts = load_power(sys.argv[1])
    if len(pts) < 2:
        sys.exit(f"{sys.argv[1]}: fewer than two instant-power readings")
    out = csv.writer(sys.stdout)
    out.writerow(["label", "seconds", "tokens", "energy_j_gross", "avg_power_w", "note"])
    with open(sys.argv[2]) as f:
        for m in csv.DictReader(f):
            t0, t1 = float(m["t0_s"]), float(m["t1_s"])
            if t1 <= t0:
                out.writerow([m["label"], "", m["tokens"], "", "", m["note"]])
                continue
            e = integrate(pts, t0, t1)
            out.writerow([m["label"], f"{t1 - t0:.4f}", m["tokens"], f"{e:.2f}",
                          f"{e / (t1 - t0):.1f}", m["note"]])


if __name__ == "__main__":
    main()
