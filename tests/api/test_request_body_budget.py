"""Bodies in flight are held by nginx, not by the web process (issue 31, item 5; it replaced
the per-process REQUEST_BODY_BUDGET_BYTES of issue 29, item 4; docs/decisions.md). Against the
real server (one worker process of two threads): more clients than threads, each declaring a
large body and sending half of it, hold no thread and are not refused; the service answers
others meanwhile, and serves each of them once its body is complete."""
import http.client
import json
import socket

import pytest

from tests.orchestration.helpers import PULL
from tests.web_server import module_gunicorn

pytestmark = pytest.mark.django_db(transaction=True)

BODY_SIZE = 1_000_000
CLIENTS = 12
PATIENCE = 20.0


@pytest.fixture(scope="module")
def server(django_db_setup, django_db_blocker, tmp_path_factory):
    with module_gunicorn({"WEB_CONCURRENCY": "1", "WEB_THREADS": "2",
                          "MAX_REQUEST_BODY_BYTES": str(2 * BODY_SIZE)},
                         django_db_blocker, tmp_path_factory) as port:
        yield port


def pull_body(size: int = BODY_SIZE) -> bytes:
    """A valid pull, padded with whitespace to `size` bytes: only its size matters."""
    body = json.dumps({"serviceRequirement": {"serviceDefinition": "temperatureInfo"}})
    return body.encode() + b" " * (size - len(body))


def head(size: int) -> bytes:
    lines = [f"POST {PULL} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json",
             "Authorization: Bearer SYSTEM//Car1", "Connection: close",
             f"Content-Length: {size}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def test_large_bodies_in_flight_hold_no_thread_and_are_all_served(server):
    body = pull_body()
    connections = [socket.create_connection(("127.0.0.1", server), timeout=PATIENCE)
                   for _ in range(CLIENTS)]
    try:
        for connection in connections:
            connection.sendall(head(BODY_SIZE) + body[:BODY_SIZE // 2])
        echo = http.client.HTTPConnection("127.0.0.1", server, timeout=PATIENCE)
        echo.request("GET", "/serviceorchestration/monitor/echo")
        assert echo.getresponse().read() == b"Got it!"
        echo.close()
        for connection in connections:
            connection.sendall(body[BODY_SIZE // 2:])
        for connection in connections:
            response = http.client.HTTPResponse(connection)
            response.begin()
            assert response.status == 200, response.read()
            response.read()
    finally:
        for connection in connections:
            connection.close()
