#!/usr/bin/env python3
"""test_ncu_report.py — bench/ncu_report.py's reading of Nsight Compute's --csv --metrics output:
one launch of an H100 ncu run of fp8's batch-1 linears (with the profiled program's output and
ncu's notes around it) as the report tabulates it, a launch in scaled units with a metric missing,
and its errors. (Profiling needs a GPU; the planted text is what ncu printed there.)"""
import unittest

from bench_script import fixture, load, runner

ncu_report = load("ncu_report")
run = runner(ncu_report)

# What ncu printed (the program's output and ncu's notes, then launch 2's rows), and the
# same launch again as id 9, in scaled units and without sm__cycles_active.avg.
CSV = fixture("ncu_fp8_gate_up.csv")


class Parse(unittest.TestCase):
    def test_fp8_gate_up(self):
        launch = ncu_report.parse(CSV)[0]
        self.assertEqual(launch["kernel"],
                         "qmma_kernel<<unnamed>::Fp8, __half, 2, 1, 8, 2, 2, 1, 1>")
        self.assertEqual(launch["launch__grid_size"], 224)
        self.assertAlmostEqual(launch["gpu__time_duration.sum"], 45.248)  # ns to µs
        self.assertAlmostEqual(launch["dram__bytes_read.sum"], 117.620992)  # bytes to MB
        self.assertEqual(launch["sm__cycles_active.max"], 78796)

    def test_scaled_units_and_missing_metric(self):
        launch = ncu_report.parse(CSV)[1]
        self.assertEqual(launch["id"], "9")
        self.assertAlmostEqual(launch["gpu__time_duration.sum"], 45.25)
        self.assertAlmostEqual(launch["dram__bytes_read.sum"], 117.62)
        self.assertNotIn("sm__cycles_active.avg", launch)

    def test_table(self):
        r = run("-", stdin=CSV)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.splitlines()[1:], [
            "2 | qmma_kernel<<unnamed>::Fp8, __half, 2, 1, 8, 2, 2, 1, 1> | 224 | 128 | 45.25 | "
            "77.6 | 117.62 | 65,984 / 73,172 / 78,796",
            "9 | qmma_kernel<<unnamed>::Fp8, __half, 2, 1, 8, 2, 2, 1, 1> | 224 | 128 | 45.25 | "
            "77.6 | 117.62 | 65,984 / - / 78,796"])

    def test_metrics_list(self):
        r = run("--metrics")
        self.assertEqual(r.returncode, 0)
        self.assertEqual(r.stdout.strip().split(","), ncu_report.METRICS)


class Errors(unittest.TestCase):
    def test_no_launch(self):
        r = run("-", stdin="==PROF== Disconnected from process 617\n")
        self.assertEqual(r.returncode, 1)
        self.assertIn("no ncu CSV rows", r.stderr)

    def test_not_a_number(self):
        bad = CSV.replace('"ns","45,248"', '"ns","n/a"')
        r = run("-", stdin=bad)
        self.assertEqual(r.returncode, 1)
        self.assertIn("launch 2: gpu__time_duration.sum is not a number: 'n/a'", r.stderr)

    def test_unknown_unit(self):
        bad = CSV.replace('"ns","45,248"', '"cycle","45,248"')
        r = run("-", stdin=bad)
        self.assertEqual(r.returncode, 1)
        self.assertIn("launch 2: gpu__time_duration.sum in an unknown unit 'cycle'", r.stderr)

    def test_usage(self):
        self.assertEqual(run().returncode, 2)
        self.assertEqual(run("a.csv", "b.csv").returncode, 2)
        r = run("/nonexistent/ncu.csv")
        self.assertEqual(r.returncode, 2)
        self.assertIn("cannot read /nonexistent/ncu.csv", r.stderr)


if __name__ == "__main__":
    unittest.main()
