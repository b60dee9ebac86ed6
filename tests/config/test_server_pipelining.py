"""HTTP/1.1 pipelining against the real server (`make run`'s nginx in front of gunicorn):
requests a client sends one after the other on a kept-alive connection, without waiting for the
answers, are all answered, in order."""
import http.client
import io
import json
import socket
import time

import pytest

from tests.orchestration.helpers import PULL
from tests.web_server import gunicorn

pytestmark = pytest.mark.django_db(transaction=True)

ECHO = "/serviceorchestration/monitor/echo"
HEADER_TIMEOUT = 3
# Longest the test waits for an answer; far above the timeouts, so reaching it means "never".
PATIENCE = 20.0

GET_ECHO = f"GET {ECHO} HTTP/1.1\r\nHost: x\r\n\r\n".encode()


@pytest.fixture(scope="module")
def server(django_db_setup, django_db_blocker, tmp_path_factory):
    with django_db_blocker.unblock():
        with gunicorn({"WEB_CONCURRENCY": "1",
                       "SERVER_HEADER_TIMEOUT_SECONDS": str(HEADER_TIMEOUT)},
                      tmp_path_factory.mktemp("gunicorn") / "log") as port:
            yield port


class _KeptOpen(io.BufferedReader):
    """The connection's read buffer, shared by successive answers: http.client closes the file
    of an answer it has read, which would drop the bytes of the next answer."""

    def close(self) -> None:
        pass


class _Source:
    def __init__(self, stream: io.BufferedReader) -> None:
        self._stream = stream

    def makefile(self, *args: object, **kwargs: object) -> io.BufferedReader:
        return self._stream


def read_answers(connection: socket.socket, count: int) -> list[tuple[int, bytes]]:
    """The next `count` answers on `connection` (status and body); fails naming how many came
    before the server closed the connection or stopped answering."""
    stream = _KeptOpen(socket.SocketIO(connection, "rb"))
    answers = []
    for _ in range(count):
        response = http.client.HTTPResponse(_Source(stream))  # type: ignore[arg-type]
        try:
            response.begin()
            answers.append((response.status, response.read()))
        except (OSError, http.client.HTTPException) as error:
            pytest.fail(f"only {len(answers)} of {count} pipelined requests were answered "
                        f"({type(error).__name__}: {error})", pytrace=False)
    return answers


def pull(body: bytes) -> bytes:
    return (f"POST {PULL} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer SYSTEM//consumer\r\nContent-Length: {len(body)}\r\n"
            f"\r\n").encode() + body


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=PATIENCE)


def test_two_pipelined_requests_are_both_answered(server):
    with connect(server) as connection:
        connection.sendall(GET_ECHO * 2)
        assert read_answers(connection, 2) == [(200, b"Got it!")] * 2


def test_three_pipelined_requests_are_all_answered(server):
    with connect(server) as connection:
        connection.sendall(GET_ECHO * 3)
        assert read_answers(connection, 3) == [(200, b"Got it!")] * 3


def test_a_request_pipelined_behind_a_post_with_a_body_is_answered(server):
    with connect(server) as connection:
        connection.sendall(pull(b'{"serviceRequirement": {}}') + GET_ECHO)
        (pull_status, pull_body), echo = read_answers(connection, 2)
        assert pull_status == 200, pull_body
        assert json.loads(pull_body)["results"] == []
        assert echo == (200, b"Got it!")


def test_a_request_pipelined_behind_a_chunked_post_is_answered(server):
    body = b'{"serviceRequirement": {}}'
    # Two chunks (one with an extension), then the last chunk with a trailer field.
    chunked = (f"{10:x};note=first\r\n".encode() + body[:10] + b"\r\n"
               + f"{len(body) - 10:x}\r\n".encode() + body[10:] + b"\r\n0\r\nX-Trailer: t\r\n\r\n")
    head = (f"POST {PULL} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer SYSTEM//consumer\r\nTransfer-Encoding: chunked\r\n\r\n")
    with connect(server) as connection:
        connection.sendall(head.encode() + chunked + GET_ECHO)
        (pull_status, pull_body), echo = read_answers(connection, 2)
        assert pull_status == 200, pull_body
        assert echo == (200, b"Got it!")


def test_an_incomplete_pipelined_request_is_answered_once_complete(server):
    with connect(server) as connection:
        connection.sendall(GET_ECHO + GET_ECHO[:20])
        assert read_answers(connection, 1) == [(200, b"Got it!")]
        connection.sendall(GET_ECHO[20:])
        assert read_answers(connection, 1) == [(200, b"Got it!")]


def test_an_incomplete_pipelined_request_is_closed_after_the_header_timeout(server):
    with connect(server) as connection:
        connection.sendall(GET_ECHO + GET_ECHO[:20])
        assert read_answers(connection, 1) == [(200, b"Got it!")]
        started = time.monotonic()
        assert connection.recv(65536) == b"", "the server answered an incomplete request"
        # Closed by the deadline, not at once (nor never: recv would have timed out).
        assert time.monotonic() - started >= HEADER_TIMEOUT - 1.5
