"""Errors that the HTTP server itself answers (before Django sees the request) carry the same
JSON error envelope as the application's, through raw sockets against the real server (nginx in
front of gunicorn, config/front.py)."""
import json
import socket
from pathlib import Path

import pytest

from tests.orchestration.helpers import PULL
from tests.web_server import gunicorn

pytestmark = pytest.mark.django_db(transaction=True)

ECHO = "/serviceorchestration/monitor/echo"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server(django_db_setup, django_db_blocker, tmp_path_factory):
    with django_db_blocker.unblock():
        with gunicorn({}, tmp_path_factory.mktemp("gunicorn") / "log") as port:
            yield port


def exchange(port: int, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send `raw`, read until the server closes; returns status, headers and body."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as connection:
        connection.sendall(raw)
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip()
               for name, _, value in (line.partition(":") for line in header_lines)}
    return int(status_line.split()[1]), headers, body


def assert_envelope(port: int, raw: bytes, status: int, origin: str) -> dict:
    code, headers, body = exchange(port, raw)
    assert code == status, body
    assert headers["content-type"] == "application/json"
    if "content-length" in headers:  # else chunked (an answer of the request guard)
        assert int(headers["content-length"]) == len(body)
    else:
        assert headers["transfer-encoding"] == "chunked"
        size, _, body = body.partition(b"\r\n")
        body = body[:int(size, 16)]
    assert body.endswith(b"}\n")  # a line, as every JSON answer (docs/decisions.md)
    error = json.loads(body)
    assert set(error) == {"errorMessage", "errorCode", "exceptionType", "origin"}
    assert error["errorCode"] == status
    assert error["exceptionType"] == ("INVALID_PARAMETER" if status < 500
                                      else "INTERNAL_SERVER_ERROR")
    assert error["origin"] == origin
    assert error["errorMessage"]
    return error


def test_request_line_too_long_is_414_in_the_envelope(server):
    raw = f"GET {ECHO}?{'a' * 9000} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
    assert_envelope(server, raw, 414, "HTTP")


def test_too_many_header_fields_is_431_in_the_envelope(server):
    fields = "".join(f"X-Field-{index}: v\r\n" for index in range(200))
    raw = f"GET {ECHO} HTTP/1.1\r\nHost: x\r\n{fields}Connection: close\r\n\r\n".encode()
    assert_envelope(server, raw, 431, f"GET {ECHO}")


def test_header_field_too_large_is_431_in_the_envelope(server):
    raw = f"GET {ECHO} HTTP/1.1\r\nHost: x\r\nX-Big: {'b' * 20000}\r\n\r\n".encode()
    assert_envelope(server, raw, 431, "HTTP")


def test_malformed_content_length_is_400_naming_the_request(server):
    raw = f"POST {PULL} HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n".encode()
    error = assert_envelope(server, raw, 400, f"POST {PULL}")
    assert "CONTENT-LENGTH" in error["errorMessage"].upper()


def test_invalid_request_line_is_400_in_the_envelope(server):
    assert_envelope(server, b"THIS IS NOT HTTP\r\n\r\n", 400, "HTTP")


def test_invalid_header_name_is_400_in_the_envelope(server):
    raw = f"GET {ECHO} HTTP/1.1\r\nHost: x\r\nBad Name: v\r\n\r\n".encode()
    assert_envelope(server, raw, 400, f"GET {ECHO}")


def test_the_message_survives_bytes_that_are_not_text(server):
    error = assert_envelope(server, b"\xff\xfe\x00 / HTTP/1.1\r\n\r\n", 400, "HTTP")
    json.dumps(error, ensure_ascii=False).encode("utf-8")


def test_an_application_server_that_does_not_answer_is_503_to_try_again(tmp_path):
    """nginx in front, gunicorn's socket gone (as when a second server took it): the client
    is told to try again, not that the service failed (issue 35)."""
    with gunicorn({}, tmp_path / "log") as port:
        socket_file = ROOT / "var" / f"nginx-{port}" / "gunicorn.sock"
        away = socket_file.with_name("gunicorn.sock.away")
        socket_file.rename(away)
        try:
            raw = f"GET {ECHO} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode()
            code, headers, body = exchange(port, raw)
        finally:
            away.rename(socket_file)
    assert (code, headers["retry-after"]) == (503, "1"), body
    assert body.endswith(b"}\n")
    assert json.loads(body) == {
        "errorMessage": "Service unavailable: the application server is not answering; "
                        "try again",
        "errorCode": 503, "exceptionType": "EXTERNAL_SERVER_ERROR", "origin": f"GET {ECHO}"}
