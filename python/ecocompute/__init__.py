"""ecocompute: name the phases of a Python program so that `ecocompute meter` measures each one.

Under `ecocompute meter -- python prog.py`, the meter passes a writable file descriptor's number in
ECOCOMPUTE_MARK_FD; this module writes `begin NAME` / `end NAME` lines to it, and the meter reports
each named window (gross and net J, duration, average W, per GPU) next to the whole command.

    import ecocompute
    with ecocompute.window("load"):
        model = load()
    ecocompute.begin_window("generate"); generate(model); ecocompute.end_window("generate")

Outside the meter there is nothing to measure with: the calls raise NotUnderMeter unless
`strict=False` was given to configure(), in which case they warn once and do nothing.
"""
import contextlib
import os
import warnings

__all__ = ["window", "begin_window", "end_window", "under_meter", "configure", "NotUnderMeter"]

MARK_FD_ENV = "ECOCOMPUTE_MARK_FD"
_strict = True
_warned = False


class NotUnderMeter(RuntimeError):
    """Raised when a window is marked but the program does not run under `ecocompute meter`."""


def configure(strict=True):
    """strict=False: outside the meter, warn once and ignore windows instead of raising."""
    global _strict
    _strict = strict


def under_meter():
    """True when ECOCOMPUTE_MARK_FD names a file descriptor that this process can write to."""
    return _mark_fd() is not None


def _mark_fd():
    value = os.environ.get(MARK_FD_ENV)
    if not value or not value.isdigit():
        return None
    fd = int(value)
    try:
        os.fstat(fd)
    except OSError:
        return None
    return fd


def _check_name(name):
    if not isinstance(name, str) or not name or len(name.encode()) > 63:
        raise ValueError("window name must be a non-empty string of at most 63 bytes: %r" % (name,))
    if any(ord(c) < 0x20 or c == '"' for c in name):
        raise ValueError("window name must not contain control characters or '\"': %r" % (name,))


def _mark(kind, name):
    global _warned
    _check_name(name)
    fd = _mark_fd()
    if fd is None:
        why = ("not running under `ecocompute meter` (%s is not set to an open file descriptor); "
               "run: ecocompute meter -- python YOUR_PROGRAM.py" % MARK_FD_ENV)
        if _strict:
            raise NotUnderMeter(why)
        if not _warned:
            warnings.warn(why + "; windows are ignored", RuntimeWarning, stacklevel=3)
            _warned = True
        return
    # One write per line: the meter reads whole lines, and a pipe write this short is atomic.
    os.write(fd, ("%s %s\n" % (kind, name)).encode())


def begin_window(name):
    """Starts the named window now (its energy counts from this moment)."""
    _mark("begin", name)


def end_window(name):
    """Ends the named window now."""
    _mark("end", name)


@contextlib.contextmanager
def window(name):
    """Context manager: the window covers the `with` block, also when it raises."""
    begin_window(name)
    try:
        yield
    finally:
        end_window(name)
