"""The C library's heap (api/heap.py): with `heap_large_blocks_apart`, large blocks freed
leave the process's resident memory, wherever they lay among those still in use."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# In a fresh interpreter: one large block freed (glibc raises its threshold to its size
# unless fixed), then 200 such blocks, every other one freed; prints the resident KiB the
# freeing gave back.
FREED_AMONG_OTHERS = """
import sys
from api.heap import heap_large_blocks_apart

def resident():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))

if sys.argv[1] == "apart":
    heap_large_blocks_apart()
block = bytearray(300_000)
del block
blocks = [bytearray(300_000) for _ in range(200)]
before = resident()
del blocks[::2]
print(before - resident())
"""


def freed_kib(mode: str) -> int:
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith("MALLOC_") and key != "GLIBC_TUNABLES"}
    return int(subprocess.run([sys.executable, "-c", FREED_AMONG_OTHERS, mode], cwd=ROOT,
                              env=environment, capture_output=True, text=True, check=True,
                              timeout=60).stdout)


def test_large_blocks_freed_among_others_leave_resident_memory():
    assert freed_kib("apart") > 25_000  # 100 blocks of 293 KiB
    assert freed_kib("default") < 5_000  # glibc's own threshold kept them in the heap


def test_an_operators_own_threshold_is_left_as_it_is(monkeypatch):
    from api import heap

    calls = []
    monkeypatch.setattr(heap, "_mallopt", lambda *arguments: calls.append(arguments))
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "1048576")
    heap.heap_large_blocks_apart()
    assert calls == []
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_")
    heap.heap_large_blocks_apart()
    assert calls == [(heap._M_MMAP_THRESHOLD, heap.LARGE_BLOCK_BYTES)]
