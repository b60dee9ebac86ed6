"""Outbound adapters: send one notification body over MQTT(S) or HTTP(S).

Each call either returns (the message was accepted: PUBACK for MQTT QoS >= 1, a 2xx for HTTP)
or raises TransportError, whose `transient` flag tells the caller whether trying again later
can help. Nothing here touches the database.
"""
import heapq
import http.client
import itertools
import json
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from http.client import HTTPException, InvalidURL
from typing import Any
from urllib.parse import unquote, urlsplit
from uuid import uuid4

from django.conf import settings
from paho.mqtt.client import Client, MQTTMessageInfo
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion

from notifications import address_policy

# Status codes that mean "not now" rather than "never": retried like a connection error.
TRANSIENT_HTTP_STATUSES = frozenset({408, 429})


class TransportError(Exception):
    """A failed send. `transient`: the broker or endpoint may accept it later (retry);
    otherwise retrying cannot help (the configuration or the endpoint refuses it).
    `not_http`: the destination accepted the connection but did not answer in HTTP (garbage,
    or closed without an answer): retried, but only a bounded number of times."""

    def __init__(self, message: str, *, transient: bool, not_http: bool = False) -> None:
        super().__init__(message)
        self.transient = transient
        self.not_http = not_http


def send(protocol: str, properties: dict[str, Any], payload: Any) -> None:
    """Send `payload` (already the final body) as JSON through `protocol`."""
    protocol = protocol.upper()
    if protocol in ("MQTT", "MQTTS"):
        mqtt_publish(topic=properties.get("topic"), payload=payload)
    elif protocol in ("HTTP", "HTTPS"):
        http_send(protocol=protocol, properties=properties, payload=payload)
    else:
        raise TransportError(f"Unsupported notify protocol: {protocol}", transient=False)


# --- MQTT -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class BrokerAddress:
    host: str
    port: int
    tls: bool
    username: str | None
    password: str | None = field(repr=False)  # never in a log line or a message

    def __str__(self) -> str:
        """The broker as logs may name it: scheme, user, host and port, no password."""
        user = f"{self.username}@" if self.username is not None else ""
        return f"{'mqtts' if self.tls else 'mqtt'}://{user}{self.host}:{self.port}"


def broker_address(url: str) -> BrokerAddress:
    """Parse MQTT_BROKER_URL (`mqtt://[user:password@]host[:port]`, `mqtts://` for TLS).
    A bad URL is a configuration error: permanent."""
    if not url:
        raise TransportError("MQTT is not configured", transient=False)
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise TransportError(f"Invalid MQTT_BROKER_URL: {exc}", transient=False) from exc
    if parts.scheme not in ("mqtt", "mqtts") or not parts.hostname:
        raise TransportError(
            "Invalid MQTT_BROKER_URL: expected mqtt://host:port or mqtts://host:port",
            transient=False,
        )
    tls = parts.scheme == "mqtts"
    return BrokerAddress(
        host=parts.hostname,
        port=port or (8883 if tls else 1883),
        tls=tls,
        username=unquote(parts.username) if parts.username is not None else None,
        password=unquote(parts.password) if parts.password is not None else None,
    )


def mqtt_publish(*, topic: Any, payload: Any) -> None:
    """Publish once on the configured broker with MQTT_QOS, not retained, and return when the
    broker has it (PUBACK/PUBCOMP for QoS >= 1). Each process keeps one connection to the
    broker (clean session: no broker state that a restart could lose or duplicate), opened
    at its first publish and shared by its threads; a failed publish closes it, and the next
    one connects again. MQTT_TIMEOUT_SECONDS bounds the whole exchange, connecting
    included."""
    if not isinstance(topic, str) or not topic:
        raise TransportError("MQTT notify interface has no topic", transient=False)
    broker = broker_address(settings.MQTT_BROKER_URL)
    deadline = time.monotonic() + settings.MQTT_TIMEOUT_SECONDS
    client = _publisher.client(broker, deadline)
    try:
        _publish_and_wait(client, topic, payload, deadline)
    except TransportError as exc:
        if exc.transient:
            _publisher.close(client)  # connection lost or stuck: the next publish reconnects
        raise


def mqtt_publish_many(messages: list[tuple[Any, Any]]) -> list["TransportError | None"]:
    """mqtt_publish for many (topic, payload) pairs on the process's connection: all are
    handed to the broker before any acknowledgement is awaited, and MQTT_TIMEOUT_SECONDS
    bounds the whole. Per message None (the broker has it) or its TransportError."""
    outcomes: list[TransportError | None] = [None] * len(messages)
    try:
        broker = broker_address(settings.MQTT_BROKER_URL)
        deadline = time.monotonic() + settings.MQTT_TIMEOUT_SECONDS
        client = _publisher.client(broker, deadline)
    except TransportError as exc:
        return [exc] * len(messages)
    pending: list[tuple[int, MQTTMessageInfo]] = []
    for index, (topic, payload) in enumerate(messages):
        if not isinstance(topic, str) or not topic:
            outcomes[index] = TransportError("MQTT notify interface has no topic",
                                             transient=False)
            continue
        try:
            pending.append((index, client.publish(topic, json.dumps(payload),
                                                  qos=settings.MQTT_QOS, retain=False)))
        except ValueError as exc:  # wildcards in the topic, topic too long
            outcomes[index] = TransportError(f"Invalid MQTT topic {topic!r}: {exc}",
                                             transient=False)
    lost = False
    for index, info in pending:
        try:
            info.wait_for_publish(timeout=max(0.0, deadline - time.monotonic()))
            published = info.is_published()
        except (RuntimeError, ValueError) as exc:  # connection lost, queue full
            outcomes[index], lost = TransportError(f"MQTT publish failed: {exc}",
                                                   transient=True), True
            continue
        if not published:
            outcomes[index], lost = TransportError("MQTT publish not acknowledged in time",
                                                   transient=True), True
    if lost:
        _publisher.close(client)
    return outcomes


class _Publisher:
    """This process's broker connection (a forked child opens its own)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._client: Client | None = None
        self._key: tuple | None = None

    def client(self, broker: BrokerAddress, deadline: float) -> Client:
        key = (os.getpid(), broker, settings.SYSTEM_NAME)
        with self._lock:
            client = self._client
            if client is not None and (self._key != key or not client.is_connected()):
                self._close_locked()
                client = None
            if client is None:
                client = _connect(broker, deadline)
                self._client, self._key = client, key
            return client

    def close(self, client: Client) -> None:
        with self._lock:
            if self._client is client:
                self._close_locked()

    def _close_locked(self) -> None:
        client, self._client, self._key = self._client, None, None
        if client is not None:
            client.disconnect()
            client.loop_stop()


def _connect(broker: BrokerAddress, deadline: float) -> Client:
    # A lost publisher connection stays lost: the next publish opens a new one (client()),
    # so paho's own reconnecting in the background would be a second, racing policy.
    try:
        client = mqtt_client(broker, reconnect=False)
    except OSError as exc:  # TLS_CA_FILE / TLS_CERT_FILE missing or unreadable: fixable
        raise TransportError(f"MQTT broker {broker.host}:{broker.port}: TLS settings: {exc}",
                             transient=True) from exc
    connected = _MqttConnection(client)
    try:
        client.connect(broker.host, broker.port, keepalive=max(10, settings.MQTT_TIMEOUT_SECONDS))
    except OSError as exc:  # refused, unreachable, timeout, TLS failure
        raise TransportError(f"MQTT broker {broker.host}:{broker.port}: {exc}",
                             transient=True) from exc
    except ValueError as exc:  # an address paho cannot use: configuration
        raise TransportError(f"Invalid MQTT_BROKER_URL: {exc}", transient=False) from exc
    client.loop_start()
    try:
        connected.wait(deadline, broker)
    except TransportError:
        client.disconnect()
        client.loop_stop()
        raise
    return client


_publisher = _Publisher()


def mqtt_broker_check(deadline: float) -> None:
    """Connect to MQTT_BROKER_URL and leave (readiness, observability/health.py): TransportError
    unless the broker accepts us by `deadline`."""
    client = _connect(broker_address(settings.MQTT_BROKER_URL), deadline)
    client.disconnect()
    client.loop_stop()


def mqtt_client(broker: BrokerAddress, *, reconnect: bool = True) -> Client:
    """A paho client for `broker` (clean session, a fresh client id, credentials from its
    URL; for mqtts:// TLS trusting TLS_CA_FILE, or the system's CAs without it, and presenting
    TLS_CERT_FILE when set), not connected yet. With `reconnect`, its network loop reconnects by
    itself after a lost connection."""
    client = Client(
        callback_api_version=CallbackAPIVersion.VERSION2,
        client_id=f"{settings.SYSTEM_NAME}-{uuid4().hex[:8]}",
        clean_session=True,
        protocol=MQTTProtocolVersion.MQTTv311,
        reconnect_on_failure=reconnect,
    )
    client.connect_timeout = float(settings.MQTT_TIMEOUT_SECONDS)
    if broker.tls:  # as to other Arrowhead systems: our CA and our certificate, when we have them
        client.tls_set(ca_certs=settings.TLS_CA_FILE or None,
                       certfile=settings.TLS_CERT_FILE or None,
                       keyfile=settings.TLS_KEY_FILE or None)  # hostname checked
    if broker.username is not None:
        client.username_pw_set(broker.username, broker.password)
    return client


class _MqttConnection:
    """Waits for the broker's CONNACK, which paho reports on its network thread."""

    def __init__(self, client: Client) -> None:
        self._done = threading.Event()
        self._reason: Any = None
        client.on_connect = self._on_connect

    def _on_connect(self, client: Client, userdata: Any, flags: Any, reason: Any,
                    properties: Any) -> None:
        self._reason = reason
        self._done.set()

    def wait(self, deadline: float, broker: BrokerAddress) -> None:
        """A refused CONNACK (bad credentials, broker unavailable) is reported as transient:
        an operator can fix the broker or its credentials and nothing queued is lost."""
        where = f"MQTT broker {broker.host}:{broker.port}"
        if not self._done.wait(max(0.0, deadline - time.monotonic())):
            raise TransportError(f"{where}: no answer to CONNECT in time", transient=True)
        if self._reason.is_failure:
            raise TransportError(f"{where} refused the connection: {self._reason}",
                                 transient=True)


def _publish_and_wait(client: Client, topic: str, payload: Any, deadline: float) -> None:
    try:
        info: MQTTMessageInfo = client.publish(
            topic, json.dumps(payload), qos=settings.MQTT_QOS, retain=False
        )
    except ValueError as exc:  # wildcards in the topic, topic too long
        raise TransportError(f"Invalid MQTT topic {topic!r}: {exc}", transient=False) from exc
    try:
        info.wait_for_publish(timeout=max(0.0, deadline - time.monotonic()))
        published = info.is_published()
    except (RuntimeError, ValueError) as exc:  # connection lost, queue full
        raise TransportError(f"MQTT publish failed: {exc}", transient=True) from exc
    if not published:
        raise TransportError("MQTT publish not acknowledged in time", transient=True)


# --- HTTP -----------------------------------------------------------------------------------

class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is an answer, not a delivery: following it would turn a POST into a GET
    without the body (or send the body to another host). It surfaces as a permanent error."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class _Deadline:
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

    def __enter__(self) -> "_Deadline":
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
        self._heap: list[tuple[float, int, _Deadline]] = []
        self._order = itertools.count()
        self._pid = 0  # the process whose thread runs (a forked child starts its own)

    def watch(self, deadline: _Deadline) -> None:
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
    deadline (`_Deadline`, NOTIFY_HTTP_TIMEOUT_SECONDS after the connection): a host that does
    not accept is given up on quickly, a slow or dripping one at its deadline."""

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
    def https_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(_HTTPSConnection, req, context=self._context,
                            check_hostname=self._check_hostname)


# No ProxyHandler: the environment's http_proxy must not silently reroute notifications.
_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect,
                                      _HTTPHandler, _HTTPSHandler)


def http_url(protocol: str, properties: dict[str, Any]) -> str:
    """`<protocol>://<address>:<port><path>`, the address bracketed when it is IPv6."""
    address = str(properties.get("address") or "")
    port = _port(properties.get("port"))
    if not address:
        raise TransportError("HTTP notify interface has no address", transient=False)
    if ":" in address and not address.startswith("["):
        address = f"[{address}]"
    path = str(properties.get("path") or "/")
    if not path.startswith("/"):
        path = f"/{path}"
    return f"{protocol.lower()}://{address}:{port}{path}"


def _port(value: Any) -> int:
    try:
        port = int(value)
    except (TypeError, ValueError):
        port = 0
    if not 1 <= port <= 65535:
        raise TransportError(f"HTTP notify interface has no valid port: {value!r}",
                             transient=False)
    return port


def http_destination(protocol: str, properties: dict[str, Any]) -> str:
    """`host:port` of an HTTP(S) notify interface (the unit of the per-destination limit and
    circuit breaker), "" for MQTT or when the interface has no usable address."""
    if protocol.upper() not in ("HTTP", "HTTPS"):
        return ""
    try:
        url = urlsplit(http_url(protocol, properties))
        return f"{url.hostname}:{url.port}"
    except (TransportError, ValueError):
        return ""


# A connection that the destination accepted and then cut while the request went out or
# before any answer: what a database's or a broker's port does with an HTTP request.
_CUT_OFF = (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)


def http_send(*, protocol: str, properties: dict[str, Any], payload: Any) -> None:
    """Send the body with the subscriber's method; a 2xx answer is a delivery."""
    request = _http_request(protocol, properties, payload)
    seconds = settings.NOTIFY_HTTP_CONNECT_TIMEOUT_SECONDS + settings.NOTIFY_HTTP_TIMEOUT_SECONDS
    deadline = _Deadline(seconds)
    try:
        # The answer's status is all that counts; its body is not read (it could be endless).
        with deadline:
            _opener.open(request, timeout=settings.NOTIFY_HTTP_TIMEOUT_SECONDS).close()
        if deadline.expired:  # a head cut off at the deadline can parse as a complete one
            raise OSError("the answer's head was cut off")
    except urllib.error.HTTPError as exc:
        exc.close()
        transient = exc.code >= 500 or exc.code in TRANSIENT_HTTP_STATUSES
        raise TransportError(f"{request.full_url} answered {exc.code} {exc.reason}",
                             transient=transient) from exc
    except InvalidURL as exc:  # e.g. control characters in the path
        raise TransportError(f"Invalid notify URL {request.full_url!r}: {exc}",
                             transient=False) from exc
    except address_policy.DestinationRefused as exc:  # checked before connecting
        raise TransportError(f"{request.full_url}: {exc}", transient=False) from exc
    except (urllib.error.URLError, HTTPException, OSError) as exc:  # refused, reset, timeout
        reason = getattr(exc, "reason", exc)
        not_http = not deadline.expired and isinstance(reason, (HTTPException, *_CUT_OFF))
        if deadline.expired:
            reason = f"no complete answer within {seconds} s ({reason})"
        elif not_http:  # the destination's bytes, escaped (NUL cannot be stored) and cut
            reason = f"not an HTTP answer ({type(reason).__name__}: {ascii(str(reason))[:200]})"
        raise TransportError(f"{request.full_url}: {reason}", transient=True,
                             not_http=not_http) from exc


def _http_request(protocol: str, properties: dict[str, Any],
                  payload: Any) -> urllib.request.Request:
    url = http_url(protocol, properties)
    method = str(properties.get("method") or "POST").upper()
    try:
        return urllib.request.Request(
            url,
            data=json.dumps(payload).encode(),
            method=method,
            headers={"Content-Type": "application/json", "Accept": "text/plain, application/json"},
        )
    except ValueError as exc:  # not a URL urllib can send to
        raise TransportError(f"Invalid notify URL {url!r}: {exc}", transient=False) from exc
