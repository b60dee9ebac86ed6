"""Giving a process's free heap back to the operating system, for the request body budget
(api/body_budget.py) and the pull snapshot's loads (orchestration/snapshot/state.py). The C
library keeps what Python and the drivers freed for later use, so a process's resident memory
stays at its peak after a burst; `heap_trim` returns the free pages of every malloc arena
(glibc's malloc_trim). Elsewhere (musl, macOS) it does nothing."""
import ctypes

try:
    _trim = ctypes.CDLL(None).malloc_trim  # the C library the interpreter is linked with
    _trim.argtypes, _trim.restype = [ctypes.c_size_t], ctypes.c_int
except (OSError, AttributeError):  # not glibc: nothing to give back this way
    _trim = None


def heap_trim() -> None:
    if _trim is not None:
        _trim(0)
