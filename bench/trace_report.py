#!/usr/bin/env python3
"""trace_report.py TRACE.csv [LAYERS] — where a decode step's time goes, from bench/kernel_trace.c.

Takes the CUDA-graph launches of the trace with the most common kernel count (the decode steps),
drops the first two, and prints
  * the step: wall time (first kernel start to last kernel end), the sum of kernel durations,
    the gap between steps;
  * one layer (the kernel sequence that repeats LAYERS times, default 32, or LAYERS - 1 times
    where the first layer runs other kernels): per kernel its mean
    duration, the mean gap from the previous kernel's end to its start (negative: the two
    overlapped under programmatic dependent launch) and its own time, from the previous
    kernel's end to its own (duration + gap: a kernel waits for its predecessor, so the own
    times of a layer add up to its wall time), in µs;
  * the kernels outside the layers;
  * the prefill: the kernels launched outside graphs before the first graph kernel, their
    durations summed per kernel name (the 12 largest).
A trace of a tensor-parallel run (a `device` column naming several GPUs) gets this report per GPU,
each with the share of the step its NCCL kernels take (the all-reduces: their transfer and their
wait for the other ranks, which a GPU spends inside the kernel).
"""
import collections
import csv
import shutil
import statistics
import subprocess
import sys


def short_names(mangled):
    """Demangled names without argument lists and namespaces (c++filt when present)."""
    names = {m: m for m in mangled}
    if shutil.which("c++filt"):
        out = subprocess.run(["c++filt"], input="\n".join(mangled), capture_output=True,
                             text=True).stdout.splitlines()
        for m, d in zip(mangled, out):
            d = d.replace("(anonymous namespace)::", "")
            depth, cut = 0, len(d)
            for i, ch in enumerate(d):  # drop the argument list: the first '(' at depth 0
                depth += ch == "<"
                depth -= ch == ">"
                if ch == "(" and depth == 0:
                    cut = i
                    break
            d = d[:cut]
            d = d.replace("void ", "").replace("__half", "half")
            names[m] = d
    return names


def launches(rows):
    """Splits graph kernels into launches: a node seen again starts the next launch."""
    by_graph = collections.defaultdict(list)
    for r in rows:
        if r["graph_id"] != "0":
            by_graph[r["graph_id"]].append(r)
    out = []
    for g in by_graph.values():
        g.sort(key=lambda r: r["start"])
        cur, seen = [], set()
        for r in g:
            if r["graph_node_id"] in seen:
                out.append(cur)
                cur, seen = [], set()
            cur.append(r)
            seen.add(r["graph_node_id"])
        out.append(cur)
    out.sort(key=lambda l: l[0]["start"])
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: trace_report.py TRACE.csv [LAYERS]")
    layers = int(sys.argv[2]) if len(sys.argv) > 2 else 32
    rows = list(csv.DictReader(open(sys.argv[1])))
    for r in rows:
        r["start"], r["end"] = int(r["start_ns"]), int(r["end_ns"])
    names = short_names(sorted({r["name"] for r in rows}))
    devices = sorted({r.get("device") or "0" for r in rows}, key=int)
    for dev in devices:
        if len(devices) > 1:
            print(f"== GPU {dev}")
        report([r for r in rows if (r.get("device") or "0") == dev], layers, names)


def is_nccl(name):
    """NCCL's kernels, by their (mangled) names: ncclDevKernel_AllReduce_..., ncclKernel_..."""
    return "ncclDevKernel" in name or "ncclKernel" in name


def report(rows, layers, names):
    runs = launches(rows)
    if not runs:
        sys.exit("trace_report: no CUDA-graph kernels in the trace")
    n = collections.Counter(len(l) for l in runs).most_common(1)[0][0]
    steps = [l for l in runs if len(l) == n][2:]
    if not steps:
        sys.exit("trace_report: fewer than three decode steps in the trace")
    walls = [(l[-1]["end"] - l[0]["start"]) / 1e3 for l in steps]
    sums = [sum(r["end"] - r["start"] for r in l) / 1e3 for l in steps]
    between = [(b[0]["start"] - a[-1]["end"]) / 1e3 for a, b in zip(steps, steps[1:])]
    print(f"decode steps: {len(steps)} of {n} kernels; wall {statistics.median(walls):.1f} µs "
          f"(median), sum of kernel durations {statistics.median(sums):.1f} µs, gap between "
          f"steps {statistics.median(between) if between else 0:.1f} µs")
    comm = [sum(r["end"] - r["start"] for r in l if is_nccl(r["name"])) / 1e3 for l in steps]
    if any(comm):
        share = [c / w for c, w in zip(comm, walls)]
        print(f"all-reduce (NCCL kernels): {sum(is_nccl(r['name']) for r in steps[0])} per step, "
              f"{statistics.median(comm):.1f} µs per step (median), "
              f"{100 * statistics.median(share):.1f} % of the step's wall time")

    keys = [names[r["name"]] + " " + r["grid"] for r in steps[0]]
    def repeating(reps):  # (start, period) whose sequence repeats `reps` times, or None
        for period in range(1, n // reps + 1):
            for start in range(0, n - period * reps + 1):
                if all(keys[start + i] == keys[start + i + period * k]
                       for k in range(1, reps) for i in range(period)):
                    return start, period
        return None
    # The first layer may run other kernels (a batch-1 step's first norm has no residual add
    # before it to carry it): then the other layers are the sequence.
    best = repeating(layers)
    if best is None and layers > 2:
        best = repeating(layers - 1)
        if best:
            layers -= 1
            print(f"the first layer differs: the table covers the other {layers}")
    def mean_us(f):
        return statistics.mean(f) / 1e3
    def stats(idx):
        dur = [l[i]["end"] - l[i]["start"] for l in steps for i in idx]
        gap = [l[i]["start"] - l[i - 1]["end"] for l in steps for i in idx if i > 0]
        own = [l[i]["end"] - (l[i - 1]["end"] if i > 0 else l[i]["start"])
               for l in steps for i in idx]
        return mean_us(dur), mean_us(gap) if gap else 0.0, mean_us(own)
    if best is None:
        print(f"no sequence repeats {layers} times; every kernel of the step:")
        groups = [(keys[i], [i]) for i in range(n)]
    else:
        start, period = best
        print(f"one layer: {period} kernels (from kernel {start}), mean over {layers} layers x "
              f"{len(steps)} steps")
        groups = [(keys[start + j], [start + j + period * k for k in range(layers)])
                  for j in range(period)]
        inside = {i for _, idx in groups for i in idx}
        groups += [("outside: " + keys[i], [i]) for i in range(n) if i not in inside]
    print("| kernel (grid) | µs | gap before, µs | own µs |")
    print("|---|---|---|---|")
    tot_d = tot_g = tot_o = 0.0
    for key, idx in groups:
        d, g, o = stats(idx)
        if not key.startswith("outside"):
            tot_d, tot_g, tot_o = tot_d + d, tot_g + g, tot_o + o
        print(f"| {key} | {d:.2f} | {g:+.2f} | {o:.2f} |")
    if best:
        print(f"| layer total | {tot_d:.2f} | {tot_g:+.2f} | {tot_o:.2f} |")
    prefill_summary(rows, names)


def prefill_summary(rows, names):
    """Summed durations of the ungraphed kernels before the first graph kernel, per name."""
    first = min((r["start"] for r in rows if r["graph_id"] != "0"), default=None)
    pre = [r for r in rows if r["graph_id"] == "0" and (first is None or r["start"] < first)]
    if not pre:
        return
    total = collections.defaultdict(lambda: [0, 0])
    for r in pre:
        total[names[r["name"]]][0] += 1
        total[names[r["name"]]][1] += r["end"] - r["start"]
    print(f"prefill: {len(pre)} kernels outside graphs, sum of durations "
          f"{sum(t for _, t in total.values()) / 1e6:.1f} ms")
    print("| kernel | launches | ms |")
    print("|---|---|---|")
    for name, (count, ns) in sorted(total.items(), key=lambda kv: -kv[1][1])[:12]:
        print(f"| {name} | {count} | {ns / 1e6:.2f} |")


if __name__ == "__main__":
    main()
