#!/usr/bin/env python3
"""test_ptxas_report.py — bench/ptxas_report.py's reading of a ptxas -v log: registers, spills and
stack frames per entry function and target, a non-inlined device function's properties not
taken for a kernel's, --spills keeping only the kernels that spill and --local those with a stack
frame too; and its usage errors. (Compiling needs a configured CUDA build; the planted log is
what nvcc -Xptxas=-v prints.)"""
import tempfile
import unittest

from bench_script import load, runner

ptxas_report = load("ptxas_report")
run = runner(ptxas_report)

LOG = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z5tightv' for 'sm_90a'
ptxas info    : Function properties for _Z5tightv
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 128 registers, used 1 barriers, 4096 bytes smem
ptxas info    : Compile time = 10.0 ms
ptxas info    : Function properties for _Z6helperv
    48 bytes stack frame, 40 bytes spill stores, 40 bytes spill loads
ptxas info    : Compiling entry function '_Z6spillyv' for 'sm_90a'
ptxas info    : Function properties for _Z6spillyv
    304 bytes stack frame, 304 bytes spill stores, 76 bytes spill loads
ptxas info    : Used 80 registers, used 1 barriers
ptxas info    : Compiling entry function '_Z7stackedv' for 'sm_90a'
ptxas info    : Function properties for _Z7stackedv
    288 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 124 registers
ptxas info    : Compiling entry function '_Z5tightv' for 'sm_80'
ptxas info    : Function properties for _Z5tightv
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 96 registers
"""


class Parse(unittest.TestCase):
    def test_one_record_per_kernel_and_target(self):
        got = [(k["name"], k["target"], k["registers"], k["stores"], k["loads"], k["stack"])
               for k in ptxas_report.parse(LOG)]
        self.assertEqual(got, [("_Z5tightv", "sm_90a", 128, 0, 0, 0),
                               ("_Z6spillyv", "sm_90a", 80, 304, 76, 304),
                               ("_Z7stackedv", "sm_90a", 124, 0, 0, 288),
                               ("_Z5tightv", "sm_80", 96, 0, 0, 0)])

    def test_table_and_filters(self):
        with tempfile.NamedTemporaryFile("w", suffix=".log") as f:
            f.write(LOG)
            f.flush()
            whole = run("--parse", f.name)
        self.assertEqual(whole.returncode, 0, whole.stderr)
        lines = whole.stdout.splitlines()
        self.assertEqual(len(lines), 5)  # the header and four kernels
        self.assertIn("80 | 304 | 76 | 304 | sm_90a | - | spilly()", lines)
        spills = run("--parse", "-", "--spills", stdin=LOG)
        self.assertEqual(spills.stdout.splitlines()[1:],
                         ["80 | 304 | 76 | 304 | sm_90a | - | spilly()"])
        local = run("--parse", "-", "--local", stdin=LOG)
        self.assertEqual(local.stdout.splitlines()[1:],
                         ["80 | 304 | 76 | 304 | sm_90a | - | spilly()",
                          "124 | 0 | 0 | 288 | sm_90a | - | stacked()"])


class UsageErrors(unittest.TestCase):
    def test_missing_log(self):
        r = run("--parse", "/nonexistent/ptxas.log")
        self.assertEqual(r.returncode, 2)
        self.assertIn("cannot read /nonexistent/ptxas.log", r.stderr)

    def test_parse_with_sources(self):
        self.assertEqual(run("--parse", "-", "x.cu", stdin=LOG).returncode, 2)

    def test_spills_and_local_together(self):
        self.assertEqual(run("--parse", "-", "--spills", "--local", stdin=LOG).returncode, 2)

    def test_build_without_compile_commands(self):
        with tempfile.TemporaryDirectory() as d:
            r = run("--build", d)
        self.assertEqual(r.returncode, 2)
        self.assertIn("compile_commands.json", r.stderr)


if __name__ == "__main__":
    unittest.main()
