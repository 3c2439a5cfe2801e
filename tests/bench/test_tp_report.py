#!/usr/bin/env python3
"""test_tp_report.py — bench/tp_report.py on planted `ecocompute export` rows of a `bench --tp 1,2`
sweep: means and 95 % CIs per world size, the changes against tp 1 (tok/s, J/1k gross and net),
the comparison with tp 1 plus the idle power of the GPU it leaves unused, each GPU's decode
energy, and a tp 1 measured on other GPUs marked † with no idle comparison."""
import csv
import io
import math
import os
import tempfile
import unittest

from bench_script import load, runner

tp_report = load("tp_report")
run = runner(tp_report)

FIELDS = ["model", "precision", "batch", "tp", "gen_len", "gpu_uuid", "tok_s", "j_per_1k_gross",
          "j_per_1k_net", "idle_power_w", "gpu_energy_j", "total_time_s",
          "decode_gpu_energy_per_gpu_j"]


def record(tp, tok, gross, net, idle, energy, seconds, per_gpu, uuid="GPU-a"):
    return {"model": "M", "precision": "fp16", "batch": "2", "tp": str(tp), "gen_len": "100",
            "gpu_uuid": uuid if tp == 1 else f"{uuid};GPU-b", "tok_s": str(tok),
            "j_per_1k_gross": str(gross), "j_per_1k_net": str(net), "idle_power_w": str(idle),
            "gpu_energy_j": str(energy), "total_time_s": str(seconds),
            "decode_gpu_energy_per_gpu_j": ";".join(str(e) for e in per_gpu)}


def planted(base_uuid="GPU-a"):
    # tp 1: 200 J over 1 s for 2 x 100 tokens = 1000 J/1k; idle 100 W. tp 2: idle 180 W.
    rows = [record(1, t, 1000 + d, 500 + d, 100, 200 + d / 5, 1.0, [50 + d], base_uuid)
            for t, d in ((100, -1), (100, 0), (100, 1))]
    rows += [record(2, t, 1200 + d, 600 + d, 180, 240 + d / 5, 0.7, [30, 31])
             for t, d in ((150, -2), (150, 0), (150, 2))]
    f = io.StringIO()
    w = csv.DictWriter(f, fieldnames=FIELDS, lineterminator="\r\n")
    w.writeheader()
    w.writerows(rows)
    return f.getvalue()


def report_rows(text):
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
        f.write(text)
    try:
        return tp_report.rows(tp_report.load([f.name]))
    finally:
        os.unlink(f.name)


class TpReport(unittest.TestCase):
    def test_means_cis_and_changes_against_tp1(self):
        one, two = report_rows(planted())
        self.assertEqual((one["key"], one["n"]), (("M", "fp16", 2, 1), 3))
        self.assertAlmostEqual(one["gross"], 1000)
        # sd 1 over 3 runs: t(2) 4.303 / sqrt(3)
        self.assertAlmostEqual(one["gross_ci"], 4.302653 / math.sqrt(3), places=5)
        self.assertTrue(math.isnan(one["d_gross"]))
        self.assertAlmostEqual(two["d_tok"], 50.0)
        self.assertAlmostEqual(two["d_gross"], 20.0)
        self.assertAlmostEqual(two["d_net"], 20.0)
        self.assertEqual(two["per_gpu"], [30, 31])
        # tp 1 plus the second GPU's 80 W idle over its 1 s: (200 + 80) J / 200 tok = 1400 J/1k
        self.assertAlmostEqual(two["d_idle"], 100 * (1200 / 1400 - 1))
        self.assertFalse(two["other_gpus"])

    def test_tp1_on_other_gpus_is_marked_and_not_compared_with_idle(self):
        _, two = report_rows(planted(base_uuid="GPU-z"))
        self.assertTrue(two["other_gpus"])
        self.assertTrue(math.isnan(two["d_idle"]))
        self.assertAlmostEqual(two["d_gross"], 20.0)

    def test_program_prints_one_line_per_configuration(self):
        with tempfile.NamedTemporaryFile("w", suffix=".csv") as f:
            f.write(planted(base_uuid="GPU-z"))
            f.flush()
            out = run(f.name)
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.splitlines()
        self.assertEqual(len(lines), 3)
        self.assertTrue(lines[2].endswith("30.0 31.0 †"), lines[2])
        self.assertIn("+50.0", lines[2])

    def test_t_quantiles_match_published_ones_at_every_df(self):
        # Two-sided 95 % quantiles from the standard tables: a run count beyond a short table
        # must not fall back to the normal's 1.96.
        for df, want in ((1, 12.706), (2, 4.303), (4, 2.776), (7, 2.365), (10, 2.228),
                         (11, 2.201), (20, 2.086), (30, 2.042), (60, 2.000), (120, 1.980)):
            self.assertAlmostEqual(tp_report.t95(df), want, places=3, msg=f"df {df}")

    def test_usage(self):
        out = run()
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("usage", out.stderr)


if __name__ == "__main__":
    unittest.main()
