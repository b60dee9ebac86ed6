"""The count of requests in progress (api/requests_in_progress.py), between which background
work of the process runs: from Django's request_started to request_finished."""
import io
import threading
import time

import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started

from api import requests_in_progress
from api.requests_in_progress import between_requests, idle_wait, request_in_progress


def held_request() -> tuple[threading.Thread, threading.Event, threading.Event]:
    """A request in progress (begun and not finished, by Django's signals, in a thread of its
    own) until `release` is set."""
    entered, release = threading.Event(), threading.Event()

    def answer() -> None:
        request_started.send(sender=WSGIHandler, environ={})
        entered.set()
        release.wait(10)
        request_finished.send(sender=WSGIHandler)

    thread = threading.Thread(target=answer)
    thread.start()
    assert entered.wait(5)
    return thread, entered, release


def echo_environ() -> dict:
    return {"REQUEST_METHOD": "GET", "PATH_INFO": "/serviceorchestration/monitor/echo",
            "SERVER_NAME": "localhost", "SERVER_PORT": "8465", "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(), "wsgi.errors": io.StringIO()}


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


def test_a_request_counts_until_the_server_has_closed_its_response():
    """Its objects (the response the server writes included) are alive until then."""
    statuses = []
    response = WSGIHandler()(echo_environ(), lambda status, headers: statuses.append(status))
    assert statuses == ["200 OK"]
    assert not idle_wait(0)  # answered, not yet written and closed
    response.close()
    assert idle_wait(0)


def test_a_refused_request_ends_too(client):
    assert client.get("/serviceorchestration/no-such-thing").status_code == 401
    assert idle_wait(0)


def test_a_request_that_never_finished_counts_once_until_its_threads_next_one_ends():
    request_started.send(sender=WSGIHandler, environ={})  # its handler failed: no finish
    request_started.send(sender=WSGIHandler, environ={})  # the thread's next request
    assert requests_in_progress._in_progress == 1
    request_finished.send(sender=WSGIHandler)
    assert idle_wait(0)
    request_finished.send(sender=WSGIHandler)  # not counted: nothing to end
    assert requests_in_progress._in_progress == 0


def test_between_requests_runs_the_action_once_they_have_ended():
    request, _, release = held_request()
    ran = []
    try:
        assert not between_requests(lambda: ran.append("too soon"), 0.1)
        assert ran == []
        threading.Timer(0.2, release.set).start()
        assert between_requests(lambda: ran.append(idle_wait(0)), 5)
        assert ran == [True]
    finally:
        release.set()
        request.join(5)


def test_between_requests_holds_back_new_requests_while_those_in_progress_end():
    """No moment without requests comes within the wait: new requests are held back, and
    the action runs once those in progress have ended."""
    request, _, release = held_request()
    entered, ran = threading.Event(), []

    def answer() -> None:
        request_started.send(sender=WSGIHandler, environ={})
        entered.set()
        request_finished.send(sender=WSGIHandler)

    newcomer = threading.Thread(target=answer)
    try:
        threading.Timer(0.7, newcomer.start).start()  # while the one in progress drains
        threading.Timer(0.8, release.set).start()
        assert between_requests(lambda: ran.append(entered.is_set()), 0.5)
        assert ran == [False]  # the newcomer waited for the action
        assert entered.wait(5)
    finally:
        release.set()
        request.join(5)
        newcomer.join(5)
    assert idle_wait(5)


def test_between_requests_lets_held_requests_go_when_those_in_progress_do_not_end():
    request, _, release = held_request()
    entered = threading.Event()

    def answer() -> None:
        request_started.send(sender=WSGIHandler, environ={})
        entered.set()
        request_finished.send(sender=WSGIHandler)

    try:
        threading.Timer(0.15, lambda: threading.Thread(target=answer).start()).start()
        assert not between_requests(lambda: pytest.fail("ran"), 0.1)
        assert entered.wait(5)  # held back for the drain at most, then let go
    finally:
        release.set()
        request.join(5)
    assert idle_wait(5)


def test_a_request_beginning_during_the_action_waits_until_it_has_returned():
    acting, finish, order = threading.Event(), threading.Event(), []

    def action() -> None:
        acting.set()
        finish.wait(5)
        order.append("action")

    runner = threading.Thread(target=between_requests, args=(action, 5))
    runner.start()
    assert acting.wait(5)
    request, entered, release = None, threading.Event(), threading.Event()
    try:
        def answer() -> None:
            request_started.send(sender=WSGIHandler, environ={})
            order.append("request")
            entered.set()
            release.wait(5)
            request_finished.send(sender=WSGIHandler)

        request = threading.Thread(target=answer)
        request.start()
        assert not entered.wait(0.3)  # held back while the action runs
        finish.set()
        assert entered.wait(5)
        assert order == ["action", "request"]
    finally:
        finish.set()
        release.set()
        runner.join(5)
        if request is not None:
            request.join(5)
    assert idle_wait(0)


def test_a_block_counts_as_a_request_until_it_ends_or_fails():
    """The MQTT interface's requests (mqtt_api/server.py), which run the WSGI application:
    the request it runs ends within the block, and the block still counts."""
    with request_in_progress():
        assert not idle_wait(0)
        response = WSGIHandler()(echo_environ(), lambda status, headers: None)
        response.close()  # request_finished
        assert not idle_wait(0)
        with request_in_progress():  # nested
            pass
        assert not idle_wait(0)
    assert idle_wait(0)
    try:
        with request_in_progress():
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert idle_wait(0)


def test_a_celery_worker_process_counts_its_tasks(monkeypatch):
    from celery.signals import task_postrun, task_prerun

    from api import heap
    from config import processes
    from orchestration.snapshot import state

    monkeypatch.setattr(state, "snapshot_start", lambda: None)
    monkeypatch.setattr(heap, "heap_large_blocks_apart", lambda: None)
    try:
        processes.worker_child_start()
        task_prerun.send(sender=None, task_id="1", task=None, args=(), kwargs={})
        assert not idle_wait(0)
        task_prerun.send(sender=None, task_id="2", task=None, args=(), kwargs={})  # eager
        task_postrun.send(sender=None, task_id="2", task=None, args=(), kwargs={},
                          retval=None, state="SUCCESS")
        assert not idle_wait(0)  # the outer task goes on
        task_postrun.send(sender=None, task_id="1", task=None, args=(), kwargs={},
                          retval=None, state="SUCCESS")
        assert idle_wait(0)
    finally:
        task_prerun.disconnect(dispatch_uid="config.processes.task_began")
        task_postrun.disconnect(dispatch_uid="config.processes.task_ended")
