"""bench_script.py — what the tests of bench/'s Python reports share: a report loaded as a module
(its functions under test), run as a program (its output, messages and exit status), and the
planted tool output beside the tests."""
import importlib.util
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def load(name):
    """bench/NAME.py as a module (its path in __file__)."""
    path = os.path.join(HERE, "..", "..", "bench", name + ".py")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def runner(module):
    """run(*args, stdin=None): the module's script as a program, its output captured."""
    def run(*args, stdin=None):
        return subprocess.run([sys.executable, module.__file__, *args], input=stdin,
                              capture_output=True, text=True, check=False)
    return run


def fixture(name):
    """The text of tests/bench/NAME."""
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        return f.read()
