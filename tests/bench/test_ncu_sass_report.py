#!/usr/bin/env python3
"""test_ncu_sass_report.py — bench/ncu_sass_report.py's reading of Nsight Compute's SASS source
page: nine rows of an H100 profile of fp8's batch-1 gate/up (the kernel line, the header
and the rows of the largest stalls, a conversion, a shift, an MMA, a predicated shared load and
a constant load), summed by reason, by instruction and by opcode as counted by hand; and its
errors. (Profiling needs a GPU; the planted text is what ncu printed there.)"""
import unittest

from bench_script import fixture, load, runner

ncu_sass_report = load("ncu_sass_report")
run = runner(ncu_sass_report)
CSV = fixture("ncu_sass_fp8_qmma.csv")


class Parse(unittest.TestCase):
    def test_rows(self):
        kernel, rows = ncu_sass_report.parse(CSV)
        self.assertTrue(kernel.startswith("void qmma_kernel<<unnamed>::Fp8, __half"))
        self.assertEqual(len(rows), 9)
        bra = next(r for r in rows if r["address"].endswith("ebfb0"))
        self.assertEqual(bra["sass"], "@P0   BRA 0x7fb6737ef2f0")
        self.assertEqual((bra["samples"], bra["executed"]), (1206, 14336))
        self.assertEqual((bra["stalls"]["long_sb"], bra["stalls"]["wait"]), (1201, 5))
        self.assertNotIn("long_sb (Not Issued)", bra["stalls"])

    def test_opcode(self):
        self.assertEqual(ncu_sass_report.opcode("@!P0  LDS.64 R90, [R100]"), "LDS")
        self.assertEqual(ncu_sass_report.opcode("HMMA.16816.F32 R84, R84, R90, R80"), "HMMA")
        self.assertEqual(ncu_sass_report.opcode("  "), "?")


class Report(unittest.TestCase):
    def test_totals_reasons_and_top(self):
        r = run("-", "--top", "3", stdin="==PROF== a note before the page\n" + CSV)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout.splitlines()
        # 1206 + 889 + 606 + 231 + 0 + 1 + 30 + 4 + 28 samples; six rows of 14336, one of 7168,
        # two of 1792 executions
        self.assertEqual(out[1], "instructions executed: 96,768 (warp-level); "
                                 "warp-stall samples: 2,995")
        self.assertIn("long_sb | 1,807 | 60.3 %", out)  # 1201 (BRA) + 606 (FADD)
        self.assertIn("barrier | 1,115 | 37.2 %", out)  # 889 (BSSY) + 226 (BSYNC)
        self.assertNotIn("wait | 5 | 0.2 %", out)  # under 0.5 %: left out
        top = out[out.index("address | samples | % of samples | largest reasons | "
                            "instruction") + 1:][:4]
        self.assertEqual(top[:3], [
            "ebfb0 | 1,206 | 40.3 % | long_sb 1,201, wait 5 | @P0   BRA 0x7fb6737ef2f0",
            "eeda0 | 889 | 29.7 % | barrier 889 | BSSY B2, 0x7fb6737ef1f0",
            "eac80 | 606 | 20.2 % | long_sb 606 | FADD R116, R109, R116"])
        self.assertEqual(top[3], "")  # --top 3

    def test_mix(self):
        out = run("-", stdin=CSV).stdout.splitlines()
        mix = out[out.index("opcode | instructions executed | % of executed") + 1:]
        self.assertEqual(len(mix), 9)
        for op in ("BRA", "SHF", "F2FP", "LDS", "HMMA", "BSYNC"):
            self.assertIn(f"{op} | 14,336 | 14.8 %", mix)
        self.assertIn("BSSY | 7,168 | 7.4 %", mix)


class Errors(unittest.TestCase):
    def test_no_rows(self):
        r = run("-", stdin="==PROF== Disconnected from process 617\n")
        self.assertEqual(r.returncode, 1)
        self.assertIn("no SASS rows", r.stderr)

    def test_not_a_count(self):
        bad = CSV.replace('"0x7fb6737ebfb0","@P0   BRA 0x7fb6737ef2f0","1206"',
                          '"0x7fb6737ebfb0","@P0   BRA 0x7fb6737ef2f0","n/a"')
        self.assertNotEqual(bad, CSV)
        r = run("-", stdin=bad)
        self.assertEqual(r.returncode, 1)
        self.assertIn("(0x7fb6737ebfb0): Warp Stall Sampling (All Samples) is not a count: 'n/a'",
                      r.stderr)

    def test_page_without_source_counters(self):
        bad = CSV.replace('"Warp Stall Sampling (All Samples)"', '"Samples"', 1)
        r = run("-", stdin=bad)
        self.assertEqual(r.returncode, 1)
        self.assertIn("no column 'Warp Stall Sampling (All Samples)'", r.stderr)

    def test_usage(self):
        self.assertEqual(run().returncode, 2)
        self.assertEqual(run("a.csv", "b.csv").returncode, 2)
        self.assertEqual(run("-", "--top").returncode, 2)
        self.assertEqual(run("-", "--top", "0").returncode, 2)
        r = run("/nonexistent/sass.csv")
        self.assertEqual(r.returncode, 2)
        self.assertIn("cannot read /nonexistent/sass.csv", r.stderr)


if __name__ == "__main__":
    unittest.main()
