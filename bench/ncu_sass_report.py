#!/usr/bin/env python3
"""ncu_sass_report.py — where one kernel's warps wait, by reason and by instruction, from Nsight
Compute's SASS source page.

  bench/ncu_sass_report.py CSV [--top N]

Reads what `ncu -i REPORT --page source --print-source sass --csv` printed for a report taken
with the source counters (`--set full`): a "Kernel Name" line, a header, one row per SASS
instruction. Prints, with its unit on every number:
  - the kernel, its instructions executed (warp-level, all warps) and warp-stall samples;
  - the stall reasons, each as a share of all samples (those of at least 0.5 %);
  - the N instructions (default 12) with the most samples: address (last 5 hex digits), samples
    and their share, the two largest reasons, and the instruction;
  - the instruction mix: executed instructions per opcode (predicate and modifiers dropped),
    the 12 largest, with their share.
Lines before the "Kernel Name" line (ncu's notes) are skipped. Exit status 0 on success, 1 when
the input holds no instruction rows or a count it cannot read, 2 for usage errors.
bench/gpu.sh's `ncu-sass` step runs it.

Why: reading fp8's gate/up this way by hand found a quarter of its warps' time at barriers
and 32 of 271 instructions a chunk spent on shifts; this makes the reading one
command that anyone can repeat on another kernel or build.
"""
import argparse
import collections
import csv
import sys

SAMPLES = "Warp Stall Sampling (All Samples)"
EXECUTED = "Instructions Executed"


def parse(text):
    """(kernel name, rows): each row a dict of address, sass, samples, executed and the
    all-samples stall counts {reason: n} (reason without its "stall_" prefix)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"Kernel Name"')), None)
    if start is None:
        return None, []
    kernel = next(csv.reader([lines[start]]))[1]
    reader = csv.DictReader(lines[start + 1:])
    fields = reader.fieldnames or []
    for need in ("Address", "Source", SAMPLES, EXECUTED):
        if need not in fields:
            raise ValueError(f"no column {need!r} (was the report taken with --set full?)")
    reasons = [f for f in fields if f.startswith("stall_") and not f.endswith("(Not Issued)")]
    rows = []
    for n, r in enumerate(reader, start=1):
        def count(field):
            value = (r.get(field) or "0").replace(",", "")
            try:
                return int(value)
            except ValueError:
                raise ValueError(f"row {n} ({r['Address']}): {field} is not a count: "
                                 f"{r.get(field)!r}") from None
        rows.append({"address": r["Address"], "sass": r["Source"].strip(),
                     "samples": count(SAMPLES), "executed": count(EXECUTED),
                     "stalls": {f[len("stall_"):]: count(f) for f in reasons}})
    return kernel, rows


def opcode(sass):
    """The opcode without its predicate (@P0, @!PT) and modifiers: "HMMA" of "HMMA.16816.F32"."""
    words = sass.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else "?"


def report(kernel, rows, top):
    samples = sum(r["samples"] for r in rows)
    executed = sum(r["executed"] for r in rows)
    out = [f"kernel: {kernel}",
           f"instructions executed: {executed:,} (warp-level); warp-stall samples: {samples:,}",
           "", "stall reason | samples | % of samples"]
    by_reason = collections.Counter()
    for r in rows:
        by_reason.update(r["stalls"])
    for reason, n in by_reason.most_common():
        if samples and 100.0 * n / samples >= 0.5:
            out.append(f"{reason} | {n:,} | {100.0 * n / samples:.1f} %")
    out += ["", "address | samples | % of samples | largest reasons | instruction"]
    for r in sorted(rows, key=lambda r: -r["samples"])[:top]:
        if not r["samples"]:
            break
        worst = [f"{k} {v:,}" for k, v in sorted(r["stalls"].items(), key=lambda kv: -kv[1])[:2]
                 if v]
        out.append(f"{r['address'][-5:]} | {r['samples']:,} | "
                   f"{100.0 * r['samples'] / samples:.1f} % | {', '.join(worst) or '-'} | "
                   f"{r['sass']}")
    out += ["", "opcode | instructions executed | % of executed"]
    mix = collections.Counter()
    for r in rows:
        mix[opcode(r["sass"])] += r["executed"]
    for op, n in mix.most_common(12):
        if executed:
            out.append(f"{op} | {n:,} | {100.0 * n / executed:.1f} %")
    return "\n".join(out)


def at_least_one(text):
    n = int(text)
    if n < 1:
        raise ValueError(text)
    return n


def main(argv):
    ap = argparse.ArgumentParser(prog="ncu_sass_report.py",
                                 description="Warp stalls by reason and instruction, and the "
                                             "opcode mix, from ncu's SASS source page.")
    ap.add_argument("csv", help="the page (ncu -i REPORT --page source --print-source sass "
                                "--csv), or - for standard input")
    ap.add_argument("--top", type=at_least_one, default=12, metavar="N",
                    help="instructions listed by samples (default 12)")
    args = ap.parse_args(argv)  # usage errors exit with status 2
    try:
        with (sys.stdin if args.csv == "-" else open(args.csv, encoding="utf-8")) as f:
            text = f.read()
    except OSError as e:
        ap.exit(2, f"ncu_sass_report.py: cannot read {args.csv}: {e.strerror}\n")
    try:
        kernel, rows = parse(text)
    except ValueError as e:
        ap.exit(1, f"ncu_sass_report.py: {args.csv}: {e}\n")
    if not rows:
        ap.exit(1, f"ncu_sass_report.py: no SASS rows in {args.csv} (ncu -i REPORT --page "
                   "source --print-source sass --csv)\n")
    print(report(kernel, rows, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
