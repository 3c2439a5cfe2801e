# marks_child.py: a Python child of `ecocompute meter` that marks two windows with the ecocompute
# package (python/), for test_meter_marks.sh.
import sys
import time

sys.path.insert(0, sys.argv[1])
import ecocompute  # noqa: E402

assert ecocompute.under_meter()
with ecocompute.window("load"):
    time.sleep(0.3)
ecocompute.begin_window("generate")
time.sleep(0.2)
ecocompute.end_window("generate")
