#!/usr/bin/env python3
"""stand_in_peer.py — bench/torch_graph_peer.py's outside for tests without torch or a GPU: the
same arguments, an `idle` window and `decode_b<B>_r<i>` windows through the marker protocol
(each of whole decode phases lasting at least --min-window seconds), and a summary of the same
form; its decode runs at STAND_IN_STEP_MS per step (default 2 ms), whatever the batch size."""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import ecocompute  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    for flag in ("--model", "--batch", "--summary"):
        ap.add_argument(flag, required=True)
    for flag in ("--prompt-len", "--gen", "--runs"):
        ap.add_argument(flag, type=int, required=True)
    ap.add_argument("--stabilize", type=float, default=0)
    ap.add_argument("--min-window", type=float, default=0)
    ap.add_argument("--idle", type=float, default=0)
    a = ap.parse_args()
    hold = a.min_window
    step_s = float(os.environ.get("STAND_IN_STEP_MS", "2")) / 1e3
    summary = dict(model=a.model, torch="stand-in", device="none", prompt_len=a.prompt_len,
                   gen=a.gen, bucket=64, idle_window="idle", batches=[])
    with ecocompute.window("idle"):
        time.sleep(a.idle)
    for b in (int(x) for x in a.batch.split(",")):
        rec = dict(batch=b, decode_steps=a.gen - 1, tokens_per_phase=b * (a.gen - 1), graphs=1,
                   check=dict(graph_equals_eager=True, steps=4, tokens_eager=[5, 6, 7, 8],
                              tokens_graph=[5, 6, 7, 8], reference_token_agreement=1.0,
                              max_abs_logit_diff=0.0, max_abs_logit=1.0),
                   windows=[])
        for r in range(a.runs):
            name = f"decode_b{b}_r{r + 1}"
            phase_s = step_s * (a.gen - 1)
            reps = max(1, -int(-hold // phase_s))
            with ecocompute.window(name):
                time.sleep(reps * phase_s)
            rec["windows"].append(dict(name=name, repeats=reps, host_s=reps * phase_s,
                                       tokens=reps * rec["tokens_per_phase"]))
        summary["batches"].append(rec)
    with open(a.summary, "w") as f:
        json.dump(summary, f)


if __name__ == "__main__":
    main()
