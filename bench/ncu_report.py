#!/usr/bin/env python3
"""ncu_report.py — one line per kernel launch from Nsight Compute's `--csv --metrics` output.

  bench/ncu_report.py CSV       the table, from a file (- for stdin)
  bench/ncu_report.py --metrics the metric list to pass to `ncu --metrics` (comma-separated)

Reads what `ncu --csv --metrics $(bench/ncu_report.py --metrics) PROGRAM` printed; lines that
are not ncu's CSV rows (the profiled program's own output, ==PROF== notes) are skipped. Prints,
per launch: ncu's launch id, the kernel (name and template arguments), CTAs, registers per
thread, duration (µs), DRAM throughput (% of its peak), DRAM bytes read (MB) and the SMs'
active cycles, min / avg / max over the SMs: the busiest SM against the average says how evenly
the grid spread. A metric ncu did not report prints as "-". bench/gpu.sh's `ncu` step runs it.
Exit status 0 on success, 1 when the input holds no launch or a value it cannot read (not a
number, or in a unit it does not know), 2 for usage errors.

Why: it turns one ncu run into a per-kernel table (for example: fp8's batch-1
gate/up streams at 2.60 TB/s even alone), instead of an ad-hoc parse per profile.
"""
import csv
import sys

METRICS = ["launch__grid_size", "launch__registers_per_thread", "gpu__time_duration.sum",
           "dram__throughput.avg.pct_of_peak_sustained_elapsed", "dram__bytes_read.sum",
           "sm__cycles_active.min", "sm__cycles_active.avg", "sm__cycles_active.max"]
# ncu scales units as it sees fit ("ns" or "usecond", "byte" or "Mbyte"): factors to µs and MB
TO_US = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}
TO_MB = {"byte": 1e-6, "Kbyte": 1e-3, "KB": 1e-3, "Mbyte": 1.0, "MB": 1.0, "Gbyte": 1e3,
         "GB": 1e3}
HEADER = ("id | kernel | CTAs | registers | µs | DRAM % of peak | DRAM MB read | "
          "SM active cycles min / avg / max")


def kernel_of(name):
    """The kernel's name and template arguments, without "void " and its parameter list."""
    if name.startswith("void "):
        name = name[5:]
    depth = 0
    for i, c in enumerate(name):
        depth += (c == "<") - (c == ">")
        if c == "(" and depth == 0:
            return name[:i]
    return name


def parse(text):
    """Launches in ncu's order: dicts of id, kernel and the metrics as floats in µs and MB."""
    rows = csv.DictReader(line for line in text.splitlines() if line.startswith('"'))
    launches = {}
    for r in rows:
        try:
            launch = launches.setdefault(r["ID"], {"id": r["ID"],
                                                   "kernel": kernel_of(r["Kernel Name"])})
            name, unit, value = r["Metric Name"], r["Metric Unit"], r["Metric Value"]
        except KeyError as e:
            raise ValueError(f"ncu CSV row without the column {e}") from None
        try:
            v = float(value.replace(",", ""))
        except ValueError:
            raise ValueError(f"launch {r['ID']}: {name} is not a number: {value!r}") from None
        scale = {"gpu__time_duration.sum": TO_US, "dram__bytes_read.sum": TO_MB}.get(name)
        if scale is not None:
            if unit not in scale:
                raise ValueError(f"launch {r['ID']}: {name} in an unknown unit {unit!r}")
            v *= scale[unit]
        launch[name] = v
    return list(launches.values())


def line_of(launch):
    def get(metric, fmt):
        return format(launch[metric], fmt) if metric in launch else "-"
    cycles = " / ".join(get(f"sm__cycles_active.{s}", ",.0f") for s in ("min", "avg", "max"))
    return " | ".join([launch["id"], launch["kernel"], get("launch__grid_size", ".0f"),
                       get("launch__registers_per_thread", ".0f"),
                       get("gpu__time_duration.sum", ".2f"),
                       get("dram__throughput.avg.pct_of_peak_sustained_elapsed", ".1f"),
                       get("dram__bytes_read.sum", ".2f"), cycles])


def main(argv):
    if argv == ["--metrics"]:
        print(",".join(METRICS))
        return 0
    if len(argv) != 1 or argv[0].startswith("--"):
        print("usage: ncu_report.py CSV | --metrics", file=sys.stderr)
        return 2
    try:
        text = sys.stdin.read() if argv[0] == "-" else open(argv[0], encoding="utf-8").read()
    except OSError as e:
        print(f"ncu_report.py: cannot read {argv[0]}: {e.strerror}", file=sys.stderr)
        return 2
    try:
        launches = parse(text)
    except ValueError as e:
        print(f"ncu_report.py: {argv[0]}: {e}", file=sys.stderr)
        return 1
    if not launches:
        print(f"ncu_report.py: no ncu CSV rows in {argv[0]} (was a kernel profiled?)",
              file=sys.stderr)
        return 1
    print(HEADER)
    for launch in launches:
        print(line_of(launch))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
