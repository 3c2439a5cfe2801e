#!/usr/bin/env python3
"""test_trace_report.py — bench/trace_report.py on planted kernel traces (the CSV of
bench/kernel_trace.c): decode steps found as repeated CUDA-graph launches, one layer's kernels
found by repetition, and for a tensor-parallel trace (a device column with two GPUs) one report
per GPU with the share of the step its NCCL all-reduces take; a trace without the device column
(written before it existed) reads as one GPU."""
import tempfile
import unittest

from bench_script import load, runner

trace_report = load("trace_report")
run = runner(trace_report)

HEADER = "start_ns,end_ns,graph_id,graph_node_id,grid,block,registers,device,name\n"


def trace(devices, steps=5, layers=4, comm_ns=0, with_device=True):
    """A decode trace: per GPU, `steps` launches of one graph whose step is `layers` layers of
    a 10 µs GEMV, then (when comm_ns) an NCCL all-reduce of comm_ns, and a final 5 µs head;
    steps start every 100 µs, kernels back to back."""
    lines = []
    for dev in devices:
        graph = 10 + dev
        for s in range(steps):
            t, node = 1_000_000 + s * 100_000, 0
            kernels = []
            for _ in range(layers):
                kernels.append((10_000, "_Z4gemvv"))
                if comm_ns:
                    kernels.append((comm_ns, "_Z38ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE"))
            kernels.append((5_000, "_Z4headv"))
            for dur, name in kernels:
                dev_col = f"{dev}," if with_device else ""
                lines.append(f"{t},{t + dur},{graph},{node},128x1,256,64,{dev_col}{name}\n")
                t, node = t + dur, node + 1
    header = HEADER if with_device else HEADER.replace("device,", "")
    return header + "".join(lines)


def report(text, *args):
    with tempfile.NamedTemporaryFile("w", suffix=".csv") as f:
        f.write(text)
        f.flush()
        return run(f.name, *args)


class TraceReport(unittest.TestCase):
    def test_one_gpu(self):
        out = report(trace([0]), "4")
        self.assertEqual(out.returncode, 0, out.stderr)
        # 5 launches, the first two dropped; 4 x 10 µs + 5 µs.
        self.assertIn("decode steps: 3 of 5 kernels; wall 45.0 µs", out.stdout)
        self.assertIn("one layer: 1 kernels (from kernel 0), mean over 4 layers x 3 steps",
                      out.stdout)
        self.assertNotIn("== GPU", out.stdout)
        self.assertNotIn("all-reduce", out.stdout)

    def test_trace_without_device_column_reads_as_one_gpu(self):
        out = report(trace([0], with_device=False), "4")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("decode steps: 3 of 5 kernels; wall 45.0 µs", out.stdout)

    def test_tensor_parallel_trace_per_gpu_with_all_reduce_share(self):
        out = report(trace([0, 1], comm_ns=5_000), "4")
        self.assertEqual(out.returncode, 0, out.stderr)
        gpus = out.stdout.split("== GPU ")[1:]
        self.assertEqual([g.split("\n", 1)[0] for g in gpus], ["0", "1"])
        for g in gpus:
            # 4 x (10 + 5) + 5 = 65 µs, of which 4 x 5 = 20 µs in NCCL: 30.8 %.
            self.assertIn("decode steps: 3 of 9 kernels; wall 65.0 µs", g)
            self.assertIn("all-reduce (NCCL kernels): 4 per step, 20.0 µs per step (median), "
                          "30.8 % of the step's wall time", g)
            self.assertIn("one layer: 2 kernels", g)

    def test_no_graph_kernels_is_an_error(self):
        out = report(HEADER + "1,2,0,0,1x1,32,8,0,_Z4prefv\n")
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("no CUDA-graph kernels", out.stderr)


if __name__ == "__main__":
    unittest.main()
