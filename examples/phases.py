"""phases.py: a Python program whose two phases `ecocompute meter` measures separately.

    ecocompute meter --idle 5 -- python3 examples/phases.py

"load" reads the bundled 260K-parameter model; "generate" has `ecocompute run` write a story with
it on the CPU. The meter prints the whole command and one row per window (duration, GPU energy
gross and net, CPU energy). Run from the repository root; uses the installed `ecocompute`
package (pip install ./python), else the checkout's python/ folder.
"""
import os
import subprocess
import sys

try:
    import ecocompute
except ImportError:  # not installed: the package beside this checkout
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import ecocompute

MODEL = "tests/data/models/stories260K.bin"
TOKENIZER = "tests/data/models/tok512.bin"

with ecocompute.window("load"):
    with open(MODEL, "rb") as f:
        weights = f.read()
print("loaded %d bytes of weights" % len(weights), file=sys.stderr)

with ecocompute.window("generate"):
    subprocess.run(["ecocompute", "run", "--model", MODEL, "--tokenizer", TOKENIZER,
                    "--device", "cpu", "--gen", "256", "--prompt", "Once upon a time"],
                   check=True)
