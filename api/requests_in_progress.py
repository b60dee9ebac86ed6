"""Whether this process is answering a request now, for background work that should use the
interpreter only between requests: the pull snapshot's catch-up after a bulk write and its
freezes (orchestration/snapshot/state.py).

A request counts from Django's `request_started` signal, sent before the request object is
built, to `request_finished`, sent when the server closes the response after writing it: the
whole time its objects may be alive, the response included. Both are sent by the thread that
answers the request; a thread whose request never finished (the handler failed before it had
a response) counts once, until its next request finishes. `idle_wait` blocks while a request
is in progress; `between_requests` runs an action once none is, holding back the requests
that begin meanwhile until it returns. The MQTT interface counts its requests
(`request_in_progress`), a Celery worker process its tasks (config/processes.py)."""
import contextlib
import threading
from collections.abc import Callable, Iterator

from django.core.signals import request_finished, request_started

_lock = threading.Lock()
_changed = threading.Condition(_lock)  # notified when the count reaches 0, or an action ends
_in_progress = 0
_held = False  # an action of between_requests runs: requests beginning wait for it
_thread = threading.local()


def idle_wait(timeout: float) -> bool:
    """Return once no request is in progress (True), or after `timeout` seconds (False)."""
    with _changed:
        return _changed.wait_for(lambda: not _in_progress, timeout)


def between_requests(action: Callable[[], object], timeout: float) -> bool:
    """Run `action` once no request is in progress, and hold back the requests that begin
    until it has returned (True); False, without running it, when requests went on for
    `timeout` seconds. For a short action: a request arriving meanwhile waits for it."""
    global _held
    with _changed:
        if not _changed.wait_for(lambda: not _in_progress and not _held, timeout):
            return False
        _held = True
    try:
        action()
    finally:
        with _changed:
            _held = False
            _changed.notify_all()
    return True


def request_began(**kwargs) -> None:
    global _in_progress
    if getattr(_thread, "counted", False):
        return  # the thread's previous request never finished: it counts still, once
    with _changed:
        while _held:
            _changed.wait()
        _in_progress += 1
    _thread.counted = True


def request_ended(**kwargs) -> None:
    global _in_progress
    if not getattr(_thread, "counted", False):
        return
    _thread.counted = False
    with _changed:
        _in_progress -= 1
        if not _in_progress:
            _changed.notify_all()


@contextlib.contextmanager
def request_in_progress() -> Iterator[None]:
    """What the block answers counts as a request (a request of the MQTT interface)."""
    request_began()
    try:
        yield
    finally:
        request_ended()


def requests_count() -> None:
    """Count the requests of this process from now on (api/apps.py, at start)."""
    request_started.connect(request_began, dispatch_uid="api.requests_in_progress.began")
    request_finished.connect(request_ended, dispatch_uid="api.requests_in_progress.ended")
