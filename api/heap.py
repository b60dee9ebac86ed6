"""The C library's heap of a process (glibc's malloc), as the web, worker and MQTT interface
processes use it. The C library keeps what Python and the drivers freed for later use, so a
process's resident memory stays at its peak after a burst:

- `heap_trim` returns the free pages of every malloc arena (glibc's malloc_trim), for the
  request body budget (api/body_budget.py) and the pull snapshot's loads
  (orchestration/snapshot/state.py);
- `heap_large_blocks_apart`, at a process's start (config/processes.py), keeps every block
  of LARGE_BLOCK_BYTES or more in a mapping of its own, given back when it is freed.

Elsewhere (musl, macOS) both do nothing."""
import ctypes
import os

# glibc's own default threshold. Left to itself, glibc raises it to the size of each large
# block freed (up to 32 MiB), after which such blocks are carved from the heap of the thread
# that asks: request bodies and rendered answers of 128 KiB to a few MiB then left each
# request thread's heap at its peak size, 12 MiB apiece in a web process that had served
# a million rules' bulk writes (docs/performance.md, "Frozen garbage").
LARGE_BLOCK_BYTES = 128 * 1024
_M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)

try:
    _libc = ctypes.CDLL(None)  # the C library the interpreter is linked with
    _trim, _mallopt = _libc.malloc_trim, _libc.mallopt
    _trim.argtypes, _trim.restype = [ctypes.c_size_t], ctypes.c_int
    _mallopt.argtypes, _mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
except (OSError, AttributeError):  # not glibc: nothing to give back this way
    _trim = _mallopt = None


def heap_trim() -> None:
    if _trim is not None:
        _trim(0)


def heap_large_blocks_apart() -> None:
    """From now on, blocks of LARGE_BLOCK_BYTES or more are mapped apart and unmapped when
    freed (a fixed threshold: glibc no longer raises it, nor the trim threshold with it).
    An operator's MALLOC_MMAP_THRESHOLD_ (glibc's own variable) is left as it is."""
    if _mallopt is not None and "MALLOC_MMAP_THRESHOLD_" not in os.environ:
        _mallopt(_M_MMAP_THRESHOLD, LARGE_BLOCK_BYTES)
