"""How an HTTP notification attempt connects and when it ends: only to the addresses the
address policy allowed (notifications/address_policy.py), within the connect timeout, and
with every socket it opened shut down at the attempt's deadline by one watchdog thread per
process (`notify-http-deadlines`). notifications/http_delivery.py makes the attempts."""
import heapq
import http.client
import itertools
import os
import socket
import threading
import time
import urllib.request
from typing import Any

from django.conf import settings

from notifications import address_policy


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is an answer, not a delivery: following it would turn a POST into a GET
    without the body (or send the body to another host). It surfaces as a permanent error."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class AttemptDeadline:
    """The end of one HTTP attempt: at `seconds` from its start, the sockets it connected are
    shut down (by `_watchdog`), which ends any read or write still blocked on them. A per-read
    timeout alone lets a destination that sends a byte now and then hold the attempt (and its
    worker thread) forever."""

    def __init__(self, seconds: float) -> None:
        self.at = time.monotonic() + seconds
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._finished = False
        self.expired = False

    def __enter__(self) -> "AttemptDeadline":
        _attempt.deadline = self
        _watchdog.watch(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        with self._lock:
            self._finished = True  # a late expiry changes nothing
        _attempt.deadline = None

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            expired = self.expired
        if expired:
            _shut_down(sock)

    def expire(self) -> None:
        with self._lock:
            if self._finished:
                return
            self.expired = True
            sockets = list(self._sockets)
        for sock in sockets:
            _shut_down(sock)


class _Watchdog:
    """One thread per process that expires attempts at their deadlines (a timer thread per
    attempt cost about 0.7 ms of each send). Finished attempts stay in its heap until their
    deadline passes, then are dropped."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._heap: list[tuple[float, int, AttemptDeadline]] = []
        self._order = itertools.count()
        self._pid = 0  # the process whose thread runs (a forked child starts its own)

    def watch(self, deadline: AttemptDeadline) -> None:
        with self._condition:
            if self._pid != os.getpid():
                self._pid, self._heap = os.getpid(), []
                threading.Thread(target=self._run, name="notify-http-deadlines",
                                 daemon=True).start()
            heapq.heappush(self._heap, (deadline.at, next(self._order), deadline))
            self._condition.notify()

    def _run(self) -> None:
        while True:
            with self._condition:
                while not self._heap or self._heap[0][0] > time.monotonic():
                    self._condition.wait(self._heap[0][0] - time.monotonic()
                                         if self._heap else None)
                _, _, due = heapq.heappop(self._heap)
            due.expire()


_watchdog = _Watchdog()


def _shut_down(sock: socket.socket) -> None:
    try:
        # The plain-socket shutdown, also under TLS: the SSL object belongs to the sending
        # thread, blocked reading it.
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass  # already closed


# The deadline of the attempt the current thread is making (its connections register with it).
_attempt = threading.local()


class _ConnectTimeout:
    """Connects (TCP, and the TLS handshake for HTTPS) within NOTIFY_HTTP_CONNECT_TIMEOUT_SECONDS,
    then waits up to the connection's own timeout for each read; the whole attempt ends at its
    deadline (`AttemptDeadline`, NOTIFY_HTTP_TIMEOUT_SECONDS after the connection): a host that
    does not accept is given up on quickly, a slow or dripping one at its deadline."""

    timeout: float | None
    sock: Any

    def connect(self) -> None:
        read_timeout = self.timeout
        self.timeout = settings.NOTIFY_HTTP_CONNECT_TIMEOUT_SECONDS
        try:
            super().connect()  # type: ignore[misc]
        finally:
            self.timeout = read_timeout
        self.sock.settimeout(read_timeout)
        deadline = getattr(_attempt, "deadline", None)
        if deadline is not None:
            deadline.watch(self.sock)


class _CheckedConnection(http.client.HTTPConnection):
    """Connects only to addresses the address policy allows, and only to those it checked:
    the name is resolved once, here, at every attempt (a name that now resolves to a refused
    address, DNS rebinding, raises DestinationRefused and nothing connects). TLS still
    verifies the certificate against the name (HTTPSConnection wraps this socket)."""

    host: str
    port: int
    timeout: float | None
    source_address: tuple[str, int] | None

    def connect(self) -> None:
        error: OSError | None = None
        for address in address_policy.allowed_addresses(self.host, self.port):
            try:
                self.sock = socket.create_connection((address, self.port), self.timeout,
                                                     self.source_address)
            except OSError as exc:
                error = exc
                continue
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return
        raise error or OSError(f"{self.host} resolves to no address")


class _HTTPConnection(_ConnectTimeout, _CheckedConnection):
    pass


class _HTTPSConnection(_ConnectTimeout, http.client.HTTPSConnection, _CheckedConnection):
    pass


class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(_HTTPConnection, req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    """The system's default TLS context, which verifies the certificate and the host name."""

    def https_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(_HTTPSConnection, req)


# No ProxyHandler: the environment's http_proxy must not silently reroute notifications.
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect,
                                      _HTTPHandler, _HTTPSHandler)
