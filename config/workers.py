"""The gunicorn worker of the service (`worker_class` in config.gunicorn).

It is gunicorn's threaded worker (`gthread`: a main loop that accepts and polls connections,
requests served by a pool of threads; docs/performance.md says why) with these additions:

- Slow clients hold no thread. gthread waits up to 5 s in a thread for a connection's first
  byte, and once a thread reads a request it blocks until the request head is complete: a few
  clients dripping their headers a byte at a time would hold every thread. Here a plain-HTTP
  request is gathered from the poller without waiting: a thread takes what has arrived and, as
  long as the request is incomplete, gives the connection back to the poller at once. Gathered
  are the head (up to GATHER_LIMIT) and a body up to MAX_REQUEST_BODY_BYTES, of declared length
  or chunked (raw, the end found by following the chunk sizes; gunicorn de-chunks it later).
  Only complete requests occupy a thread, and those a thread must read: a head over
  GATHER_LIMIT, a body over the limit (refused 413 by api.request_guard from its
  Content-Length, or after one byte past the limit when chunked), a body sent after
  "100 Continue". Requests pipelined behind one another are served from what was read.
- A budget for bodies in flight (api.body_budget). A body's declared length is reserved out of
  REQUEST_BODY_BUDGET_BYTES before it is gathered or read (a chunked body's bytes as they
  arrive) and given back when its request ends, however it ends; a body that does not fit is
  answered 503 with Retry-After at once, unread. Memory: at most SERVER_MAX_CONNECTIONS x
  GATHER_LIMIT of heads and REQUEST_BODY_BUDGET_BYTES of bodies per process.
- Read deadlines. A request head must arrive within SERVER_HEADER_TIMEOUT_SECONDS and a body
  within SERVER_BODY_TIMEOUT_SECONDS of its head, else the connection is closed (a late body
  is answered 408 in the error envelope). For a request a thread reads (TLS, where bytes cannot
  be inspected before the handshake, and the cases above) the main loop enforces them (it wakes
  at least once a second) by shutting the socket down, which wakes the blocked thread: a late
  head closes the connection, a late body the application was reading is answered 408.
- Errors that gunicorn answers itself (request line too long 414, header fields too large or
  too many 431, malformed request 400, ...) carry the error envelope instead of HTML.
- The verified TLS client certificate (if any) reaches the application in the WSGI environ under
  `CLIENT_CERT_ENVIRON_KEY`. gunicorn verifies client certificates against TLS_CA_FILE during
  the handshake but does not pass them on. Clients cannot forge the key: header values only
  ever reach the environ as `HTTP_*` keys.
"""
import json
import re
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta
from http import HTTPStatus
from typing import Any

from django.conf import settings
from gunicorn.http import errors as http_errors
from gunicorn.http.message import Request
from gunicorn.http.wsgi import Response, default_environ
from gunicorn.util import write_nonblock
from gunicorn.workers.gthread import _DEFER, TConn, ThreadWorker

from api.body_budget import RETRY_AFTER_SECONDS, BodyBudget, busy_message
from conventions.exceptions import (
    ArrowheadError,
    ExternalServerError,
    InternalServerError,
    InvalidParameter,
)
from identity.certificates import CLIENT_CERT_ENVIRON_KEY

# A plain-HTTP request head is gathered from the poller up to this many bytes; a longer one is
# read by a thread, under the header deadline (gunicorn refuses it as too large anyway).
GATHER_LIMIT = 64 * 1024
# Read at most this much per recv: a 2 MiB body arrives in a few calls, without 2 MiB buffers.
_RECV_SIZE = 256 * 1024
# Longest chunk-size line (hex size and extensions) looked for before the thread takes over.
_CHUNK_LINE_LIMIT = 1024
_CONTENT_LENGTH = re.compile(rb"\ncontent-length[ \t]*:[ \t]*(\d+)[ \t]*\r?\n", re.IGNORECASE)
_TRANSFER_ENCODING = re.compile(rb"\ntransfer-encoding[ \t]*:", re.IGNORECASE)
_CHUNKED = re.compile(rb"\ntransfer-encoding[ \t]*:[^\n]*chunked", re.IGNORECASE)
# A body the client sends only after "100 Continue" is read by a thread (which sends it).
_EXPECT = re.compile(rb"\nexpect[ \t]*:", re.IGNORECASE)

# `origin` of an error answered before the request line could be read.
UNPARSED_ORIGIN = "HTTP"

# Statuses for the errors gunicorn raises while parsing a request (the first match wins);
# any other parse error is a 400, anything else a 500.
_PARSE_ERROR_STATUSES: tuple[tuple[type[BaseException], int], ...] = (
    # A header the application tried to send is the application's fault.
    (http_errors.InvalidResponseHeader, 500),
    (http_errors.InvalidResponseHeaderName, 500),
    (http_errors.LimitRequestLine, 414),
    (http_errors.LimitRequestHeaders, 431),
    (http_errors.ExpectationFailed, 417),
    (http_errors.UnsupportedTransferCoding, 501),
    (http_errors.ForbiddenProxyRequest, 403),
    (http_errors.ConfigurationProblem, 500),
    (http_errors.ParseException, 400),
    (ssl.SSLError, 403),
)


class RequestTimeout(ArrowheadError):
    """The request body did not arrive within SERVER_BODY_TIMEOUT_SECONDS."""
    status_code = 408
    exception_type = InvalidParameter.exception_type


class _Gathering:
    """What has arrived of a connection's next request while it waits in the poller.

    The head is gathered up to GATHER_LIMIT bytes, then a body of declared length, or a chunked
    body (its raw bytes, framing included), up to `body_limit` bytes. A body over the limit is
    not waited for: the request guard refuses it (413) from its Content-Length, and reads at
    most one byte past the limit of a chunked one."""

    def __init__(self, data: bytes, deadline: float, body_limit: int,
                 budget: BodyBudget) -> None:
        self.data = bytearray(data)  # appended to in place: no copy per byte that arrives
        self.deadline = deadline  # for the head, then for the body
        self.head_done = False
        self.closed_by_client = False
        # Body bytes reserved out of the process's budget: the declared length, or what has
        # arrived of a chunked body. Past the budget, `over_budget`: refused, not read.
        self.reserved = 0
        self.over_budget = False
        self._budget = budget
        self._head_length = 0
        self._body_limit = body_limit
        # Once the head is complete: the length of the whole request (head and body), or, for
        # a chunked body, the offset of the next chunk-size line and the most bytes to gather.
        self._needed: int | None = None
        self._next_chunk: int | None = None
        self._chunked_cap = 0
        self._chunk_end: int | None = None  # where the last chunk's data ends (CRLF expected)

    def wanted(self) -> int:
        """How many more bytes to read, at most, before the request can be judged again."""
        if self._needed is not None:
            missing = self._needed - len(self.data)
        elif self._next_chunk is not None:
            missing = self._chunked_cap - len(self.data)
        else:
            missing = GATHER_LIMIT - len(self.data)
        return max(1, min(missing, _RECV_SIZE))

    def ready(self, now: float, body_timeout: float) -> bool:
        """Whether a thread should serve the request now."""
        if self.closed_by_client:
            return True  # gunicorn reports what is missing
        if not self.head_done and not self._read_head(now, body_timeout):
            return len(self.data) >= GATHER_LIMIT
        if self._needed is None and self._next_chunk is None:
            return True  # read by a thread
        if self._needed is not None:
            return len(self.data) >= self._needed
        if not self._reserve(len(self.data) - self._head_length):
            return True  # refused
        return self._chunked_body_done()

    @property
    def body_gathered(self) -> bool:
        """Whether the body (if any) is gathered here, not read by a thread."""
        return self._needed is not None or self._next_chunk is not None

    def _reserve(self, size: int) -> bool:
        """Hold `size` body bytes in all out of the budget; False, and over_budget, when
        they do not fit."""
        if size > self.reserved:
            if not self._budget.reserve(size - self.reserved):
                self.over_budget = True
                return False
            self.reserved = size
        return True

    def release(self) -> None:
        """Give the reservation back (the request is over, or handed on to a thread)."""
        self._budget.release(self.reserved)
        self.reserved = 0

    def _read_head(self, now: float, body_timeout: float) -> bool:
        """Whether the head is complete; if so, what is needed of the body."""
        end = self.data.find(b"\r\n\r\n")
        head_length = end + 4
        if end < 0:
            end = self.data.find(b"\n\n")  # gunicorn refuses bare LF; let it answer
            head_length = end + 2
        if end < 0:
            return False
        self.head_done, self.deadline = True, now + body_timeout
        self._head_length = head_length
        head = bytes(self.data[:head_length])
        if _EXPECT.search(head):
            return True  # under the body deadline
        if _TRANSFER_ENCODING.search(head):
            # Chunked alone is gathered; anything else (other codings, both headers) is for
            # gunicorn to refuse.
            if _CHUNKED.search(head) and not _CONTENT_LENGTH.search(head):
                self._next_chunk = head_length
                self._chunked_cap = head_length + self._body_limit
            return True
        length = _CONTENT_LENGTH.search(head)
        digits = length.group(1) if length else b"0"
        # Over the limit (or absurdly long): refused with 413 without being read, at once.
        # Within it, but not within what is left of the budget: refused 503, not read either.
        if len(digits) <= 18 and int(digits) <= self._body_limit and self._reserve(int(digits)):
            self._needed = head_length + int(digits)
        return True

    def _chunked_body_done(self) -> bool:
        """Follows the chunk sizes over what has arrived; True once the last chunk and the
        trailers are complete, or when a thread should take over (malformed framing, which
        gunicorn answers 400, or more raw bytes than the limit, which the guard answers 413)."""
        if len(self.data) >= self._chunked_cap:
            return True
        position = self._next_chunk
        assert position is not None
        while True:
            # The CRLF that ends the chunk before `position`, once it has arrived.
            if self._chunk_end is not None and len(self.data) >= self._chunk_end + 2:
                if self.data[self._chunk_end:self._chunk_end + 2] != b"\r\n":
                    return True  # a chunk without its CRLF: malformed
                self._chunk_end = None
            line_end = self.data.find(b"\r\n", position, position + _CHUNK_LINE_LIMIT)
            if line_end < 0:
                self._next_chunk = position
                return len(self.data) - position >= _CHUNK_LINE_LIMIT
            size_text = bytes(self.data[position:line_end]).partition(b";")[0].strip()
            try:
                size = int(size_text, 16) if len(size_text) <= 16 else -1
            except ValueError:
                return True
            if size < 0:
                return True
            if size == 0:  # the last chunk; then trailers up to an empty line
                self._next_chunk = position
                return self.data.find(b"\r\n\r\n", line_end) >= 0
            self._chunk_end = line_end + 2 + size
            position = self._chunk_end + 2
            if position > len(self.data):
                self._next_chunk = position
                return False

    def origin(self) -> str:
        """The request's method and path, for the envelope of an error answered here."""
        line = bytes(self.data[:self.data.find(b"\n")]).decode("latin-1").split()
        return f"{line[0]} {line[1].partition('?')[0]}" if len(line) >= 2 else UNPARSED_ORIGIN


@dataclass
class _Deadline:
    at: float
    # SHUT_RDWR for a request head (the connection is dropped), SHUT_RD for a body (the 408
    # answer can still be written).
    how: int
    expired: bool = False


class ServiceWorker(ThreadWorker):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Connections being read by a thread, with the time by which the read must be done.
        # Threads add and remove entries, the main loop enforces them: single dict operations,
        # atomic under the GIL.
        self._deadlines: dict[TConn, _Deadline] = {}
        self._serving = threading.local()  # the connection a thread's request came on
        self._header_timeout: float = settings.SERVER_HEADER_TIMEOUT_SECONDS
        self._body_timeout: float = settings.SERVER_BODY_TIMEOUT_SECONDS
        self._body_limit: int = settings.MAX_REQUEST_BODY_BYTES
        # Request body bytes this process holds (api.body_budget): reserved when a body is
        # about to be gathered or read, released when its request ends, however it ends. A
        # connection's reservation, once its request is handed to a thread, is in
        # `conn.reserved_body` (None: not reserved yet).
        self._body_budget = BodyBudget(settings.REQUEST_BODY_BUDGET_BYTES)

    # --- read deadlines -----------------------------------------------------------------------

    def handle(self, conn: TConn) -> Any:  # in a pool thread: read a request head, serve it
        if not self.cfg.is_ssl:
            verdict = self._gather(conn)
            if verdict is not None:
                return self._closed_here(conn, verdict)
        self._deadlines[conn] = _Deadline(time.monotonic() + self._header_timeout,
                                          socket.SHUT_RDWR)
        try:
            result = super().handle(conn)
        finally:
            self._deadlines.pop(conn, None)
            self._body_budget.release(getattr(conn, "reserved_body", None) or 0)
            conn.reserved_body = None
        return self._closed_here(conn, result)

    @staticmethod
    def _closed_here(conn: TConn, result: Any) -> Any:
        """gthread closes a finished connection gracefully in its main loop, lingering up to 2 s
        for the rest of what the client sends: a client that keeps sending would stall every
        connection of the process meanwhile. Close it in this pool thread instead; the main
        loop's close is then a no-op."""
        if result is False:
            conn.close(graceful=True)
        return result

    def _gather(self, conn: TConn) -> Any:
        """Take what has arrived of the next request without waiting. None when a thread should
        serve it now; gthread's _DEFER to wait in the poller for more; False to close."""
        now = time.monotonic()
        # Kept on the connection object: it lives exactly as long as the connection.
        gathering: _Gathering | None = getattr(conn, "gathering", None)
        if gathering is None:
            # A kept-alive connection may hold the start of its next request already (pipelined
            # behind the previous one).
            early = conn.parser.unreader.take_buffered() if conn.parser else b""
            gathering = conn.gathering = _Gathering(early, now + self._header_timeout,
                                                    self._body_limit, self._body_budget)
        try:
            # Non-blocking for real: a request pipelined behind the previous one comes here
            # straight from its thread, with the socket's write timeout still set, and Python
            # waits out a socket timeout before even a MSG_DONTWAIT recv.
            conn.sock.setblocking(False)
            while not gathering.ready(now, self._body_timeout):
                chunk = conn.sock.recv(gathering.wanted(), socket.MSG_DONTWAIT)
                if not chunk:  # the client closed its side
                    if not gathering.data:
                        return False
                    gathering.closed_by_client = True
                    break
                gathering.data += chunk
        except BlockingIOError:
            pass
        except OSError:
            self._close_gathered(conn, gathering, None)
            return False
        if gathering.over_budget:
            self._refuse_over_budget(conn, gathering)
            return False
        if not gathering.ready(now, self._body_timeout):
            if gathering.deadline <= now:
                self._close_late(conn, gathering)
                return False
            return _DEFER
        conn.gathering = None
        if gathering.body_gathered:
            conn.reserved_body = gathering.reserved  # released when the request ends
        else:
            gathering.release()  # a thread reads the body (if any): reserved then
        conn.init()  # the parser; plain TCP, so nothing is read
        conn.parser.unreader.unread(bytes(gathering.data))
        conn.data_ready = True  # no waiting for the socket: the bytes are in the parser
        return None

    def _close_late(self, conn: TConn, gathering: _Gathering) -> None:
        """Close a connection whose request did not arrive in time. A late body is answered
        408 in the error envelope, as when the application was reading it."""
        self._log_late(conn, "body" if gathering.head_done else "head")
        answer = (_error_response(408, self._late_body_message(), gathering.origin())
                  if gathering.head_done else None)
        self._close_gathered(conn, gathering, answer)

    def _refuse_over_budget(self, conn: TConn, gathering: _Gathering) -> None:
        """Answer 503 to a request whose body does not fit the budget, before reading it."""
        self.log.warning("Refusing a request body from %s: %d bytes of bodies in flight "
                         "(REQUEST_BODY_BUDGET_BYTES %d)",
                         conn.client[0] if conn.client else "?", self._body_budget.held,
                         self._body_budget.total)
        self._close_gathered(conn, gathering, self._busy_response(gathering.origin()))

    def _busy_response(self, origin: str) -> bytes:
        message = busy_message(f"at most {self._body_budget.total} bytes per process")
        return _error_response(503, message, origin,
                               exception_type=ExternalServerError.exception_type,
                               retry_after=RETRY_AFTER_SECONDS)

    @staticmethod
    def _close_gathered(conn: TConn, gathering: _Gathering, answer: bytes | None) -> None:
        """Close a connection whose request waited in the poller, giving back its body's
        reservation, without lingering (it would only read more of the same); `answer`, if
        any, is written first without waiting."""
        gathering.release()
        if answer is not None:
            try:
                conn.sock.send(answer, socket.MSG_DONTWAIT)  # small: fits the send buffer
                # Unread bytes would make the close a reset, which can drop the answer; read
                # what is there (a little: a client sending fast is not late for long).
                for _ in range(4):
                    if not conn.sock.recv(_RECV_SIZE, socket.MSG_DONTWAIT):
                        break
            except OSError:
                pass
        conn.close()

    def _late_body_message(self) -> str:
        return f"The request body did not arrive within {self._body_timeout:g} seconds"

    def handle_request(self, req: Request, conn: TConn) -> bool:  # the head is complete
        if getattr(conn, "reserved_body", None) is None:  # a body this thread reads
            size = self._thread_read_size(req)
            if not self._body_budget.reserve(size):
                self._log_access(req, conn.sock, conn.client, 503)
                conn.sock.sendall(self._busy_response(f"{req.method} {req.path}"))
                return False
            conn.reserved_body = size
        self._deadlines[conn] = _Deadline(time.monotonic() + self._body_timeout, socket.SHUT_RD)
        # Also bounds each write of the answer to a client that does not read it.
        conn.sock.settimeout(self._body_timeout)
        self._serving.connection = conn
        return super().handle_request(req, conn)

    def _thread_read_size(self, req: Request) -> int:
        """What a body read by a thread may hold: its declared length, or for a chunked one
        the most the request guard reads (one byte past the limit). None of a body over the
        limit is read (413)."""
        headers = dict(req.headers)
        if "chunked" in headers.get("TRANSFER-ENCODING", "").lower():
            return self._body_limit + 1
        length = headers.get("CONTENT-LENGTH", "0").strip()
        size = int(length) if length.isdigit() and len(length) <= 18 else 0
        return size if size <= self._body_limit else 0

    def murder_pending(self) -> None:  # the main loop calls this at least once a second
        """Close the connections waiting in the poller whose time is up: one that has sent
        part of a request at its request deadline (head or body), one between requests (new,
        or kept alive) after the keep-alive time. gthread's own check applies the keep-alive
        time, from the last byte received, to both: a pause longer than that inside a request
        closed it, well before its deadline. Then the deadlines of requests threads read."""
        now = time.monotonic()
        for conn in list(self.pending_conns):
            gathering: _Gathering | None = getattr(conn, "gathering", None)
            started = gathering is not None and bool(gathering.data)
            if (gathering.deadline if started else conn.timeout) > now:
                continue
            self.pending_conns.remove(conn)
            try:
                self.poller.unregister(conn.sock)
            except (OSError, KeyError, ValueError):
                pass
            self.nr_conns -= 1
            if started:
                self._close_late(conn, gathering)
            else:
                conn.close()
        for conn, deadline in self._deadlines.copy().items():  # being read by a thread
            if deadline.at <= now and not deadline.expired:
                deadline.expired = True
                self._log_late(conn, "head" if deadline.how == socket.SHUT_RDWR else "body")
                try:
                    # The plain-socket shutdown, also under TLS: the SSL object belongs to
                    # the thread blocked reading it.
                    socket.socket.shutdown(conn.sock, deadline.how)
                except OSError:
                    pass  # already closed

    def _log_late(self, conn: TConn, part: str) -> None:
        self.log.info("Closing a connection from %s: request %s not received in time",
                      conn.client[0] if conn.client else "?", part)

    # --- the application ----------------------------------------------------------------------

    def load_wsgi(self) -> None:
        super().load_wsgi()
        self.wsgi = self._with_connection(self.wsgi)

    def _with_connection(self, application: Callable) -> Callable:
        worker = self

        def with_connection(environ: dict, start_response: Callable) -> Iterable[bytes]:
            conn: TConn = worker._serving.connection
            environ[CLIENT_CERT_ENVIRON_KEY] = _peer_certificate(conn.sock)
            # The body deadline stays until the body is read, by the application or by
            # gunicorn discarding what it left unread (that drain is not bounded against a
            # client sending a byte at a time).
            environ["wsgi.input"] = _TimedInput(environ, worker, conn)
            return application(environ, start_response)

        return with_connection

    # --- errors gunicorn answers itself -------------------------------------------------------

    def handle_error(self, req: Any, client: socket.socket, addr: Any, exc: BaseException) -> None:
        status = next((code for cls, code in _PARSE_ERROR_STATUSES if isinstance(exc, cls)), 500)
        if req is None and isinstance(getattr(exc, "req", None), Request):
            req = exc.req  # gunicorn attaches the request to some header errors
        parsed = isinstance(req, Request)
        origin = f"{req.method} {req.path}" if parsed else UNPARSED_ORIGIN
        client_fault = status < 500 or isinstance(exc, http_errors.UnsupportedTransferCoding)
        if client_fault:
            # The client's request (a transfer coding we do not implement is a 501, but no
            # fault of ours). gunicorn's own texts are terse ("limit request headers
            # fields"): lead with the status phrase.
            phrase = HTTPStatus(status).phrase
            message = f"{phrase}: {exc}" if str(exc) else phrase
            self.log.warning("Invalid request from ip=%s: %s", (addr or ("",))[0], exc)
        else:
            message = "Internal server error"
            self.log.error("Error handling request %s", origin, exc_info=exc)
        if parsed:
            self._log_access(req, client, addr, status)
        try:
            write_nonblock(client, _error_response(status, message, origin, client_fault))
        except Exception:  # the client is gone; nothing more to tell it
            self.log.debug("Failed to send error message.")

    def _log_access(self, req: Request, client: socket.socket, addr: Any, status: int) -> None:
        addr = addr or ("", -1)  # unix socket
        environ = default_environ(req, client, self.cfg)
        environ["REMOTE_ADDR"], environ["REMOTE_PORT"] = addr[0], str(addr[1])
        response = Response(req, client, self.cfg)
        response.status = f"{status} {HTTPStatus(status).phrase}"
        self.log.access(response, req, environ, timedelta(0))


def _error_response(status: int, message: str, origin: str, client_fault: bool | None = None,
                    *, exception_type: str | None = None,
                    retry_after: int | None = None) -> bytes:
    """The envelope of an error answered by the server itself; `client_fault` (by default:
    a 4xx) makes it INVALID_PARAMETER, else INTERNAL_SERVER_ERROR, unless `exception_type`
    is given. `retry_after` adds that header (seconds)."""
    # api.errors imports Django REST framework, which needs configured apps: imported when
    # first needed, in a worker that has loaded the application.
    from api.errors import envelope

    client_fault = status < 500 if client_fault is None else client_fault
    if exception_type is None:
        exception_type = (InvalidParameter.exception_type if client_fault
                          else InternalServerError.exception_type)
    # ASCII JSON: encodable whatever bytes the client sent.
    body = json.dumps(envelope(message, status, exception_type, origin)).encode("ascii")
    extra = f"Retry-After: {retry_after}\r\n" if retry_after is not None else ""
    head = (f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\nConnection: close\r\n{extra}"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
    return head.encode("ascii") + body


def _peer_certificate(sock: socket.socket) -> dict | None:
    return (sock.getpeercert() or None) if isinstance(sock, ssl.SSLSocket) else None


class _TimedInput:
    """`wsgi.input` that turns a body cut off by the body deadline into a 408, and ends the
    deadline once the whole body is read (the application may then take its time)."""

    def __init__(self, environ: dict, worker: ServiceWorker, conn: TConn) -> None:
        self._stream, self._worker, self._conn = environ["wsgi.input"], worker, conn
        chunked = "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
        # Bytes still to come; None for a chunked body, whose end shows as an empty read.
        self._remaining: int | None = None if chunked else int(environ.get("CONTENT_LENGTH")
                                                                or 0)
        if self._remaining == 0:
            self._done()

    def _read(self, method: str, *args: Any) -> Any:
        try:
            data = getattr(self._stream, method)(*args)
        except OSError:
            self._raise_if_late()
            raise
        self._raise_if_late()
        size = len(data) if isinstance(data, bytes) else sum(map(len, data))
        if self._remaining is not None:
            self._remaining -= size
        if not size or (self._remaining is not None and self._remaining <= 0):
            self._done()
        return data

    def _done(self) -> None:
        self._worker._deadlines.pop(self._conn, None)

    def _raise_if_late(self) -> None:
        deadline = self._worker._deadlines.get(self._conn)
        if deadline is not None and deadline.expired:
            raise RequestTimeout(self._worker._late_body_message())

    def read(self, size: int | None = None) -> bytes:
        return self._read("read", size)

    def readline(self, size: int | None = None) -> bytes:
        return self._read("readline", size)

    def readlines(self, hint: int | None = None) -> list[bytes]:
        return self._read("readlines", hint)

    def __iter__(self) -> "_TimedInput":
        return self

    def __next__(self) -> bytes:
        line = self.readline()
        if not line:
            raise StopIteration
        return line
