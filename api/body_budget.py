"""The bytes of requests one MQTT interface process (mqtt_api.server) holds in flight, out of a
fixed budget (issue 29, item 4; docs/limits.md): a request's payload is reserved while it waits
and is answered; one that does not fit is answered 503 at once. (The web process needs none:
nginx holds bodies in flight, on disk beyond 128 KiB; docs/decisions.md.)

When a burst is over (nothing held any more after more than TRIM_AFTER_BYTES were held), the
process gives its free heap back to the operating system: CPython hands large buffers (a body
of a few MiB) to glibc's malloc, which keeps the freed memory in its arenas, so without this a
process stays at its peak size after a burst (docs/decisions.md).
"""
import ctypes
import threading

# How long a refused client is asked to wait (the Retry-After of the 503).
RETRY_AFTER_SECONDS = 5
# A burst that held more than this is followed by giving free memory back to the system.
TRIM_AFTER_BYTES = 8 * 1024 * 1024


class BodyBudget:
    """A thread-safe count of the bytes reserved out of `total`."""

    def __init__(self, total: int) -> None:
        self.total = total
        self._held = 0
        self._peak = 0  # the most held since the last trim
        self._lock = threading.Lock()

    @property
    def held(self) -> int:
        return self._held

    def reserve(self, size: int) -> bool:
        """Reserve `size` bytes; False (nothing reserved) when they do not fit."""
        with self._lock:
            if self._held + size > self.total:
                return False
            self._held += size
            self._peak = max(self._peak, self._held)
            return True

    def release(self, size: int) -> None:
        """Give back `size` bytes of what was reserved (0 is a no-op)."""
        if not size:
            return
        with self._lock:
            self._held -= size
            trim = self._held == 0 and self._peak > TRIM_AFTER_BYTES
            if trim:
                self._peak = 0
        if trim:
            release_free_memory()


def busy_message(what: str) -> str:
    return (f"Too many request bodies are being received at once ({what}); "
            f"retry in {RETRY_AFTER_SECONDS} seconds")


def _malloc_trim():
    try:
        trim = ctypes.CDLL(None).malloc_trim  # the C library the interpreter is linked with
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to give back this way
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


_trim = _malloc_trim()


def release_free_memory() -> None:
    """Return the free pages of every malloc arena to the operating system (glibc only)."""
    if _trim is not None:
        _trim(0)
