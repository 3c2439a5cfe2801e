#!/usr/bin/env python3
"""ptxas_report.py — registers, spills and stack frames of every CUDA kernel, as ptxas sets them.

  bench/ptxas_report.py [--build DIR] [--spills | --local] [FILE.cu ...]
  bench/ptxas_report.py --parse LOG [--spills | --local]

Compiles each CUDA source of the library again with its exact command from DIR's
compile_commands.json (default build-dev; CMake writes it at configure time) plus -Xptxas=-v,
into a temporary directory, and prints one line per kernel and GPU target: registers, spill
stores, spill loads and stack frame (bytes), the target, the source file and the demangled
kernel name. FILE.cu limits the run to sources whose path ends so (kernels_nf4.cu,
cuda/linear.cu). --spills prints only kernels that spill; --local those with any local memory,
a stack frame or spills; --parse reads a saved `nvcc -Xptxas -v` log instead of compiling. Exit
status 0 on success, 1 when a compile fails, 2 for usage errors.

Why: a kernel that spills under a launch bound can cost far more than the bound saves (nf4-dq's
two-row-tile kernels at 80 registers), and nothing else reports
it. A stack frame without spills is local memory too: register arrays the compiler indexes at
run time (a decode attention that held its first cache rows in an indexed array kept them in
288 bytes of it, and spilled nothing). Needs no GPU.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

ENTRY = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")
PROPERTIES = re.compile(r"Function properties for (\S+)")
FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
USED = re.compile(r"Used (\d+) registers")


def parse(log, source=""):
    """Kernels of one ptxas -v log: dicts with name (mangled), target, registers, stores, loads,
    stack.

    ptxas prints, per entry function, "Compiling entry function NAME for TARGET", then
    "Function properties for NAME" with its stack and spill line, then "Used N registers".
    Non-inlined device functions have properties lines of their own; only entries are kept."""
    kernels, entry, target, frames, props_of = [], None, None, {}, None
    for line in log.splitlines():
        m = ENTRY.search(line)
        if m:
            entry, target = m.group(1), m.group(2)
            frames.pop(entry, None)  # another target's compile of it said its own
            continue
        m = PROPERTIES.search(line)
        if m:
            props_of = m.group(1)
            continue
        m = FRAME.search(line)
        if m and props_of:
            frames[props_of] = (int(m.group(2)), int(m.group(3)), int(m.group(1)))
            continue
        m = USED.search(line)
        if m and entry:
            stores, loads, stack = frames.get(entry, (0, 0, 0))
            kernels.append({"name": entry, "target": target, "registers": int(m.group(1)),
                            "stores": stores, "loads": loads, "stack": stack, "source": source})
            entry = None
    return kernels


def demangle(names):
    if not names or not shutil.which("c++filt"):
        return {n: n for n in names}
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True,
                         check=False).stdout.splitlines()
    return dict(zip(names, out)) if len(out) == len(names) else {n: n for n in names}


def compile_commands(build, wanted):
    path = os.path.join(build, "compile_commands.json")
    try:
        with open(path) as f:
            entries = json.load(f)
    except (OSError, ValueError) as e:
        reason = e.strerror if isinstance(e, OSError) else f"not JSON: {e}"
        print(f"ptxas_report: cannot read {path} ({reason}); configure {build} with cmake first",
              file=sys.stderr)
        sys.exit(2)
    cuda = [e for e in entries if e["file"].endswith(".cu")]
    if wanted:
        cuda = [e for e in cuda if any(e["file"].endswith(w) for w in wanted)]
        if not cuda:
            print(f"ptxas_report: no CUDA source in {path} ends with {' or '.join(wanted)}",
                  file=sys.stderr)
            sys.exit(2)
    return cuda


def run_one(entry, tmp):
    """Recompiles one source with -Xptxas=-v, its object into tmp: (source, log, failed)."""
    args = entry.get("arguments") or shlex.split(entry["command"])
    out = os.path.join(tmp, os.path.basename(entry["file"]) + ".o")
    # the object and the dependency file go to tmp; the build tree stays as it was
    redirect = {"-o": out, "-MF": out + ".d"}
    args = [redirect.get(args[i - 1], a) if i > 0 else a for i, a in enumerate(args)]
    done = subprocess.run(args + ["-Xptxas=-v"], cwd=entry["directory"], capture_output=True,
                          text=True, check=False)
    return entry["file"], done.stdout + done.stderr, done.returncode != 0


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  bench/ptxas_report.py --spills\n  bench/ptxas_report.py --local\n"
               "  bench/ptxas_report.py --build build kernels_nf4.cu kernels_fp8.cu\n"
               "  nvcc ... -Xptxas=-v 2>log; bench/ptxas_report.py --parse log")
    ap.add_argument("--build", default="build-dev", help="configured build directory")
    ap.add_argument("--parse", metavar="LOG", help="read a saved ptxas -v log ('-': stdin)")
    only = ap.add_mutually_exclusive_group()
    only.add_argument("--spills", action="store_true", help="only kernels that spill")
    only.add_argument("--local", action="store_true",
                      help="only kernels with local memory: a stack frame or spills")
    ap.add_argument("files", nargs="*", help="sources to compile (path suffixes)")
    a = ap.parse_args()
    if a.parse and a.files:
        ap.error("--parse takes no FILE.cu")

    kernels, failed = [], False
    if a.parse:
        try:
            log = sys.stdin.read() if a.parse == "-" else open(a.parse).read()
        except OSError as e:
            print(f"ptxas_report: cannot read {a.parse} ({e.strerror})", file=sys.stderr)
            return 2
        kernels = parse(log)
    else:
        entries = compile_commands(a.build, a.files)
        with tempfile.TemporaryDirectory() as tmp, \
                concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
            for source, log, bad in pool.map(lambda e: run_one(e, tmp), entries):
                if bad:
                    print(f"ptxas_report: compiling {source} failed:\n{log}", file=sys.stderr)
                    failed = True
                kernels += parse(log, os.path.relpath(source))

    if a.spills:
        kernels = [k for k in kernels if k["stores"] or k["loads"]]
    if a.local:
        kernels = [k for k in kernels if k["stores"] or k["loads"] or k["stack"]]
    names = demangle(sorted({k["name"] for k in kernels}))
    print("registers | spill stores (B) | spill loads (B) | stack frame (B) | target | source | "
          "kernel")
    for k in sorted(kernels, key=lambda k: (k["source"], names[k["name"]], k["target"])):
        print(f"{k['registers']} | {k['stores']} | {k['loads']} | {k['stack']} | {k['target']} | "
              f"{k['source'] or '-'} | {names[k['name']]}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
