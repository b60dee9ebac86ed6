"""Issue 29, item 4: one web process holds at most REQUEST_BODY_BUDGET_BYTES of request bodies
in flight. Against the real server (one worker process, a budget of three bodies): many
clients declaring large bodies they have not sent pin no more than the budget; those beyond it
are answered 503 with Retry-After at once, before any of their bodies is sent; those within it
are still served when they send their bodies, and the budget is free again once their requests
end, however they end (answered, timed out, the client gone)."""
import http.client
import json
import select
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.orchestration.helpers import PULL
from tests.web_server import module_gunicorn

pytestmark = pytest.mark.django_db(transaction=True)

BODY_SIZE = 1_000_000
FITTING = 3  # bodies of BODY_SIZE the budget holds at once
BUDGET = FITTING * BODY_SIZE + 50_000
BODY_TIMEOUT = 4
PATIENCE = 20.0


@pytest.fixture(scope="module")
def server(django_db_setup, django_db_blocker, tmp_path_factory):
    """One worker process, so that every request meets the same budget."""
    with module_gunicorn({"WEB_CONCURRENCY": "1", "MAX_REQUEST_BODY_BYTES": str(2 * BODY_SIZE),
                          "REQUEST_BODY_BUDGET_BYTES": str(BUDGET),
                          "SERVER_BODY_TIMEOUT_SECONDS": str(BODY_TIMEOUT)},
                         django_db_blocker, tmp_path_factory) as port:
        yield port


def pull_body(size: int = BODY_SIZE) -> bytes:
    """A valid pull, padded with whitespace to `size` bytes: only its size matters."""
    body = json.dumps({"serviceRequirement": {"serviceDefinition": "temperatureInfo"}})
    return body.encode() + b" " * (size - len(body))


def head(*headers: str) -> bytes:
    lines = [f"POST {PULL} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json",
             "Authorization: Bearer SYSTEM//Car1", "Connection: close", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def started(port: int, sent: bytes) -> socket.socket:
    """A connection that has sent `sent` (a head, perhaps part of the body) and waits."""
    connection = socket.create_connection(("127.0.0.1", port), timeout=PATIENCE)
    connection.sendall(sent)
    return connection


def answer(connection: socket.socket) -> http.client.HTTPResponse:
    response = http.client.HTTPResponse(connection)
    response.begin()
    return response


def unanswered(connection: socket.socket) -> bool:
    connection.setblocking(False)
    try:
        return not connection.recv(1, socket.MSG_PEEK)  # closed without an answer: False
    except BlockingIOError:
        return True
    finally:
        connection.settimeout(PATIENCE)


@contextmanager
def filling(port: int, beyond: int = 1) -> Iterator[list[socket.socket]]:
    """FITTING + `beyond` requests that declare a body of BODY_SIZE and send none of it:
    `beyond` of them (whichever the server takes in last) are answered 503 at once, which
    shows that the budget is full; yields the others, waiting for their bodies."""
    connections = [started(port, head(f"Content-Length: {BODY_SIZE}"))
                   for _ in range(FITTING + beyond)]
    try:
        sent = time.monotonic()
        refused = first_answered(connections, beyond)
        assert time.monotonic() - sent < PATIENCE / 2
        for connection in refused:
            assert_busy(answer(connection))
        yield [connection for connection in connections if connection not in refused]
    finally:
        for connection in connections:
            connection.close()


def first_answered(connections: list[socket.socket], count: int) -> list[socket.socket]:
    """The first `count` of `connections` to receive something."""
    deadline, ready = time.monotonic() + PATIENCE, []
    while len(ready) < count and time.monotonic() < deadline:
        waiting = [connection for connection in connections if connection not in ready]
        ready += select.select(waiting, [], [], 0.1)[0]
    assert len(ready) >= count, f"{len(ready)} of {count} requests answered in {PATIENCE} s"
    return ready[:count]


def assert_busy(response: http.client.HTTPResponse) -> None:
    envelope = json.loads(response.read())
    assert response.status == 503, envelope
    assert response.getheader("Retry-After") == "5"
    assert envelope["exceptionType"] == "EXTERNAL_SERVER_ERROR"
    assert envelope["origin"] == f"POST {PULL}"
    assert envelope["errorMessage"].startswith("Too many request bodies are being received at "
                                               f"once (at most {BUDGET} bytes per process)")


def assert_all_served(connections: list[socket.socket]) -> None:
    """The waiting requests, still unanswered, are served once their bodies are sent."""
    assert all(map(unanswered, connections)), "a request within the budget was answered early"
    body = pull_body()
    for connection in connections:
        connection.sendall(body)
    for connection in connections:
        response = answer(connection)
        assert response.status == 200, response.read()
        response.read()
        # The server closes the connection after giving the request's reservation back.
        assert connection.recv(1) == b""


def assert_budget_free(port: int) -> None:
    """As many large bodies as the budget holds are taken in (and no more) and served."""
    with filling(port) as waiting:
        assert_all_served(waiting)


def test_bodies_beyond_the_budget_are_refused_at_once_and_the_others_served(server):
    with filling(server, beyond=5) as waiting:
        assert_all_served(waiting)
    assert_budget_free(server)


def test_the_budget_is_given_back_when_the_client_goes_or_the_body_times_out(server):
    with filling(server) as waiting:
        waiting[0].close()  # the client gone
        late = [answer(connection) for connection in waiting[1:]]  # the body deadline
        assert [response.status for response in late] == [408] * (FITTING - 1)
    assert_budget_free(server)


def test_a_body_sent_after_100_continue_is_refused_before_the_continue(server):
    with filling(server) as waiting:
        with started(server, head(f"Content-Length: {BODY_SIZE}",
                                  "Expect: 100-continue")) as expecting:
            first = expecting.makefile("rb").readline()  # not "HTTP/1.1 100 Continue"
            assert first == b"HTTP/1.1 503 Service Unavailable\r\n"
        assert_all_served(waiting)
    assert_budget_free(server)


def test_a_chunked_body_growing_past_the_budget_is_refused(server):
    with filling(server) as waiting:
        # What is left of the budget is 50 kB: a chunked body is refused once it outgrows it.
        data = pull_body(120_000)
        framed = b"".join(b"%x\r\n%s\r\n" % (len(data[i:i + 10_000]), data[i:i + 10_000])
                          for i in range(0, len(data), 10_000))
        with started(server, head("Transfer-Encoding: chunked") + framed) as chunked:
            response = answer(chunked)
            assert (response.status, response.getheader("Retry-After")) == (503, "5")
        assert_all_served(waiting)
    assert_budget_free(server)
