"""Whether this process is answering a request now, for background work that should use the
interpreter only between requests: the pull snapshot's catch-up after a bulk write and its
freezes (orchestration/snapshot/state.py).

A request counts from Django's `request_started` signal, sent before the request object is
built, to `request_finished`, sent when the server closes the response after writing it.
Both are sent by the thread that answers the request; a thread whose request never finished
(the handler failed before it had a response) counts once, until its next request finishes.
Work that contains requests counts as one, from its beginning to its end, however many
requests it runs and however deeply nested: a request of the MQTT interface
(`request_in_progress`; it runs the WSGI application), a Celery task (`work_began` and
`work_ended` on the task signals, config/processes.py).

`idle_wait` blocks while a request is in progress; `between_requests` runs an action with
none in progress, holding back the requests that begin until it returns."""
import contextlib
import threading
import time
from collections.abc import Callable, Iterator

from django.core.signals import request_finished, request_started

# After the last request in progress has ended, an action waits this long before it runs:
# the server still holds a request's response while it returns from closing it.
LINGER_SECONDS = 0.001

_lock = threading.Lock()
_changed = threading.Condition(_lock)  # notified when the count reaches 0, or an action ends
_in_progress = 0
_held = False  # an action of between_requests is due: requests beginning wait for it
_thread = threading.local()  # counted: the thread counts; depth: work it is in (nested)


def idle_wait(timeout: float) -> bool:
    """Return once no request is in progress (True), or after `timeout` seconds (False)."""
    with _changed:
        return _changed.wait_for(lambda: not _in_progress, timeout)


def between_requests(action: Callable[[], object], timeout: float) -> bool:
    """Run `action` with no request in progress and none beginning until it has returned
    (True). It waits up to `timeout` seconds for a moment without requests; then it holds
    back the requests that begin and waits up to `timeout` more for those in progress to
    end. When they do not, it runs nothing and lets the held requests go (False). For a
    short action: requests arriving meanwhile wait for it."""
    global _held
    with _changed:
        if not _changed.wait_for(lambda: not _held, timeout):
            return False
        _changed.wait_for(lambda: not _in_progress, timeout)
        _held = True
        if not _changed.wait_for(lambda: not _in_progress, timeout):
            _held = False
            _changed.notify_all()
            return False
    try:
        time.sleep(LINGER_SECONDS)
        action()
    finally:
        with _changed:
            _held = False
            _changed.notify_all()
    return True


def _begin() -> None:
    global _in_progress
    if getattr(_thread, "counted", False):
        return  # within work that counts, or the thread's previous request never finished
    with _changed:
        while _held:
            _changed.wait()
        _in_progress += 1
    _thread.counted = True


def _end() -> None:
    global _in_progress
    if not getattr(_thread, "counted", False):
        return
    _thread.counted = False
    with _changed:
        _in_progress -= 1
        if not _in_progress:
            _changed.notify_all()


def request_began(**kwargs) -> None:
    """Django's `request_started`."""
    _begin()


def request_ended(**kwargs) -> None:
    """Django's `request_finished`: the request's count ends, unless work that contains it
    goes on."""
    if not getattr(_thread, "depth", 0):
        _end()


def work_began(**kwargs) -> None:
    """Work that may run requests (and nest) begins: it counts until it ends."""
    _thread.depth = getattr(_thread, "depth", 0) + 1
    _begin()


def work_ended(**kwargs) -> None:
    depth = getattr(_thread, "depth", 0)
    if depth:
        _thread.depth = depth - 1
        if depth == 1:
            _end()


@contextlib.contextmanager
def request_in_progress() -> Iterator[None]:
    """What the block answers counts as one request (a request of the MQTT interface)."""
    work_began()
    try:
        yield
    finally:
        work_ended()


def requests_count() -> None:
    """Count the requests of this process from now on (api/apps.py, at start)."""
    request_started.connect(request_began, dispatch_uid="api.requests_in_progress.began")
    request_finished.connect(request_ended, dispatch_uid="api.requests_in_progress.ended")
