"""The count of requests in progress (api/requests_in_progress.py), between which background
work of the process runs."""
import threading
import time

import pytest
from django.http import HttpResponse

from api import requests_in_progress
from api.requests_in_progress import RequestsInProgressMiddleware, idle_wait


def held_request() -> tuple[threading.Thread, threading.Event, threading.Event]:
    """A request in progress (through the middleware) until `release` is set."""
    entered, release = threading.Event(), threading.Event()

    def respond(request) -> HttpResponse:
        entered.set()
        release.wait(10)
        return HttpResponse()

    thread = threading.Thread(target=RequestsInProgressMiddleware(respond), args=(None,))
    thread.start()
    assert entered.wait(5)
    return thread, entered, release


def test_idle_wait_returns_at_once_without_requests():
    started = time.monotonic()
    assert idle_wait(5)
    assert time.monotonic() - started < 1


def test_idle_wait_waits_for_every_request_in_progress_to_end():
    first, _, release_first = held_request()
    second, _, release_second = held_request()
    try:
        assert not idle_wait(0.1)
        release_first.set()
        first.join(5)
        assert not idle_wait(0.1)  # the second is still answered
        ended = threading.Timer(0.2, release_second.set)
        ended.start()
        started = time.monotonic()
        assert idle_wait(5)
        assert 0.1 < time.monotonic() - started < 4
    finally:
        release_first.set()
        release_second.set()
        second.join(5)
    assert requests_in_progress._in_progress == 0


def test_a_failed_request_ends_too():
    def respond(request):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        RequestsInProgressMiddleware(respond)(None)
    assert idle_wait(0)
