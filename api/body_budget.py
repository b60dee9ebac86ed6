"""The bytes of requests one MQTT interface process (mqtt_api.server) holds in flight, out of a
fixed budget (docs/limits.md): a request's payload is reserved while it waits and is answered;
one that does not fit is answered 503 at once. After a burst the process gives its free heap
back to the operating system, or glibc's malloc would keep it at its peak size
(docs/decisions.md)."""
import threading

from api.heap import heap_trim

# How long a refused client is asked to wait (the Retry-After of the 503).
RETRY_AFTER_SECONDS = 5
# A burst that held more than this is followed by giving free memory back to the system.
TRIM_AFTER_BYTES = 8 * 1024 * 1024


class BodyBudget:
    """A thread-safe count of the bytes reserved out of `total`."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.held = 0
        self._peak = 0  # the most held since the last trim
        self._lock = threading.Lock()

    def reserve(self, size: int) -> bool:
        """Reserve `size` bytes; False (nothing reserved) when they do not fit."""
        with self._lock:
            if self.held + size > self.total:
                return False
            self.held += size
            self._peak = max(self._peak, self.held)
            return True

    def release(self, size: int) -> None:
        """Give back `size` bytes of what was reserved (0 is a no-op)."""
        if not size:
            return
        with self._lock:
            self.held -= size
            trim = self.held == 0 and self._peak > TRIM_AFTER_BYTES
            if trim:
                self._peak = 0
        if trim:
            heap_trim()  # every malloc arena's free pages back to the operating system


def busy_message(what: str) -> str:
    return (f"Too many request bodies are being received at once ({what}); "
            f"retry in {RETRY_AFTER_SECONDS} seconds")

