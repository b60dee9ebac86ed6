"""Whether this process is answering a request now, for background work that should use the
interpreter only between requests: the pull snapshot's catch-up after a bulk write
(orchestration/snapshot/state.py). The middleware, first in the chain, counts the requests in
progress; `idle_wait` blocks while there is one."""
import threading
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

_lock = threading.Lock()
_in_progress = 0
_idle = threading.Event()
_idle.set()


def idle_wait(timeout: float) -> bool:
    """Return once no request is in progress (True), or after `timeout` seconds (False)."""
    return _idle.is_set() or _idle.wait(timeout)


class RequestsInProgressMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        global _in_progress
        with _lock:
            _in_progress += 1
            _idle.clear()
        try:
            return self.get_response(request)
        finally:
            with _lock:
                _in_progress -= 1
                if not _in_progress:
                    _idle.set()
