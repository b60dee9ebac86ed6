"""Slow clients against the real server (`make run`'s nginx in front of gunicorn, two worker
processes): connections that drip their headers or body, or send nothing at all, must not stop
others from being served, and the server closes them after its read timeouts: a head not
complete within SERVER_HEADER_TIMEOUT_SECONDS, a body that pauses longer than
SERVER_BODY_TIMEOUT_SECONDS (nginx's body timeout is between two reads)."""
import http.client
import io
import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.core.management import call_command

from tests.concurrency import wait_until
from tests.orchestration.helpers import PULL
from tests.web_server import gunicorn

pytestmark = pytest.mark.django_db(transaction=True)

ECHO = "/serviceorchestration/monitor/echo"
HEADER_TIMEOUT = 3
BODY_TIMEOUT = 3
SLOW_CLIENTS = 8
# Longest the test waits for anything; far above the timeouts, so reaching it means "never".
PATIENCE = 30.0


@pytest.fixture(scope="module")
def server(django_db_setup, django_db_blocker, tmp_path_factory):
    with django_db_blocker.unblock():
        with gunicorn({"WEB_CONCURRENCY": "2",
                       "SERVER_HEADER_TIMEOUT_SECONDS": str(HEADER_TIMEOUT),
                       "SERVER_BODY_TIMEOUT_SECONDS": str(BODY_TIMEOUT)},
                      tmp_path_factory.mktemp("gunicorn") / "log") as port:
            yield port


class Dripper:
    """Loopback connections that each send `prefix`, then one more byte of `drip` every
    `interval` seconds (nothing at all when `drip` is empty), in a background thread."""

    def __init__(self, port: int, prefix: bytes, drip: bytes, interval: float = 0.5) -> None:
        self.sockets = [socket.create_connection(("127.0.0.1", port), timeout=5)
                        for _ in range(SLOW_CLIENTS)]
        self.closed_after: dict[int, float] = {}
        self.received = [b""] * SLOW_CLIENTS  # what the server sent on each connection
        self.started = time.monotonic()
        for index, connection in enumerate(self.sockets):
            connection.sendall(prefix)
            connection.setblocking(False)
        self._drip, self._interval = drip, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        position = 0
        while not self._stop.is_set() and time.monotonic() - self.started < PATIENCE:
            for index, connection in enumerate(self.sockets):
                if index in self.closed_after:
                    continue
                if self._server_closed(index):
                    self.closed_after[index] = time.monotonic() - self.started
                elif self._drip:
                    try:
                        connection.send(self._drip[position % len(self._drip):][:1])
                    except OSError:
                        self.closed_after[index] = time.monotonic() - self.started
            position += 1
            self._stop.wait(self._interval)

    def _server_closed(self, index: int) -> bool:
        try:
            data = self.sockets[index].recv(65536)
        except BlockingIOError:
            return False
        except OSError:
            return True
        self.received[index] += data
        return data == b""

    def wait_all_closed(self) -> None:
        wait_until(lambda: len(self.closed_after) >= len(self.sockets), PATIENCE)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        for connection in self.sockets:
            connection.close()


@contextmanager
def dripping(port: int, prefix: bytes, drip: bytes, interval: float = 0.5) -> Iterator[Dripper]:
    dripper = Dripper(port, prefix, drip, interval)
    try:
        yield dripper
    finally:
        dripper.close()


def echo_answers(port: int, tls: ssl.SSLContext | None = None) -> bool:
    connection = (http.client.HTTPSConnection("127.0.0.1", port, timeout=PATIENCE / 2,
                                              context=tls) if tls else
                  http.client.HTTPConnection("127.0.0.1", port, timeout=PATIENCE / 2))
    try:
        connection.request("GET", ECHO)
        response = connection.getresponse()
        return response.status == 200 and response.read() == b"Got it!"
    except OSError:
        return False
    finally:
        connection.close()


HEADER_DRIP = b"X-Slow: " + b"a" * 200


def assert_served_while_dripping(slow: Dripper, port: int, after_at_least: float = 0,
                                 tls: ssl.SSLContext | None = None) -> None:
    """Echo answers although the slow clients hold connections; the server closes all of
    them, no sooner than `after_at_least` seconds (the timeout, not at once)."""
    assert echo_answers(port, tls), "echo got no answer while slow clients held connections"
    slow.wait_all_closed()
    assert len(slow.closed_after) == SLOW_CLIENTS, (
        f"only {len(slow.closed_after)} of {SLOW_CLIENTS} slow connections were closed by "
        f"the server within {PATIENCE} s")
    assert min(slow.closed_after.values()) >= after_at_least - 0.5


def test_clients_dripping_headers_do_not_block_others_and_are_closed(server):
    with dripping(server, f"GET {ECHO} HTTP/1.1\r\nHost: x\r\n".encode(), HEADER_DRIP) as slow:
        assert_served_while_dripping(slow, server, HEADER_TIMEOUT)


def test_clients_dripping_the_request_line_are_closed(server):
    with dripping(server, b"G", b"ET /" + b"a" * 300) as slow:
        assert_served_while_dripping(slow, server, HEADER_TIMEOUT)


def test_silent_connections_do_not_block_others_and_are_closed(server):
    with dripping(server, b"", b"") as slow:
        assert_served_while_dripping(slow, server)


def assert_late_bodies_are_closed(server: int, body_headers: str, first_bytes: str = "") -> None:
    """nginx closes a connection whose body pauses too long without an answer, as it does for
    a late head (docs/errors.md)."""
    headers = (f"POST {PULL} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               f"Authorization: Bearer SYSTEM//consumer\r\n{body_headers}\r\n{first_bytes}")
    with dripping(server, headers.encode(), b" ", BODY_TIMEOUT + 1) as slow:
        assert_served_while_dripping(slow, server, BODY_TIMEOUT)
        assert slow.received == [b""] * SLOW_CLIENTS


def test_clients_pausing_in_the_body_are_closed(server):
    assert_late_bodies_are_closed(server, "Content-Length: 100000\r\n")


def test_clients_pausing_in_a_chunked_body_are_closed(server):
    """One 100,000-byte chunk announced, then its bytes too slowly."""
    assert_late_bodies_are_closed(server, "Transfer-Encoding: chunked\r\n", "186a0\r\n")


def test_clients_dripping_a_body_nobody_reads_are_closed(server):
    headers = (f"POST {PULL} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               f"Content-Length: 100000\r\n\r\n").encode()  # would be 401 once read
    with dripping(server, headers, b" ", BODY_TIMEOUT + 1) as slow:
        assert_served_while_dripping(slow, server, BODY_TIMEOUT)


def test_a_kept_alive_connection_is_closed_when_idle(server):
    connection = socket.create_connection(("127.0.0.1", server), timeout=PATIENCE)
    try:
        connection.sendall(f"GET {ECHO} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        received = b""
        while b"Got it!" not in received:
            chunk = connection.recv(65536)
            assert chunk, "the server closed the connection before answering"
            received += chunk
        assert b"HTTP/1.1 200" in received
        # Kept alive, then closed by the server while idle (recv returns b"" within PATIENCE).
        assert connection.recv(65536) == b""
    finally:
        connection.close()


@pytest.fixture(scope="module")
def tls_server(django_db_setup, django_db_blocker, tmp_path_factory):
    directory = tmp_path_factory.mktemp("certificates")
    call_command("make_certificates", str(directory), "--system", "consumer-a",
                 stdout=io.StringIO())
    tls = {"TLS_CERT_FILE": str(directory / "SimpleStoreServiceOrchestration.pem"),
           "TLS_KEY_FILE": str(directory / "SimpleStoreServiceOrchestration.key"),
           "TLS_CA_FILE": str(directory / "ca.pem"),
           "WEB_CONCURRENCY": "2", "SERVER_HEADER_TIMEOUT_SECONDS": str(HEADER_TIMEOUT)}
    with django_db_blocker.unblock():
        with gunicorn(tls, tmp_path_factory.mktemp("gunicorn") / "log") as port:
            yield port, ssl.create_default_context(cafile=str(directory / "ca.pem"))


def test_clients_dripping_a_tls_handshake_do_not_block_others_and_are_closed(tls_server):
    port, tls = tls_server
    # A TLS record header announcing a 512-byte ClientHello, which then comes a byte at a time.
    with dripping(port, b"\x16\x03\x01\x02\x00", b"\x01") as slow:
        assert_served_while_dripping(slow, port, HEADER_TIMEOUT, tls)


@pytest.fixture(scope="module")
def patient_server(django_db_setup, django_db_blocker, tmp_path_factory):
    """One process of two threads whose read timeouts are far beyond the test's patience."""
    with django_db_blocker.unblock():
        with gunicorn({"WEB_CONCURRENCY": "1", "WEB_THREADS": "2",
                       "SERVER_HEADER_TIMEOUT_SECONDS": str(PATIENCE * 4),
                       "SERVER_BODY_TIMEOUT_SECONDS": str(PATIENCE * 4)},
                      tmp_path_factory.mktemp("gunicorn") / "log") as port:
            yield port


def test_more_dripping_clients_than_threads_hold_no_thread(patient_server):
    # With a thread per dripping client, echo would wait for the header timeout (120 s).
    with dripping(patient_server, f"GET {ECHO} HTTP/1.1\r\nHost: x\r\n".encode(), HEADER_DRIP):
        assert echo_answers(patient_server), "echo waited behind clients dripping headers"
    body_drip = (f"POST {PULL} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 f"Content-Length: 1000\r\n\r\n").encode()
    with dripping(patient_server, body_drip, b" "):
        assert echo_answers(patient_server), "echo waited behind clients dripping small bodies"


def test_more_clients_dripping_large_bodies_than_threads_hold_no_thread(patient_server):
    """Bodies above 64 KiB (below MAX_REQUEST_BODY_BYTES) are gathered in the poller too: with
    a thread per dripping client, echo would wait for the body timeout (120 s)."""
    head = (f"POST {PULL} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer SYSTEM//consumer\r\n")
    with dripping(patient_server, f"{head}Content-Length: 100000\r\n\r\n".encode(),
                  b" ") as slow:
        assert echo_answers(patient_server), "echo waited behind clients dripping large bodies"
        assert not slow.closed_after, "the server closed connections before their deadline"


def test_more_clients_dripping_chunked_bodies_than_threads_hold_no_thread(patient_server):
    """Chunked bodies are gathered in the poller as well (up to MAX_REQUEST_BODY_BYTES raw)."""
    head = (f"POST {PULL} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer SYSTEM//consumer\r\nTransfer-Encoding: chunked\r\n\r\n")
    # One 100,000-byte chunk announced, then its bytes one at a time.
    with dripping(patient_server, f"{head}186a0\r\n".encode(), b" ") as slow:
        assert echo_answers(patient_server), "echo waited behind clients dripping chunked bodies"
        assert not slow.closed_after, "the server closed connections before their deadline"


def test_a_client_expecting_100_continue_gets_it_before_sending_its_body(server):
    body = b'{"serviceRequirement": {}}'
    with socket.create_connection(("127.0.0.1", server), timeout=PATIENCE / 2) as connection:
        connection.sendall(f"POST {PULL} HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                           f"Authorization: Bearer SYSTEM//consumer\r\n"
                           f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                           f"\r\n".encode())
        assert connection.recv(65536).startswith(b"HTTP/1.1 100 Continue")
        connection.sendall(body)
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = connection.recv(65536)
            assert chunk, "the server closed the connection before answering"
            received += chunk
        assert received.startswith(b"HTTP/1.1 200 ")


@pytest.fixture(scope="module")
def pausing_server(django_db_setup, django_db_blocker, tmp_path_factory):
    """Deadlines longer than the keep-alive time, as by default (10 s and 30 s against 5 s)."""
    with django_db_blocker.unblock():
        with gunicorn({"WEB_CONCURRENCY": "1", "SERVER_KEEPALIVE_SECONDS": "1",
                       "SERVER_HEADER_TIMEOUT_SECONDS": "6",
                       "SERVER_BODY_TIMEOUT_SECONDS": "6"},
                      tmp_path_factory.mktemp("gunicorn") / "log") as port:
            yield port


def send_with_pause(port: int, before: bytes, after: bytes, pause: float) -> bytes:
    """Send `before`, wait `pause` seconds, send `after`; what the server answered."""
    connection = socket.create_connection(("127.0.0.1", port), timeout=PATIENCE)
    try:
        connection.sendall(before)
        time.sleep(pause)  # the pause is what is tested: longer than the keep-alive time
        connection.sendall(after)
        connection.shutdown(socket.SHUT_WR)
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
        return received
    except OSError as error:
        return repr(error).encode()
    finally:
        connection.close()


@pytest.mark.parametrize("split", [b"Host: x\r\n", b"\r\n\r\n"])
def test_a_pause_inside_a_request_is_bounded_by_its_deadline_not_the_keep_alive(
        pausing_server, split):
    """A pause longer than the keep-alive time within the head (after a header line) or
    before the body, well within the request deadlines, is waited for."""
    body = b'{"serviceRequirement": {"serviceDefinition": "paused"}}'
    request = (f"POST {PULL} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer SYSTEM//consumer\r\n"
               f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
               "Connection: close\r\n\r\n").encode() + body
    cut = request.index(split) + len(split)

    answer = send_with_pause(pausing_server, request[:cut], request[cut:], pause=2.5)

    assert answer.startswith(b"HTTP/1.1 200 "), answer[:300]
    assert json.loads(answer.partition(b"\r\n\r\n")[2])["results"] == []


def test_an_unknown_transfer_coding_is_501_saying_so(pausing_server):
    request = (f"POST {PULL} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: bogus\r\n"
               "Connection: close\r\n\r\n").encode()

    answer = send_with_pause(pausing_server, request, b"", pause=0)

    assert answer.startswith(b"HTTP/1.1 501 "), answer[:300]
    envelope = json.loads(answer.partition(b"\r\n\r\n")[2])
    assert envelope["exceptionType"] == "INVALID_PARAMETER"
    assert envelope["errorMessage"].startswith("Not Implemented: ")
    assert "bogus" in envelope["errorMessage"].lower()
