"""Endpoints the tests start themselves, all on loopback, to receive what the service sends:
an HTTP sink (`HttpSink`), an MQTT subscriber (`MqttReceiver`), throw-away Mosquitto brokers
(`mosquitto`) and a server that never answers (`SilentTcpServer`). Ports come from
tests/ports.py, waiting from tests/concurrency.py. Checks that the shared services
(PostgreSQL, Redis, the main MQTT broker) are up are in tests/services.py."""
import json
import queue
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from django.utils import timezone
from paho.mqtt.client import Client, MQTTMessage
from paho.mqtt.enums import CallbackAPIVersion

from notifications.models import NotificationDelivery
from notifications.http_delivery import http_destination
from tests.concurrency import WAIT_SECONDS, wait_for

BODY = {"results": [{"serviceInstanceId": "P|svc|1.0.0"}], "warnings": []}


def make_delivery(protocol: str = "HTTP", properties: dict[str, Any] | None = None,
                  **fields: Any) -> NotificationDelivery:
    """A due PENDING delivery written directly (no enqueue), for tests of sending."""
    now = timezone.now()
    values: dict[str, Any] = {
        "subscription_id": uuid.uuid4(), "protocol": protocol, "properties": properties or {},
        "destination": http_destination(protocol, properties or {}),
        "payload": BODY, "next_attempt_at": now, "created_at": now, "updated_at": now,
    }
    return NotificationDelivery.objects.create(**{**values, **fields})


# --- HTTP -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class ReceivedRequest:
    method: str
    path: str
    headers: dict[str, str]  # names in lower case
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def serve_on_loopback(handler: type[BaseHTTPRequestHandler], port: int = 0,
                      ) -> tuple[ThreadingHTTPServer, threading.Thread]:
    """A threading HTTP server on 127.0.0.1 (`port` 0: any free one), serving from a daemon
    thread that checks for shutdown every 50 ms. Stop it with `stop_serving`."""
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    return server, thread


def stop_serving(server: ThreadingHTTPServer, thread: threading.Thread) -> None:
    """Stop a server of `serve_on_loopback` (again: nothing)."""
    if thread.is_alive():
        server.shutdown()
        server.server_close()
        thread.join()


def server_url(server: ThreadingHTTPServer) -> str:
    host, port = server.server_address[:2]
    return f"http://{host}:{port}"


@dataclass
class HttpSink:
    """A subscriber's HTTP endpoint on 127.0.0.1 that records every request and answers
    `status` after `delay` seconds (both may be changed while it runs)."""

    status: int = 204
    delay: float = 0.0
    bind_port: int = 0  # 0: any free port
    requests: list[ReceivedRequest] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._server, self._thread = serve_on_loopback(self._handler_class(), self.bind_port)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def properties(self, method: str = "POST", path: str = "/notify") -> dict[str, Any]:
        return {"address": "127.0.0.1", "port": self.port, "method": method, "path": path}

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def _record_and_answer(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {name.lower(): value for name, value in self.headers.items()}
                sink.requests.append(ReceivedRequest(self.command, self.path, headers, body))
                time.sleep(sink.delay)
                self.send_response(sink.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_POST = do_PUT = do_PATCH = do_GET = _record_and_answer

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


# --- MQTT -----------------------------------------------------------------------------------

class MqttReceiver:
    """A subscriber on a fresh topic of the broker at host:port (QoS 2 subscription, so a
    message arrives with the QoS it was published with). Ready once the SUBACK arrived."""

    def __init__(self, host: str, port: int, topic: str | None = None) -> None:
        self.topic = topic or f"test/{uuid.uuid4().hex}"
        self.messages: queue.Queue[MQTTMessage] = queue.Queue()
        self._subscribed = threading.Event()
        self._client = Client(callback_api_version=CallbackAPIVersion.VERSION2,
                              client_id=f"test-receiver-{uuid.uuid4().hex[:8]}")
        self._client.on_connect = self._on_connect
        self._client.on_subscribe = lambda *args: self._subscribed.set()
        self._client.on_message = lambda client, userdata, message: self.messages.put(message)
        self._client.connect(host, port)
        self._client.loop_start()
        if not self._subscribed.wait(WAIT_SECONDS):
            self.close()
            raise AssertionError(f"No SUBACK from the MQTT broker at {host}:{port}")

    def _on_connect(self, client: Client, *args: Any) -> None:
        client.subscribe(self.topic, qos=2)

    def get(self, timeout: float = WAIT_SECONDS) -> MQTTMessage:
        return self.messages.get(timeout=timeout)

    def close(self) -> None:
        self._client.disconnect()
        self._client.loop_stop()


@contextmanager
def mosquitto(port: int, *, persistence: Path | None = None, tls: Path | None = None,
              config: Path | None = None) -> Iterator[subprocess.Popen]:
    """A second, real broker on 127.0.0.1:`port` (Mosquitto's default config listens on
    loopback only), stopped on exit. With `persistence` (a `broker_state_directory()`) it
    keeps its clients' sessions and queued messages there across a stop and a start, as a
    production broker would. With `tls` (a `broker_state_directory()` holding `make_certificates`
    output with a `Broker` certificate) it speaks only TLS and admits only clients presenting a
    certificate of that CA, whose CN becomes their user name: the broker an Arrowhead cloud
    runs under the certificate policy. With `config` it runs that configuration file as it is
    (which must listen on 127.0.0.1:`port`)."""
    lines = [f"listener {port} 127.0.0.1"]
    if persistence is not None:
        lines += ["persistence true", f"persistence_location {persistence}/"]
    if tls is not None:
        lines += [f"cafile {tls}/ca.pem", f"certfile {tls}/Broker.pem",
                  f"keyfile {tls}/Broker.key", "require_certificate true",
                  "use_identity_as_username true", "allow_anonymous false"]
    else:
        lines.append("allow_anonymous true")
    command = ["mosquitto", "-p", str(port)]
    if config is None and (persistence is not None or tls is not None):
        config = (persistence or tls) / f"mosquitto-{port}.conf"
        config.write_text("\n".join(lines) + "\n")
    if config is not None:
        command = ["mosquitto", "-c", str(config)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: _accepts(port) or process.poll() is not None,
                 what=f"mosquitto on port {port}")
        assert process.poll() is None, f"{' '.join(command)} exited with {process.returncode}"
        yield process
    finally:
        process.terminate()
        process.wait(timeout=WAIT_SECONDS)


@contextmanager
def broker_state_directory() -> Iterator[Path]:
    """A directory for `mosquitto(..., persistence=)`, removed on exit. Mosquitto started as
    root writes as its own user: the directory is world-writable and outside pytest's
    private temporary tree."""
    directory = Path(tempfile.mkdtemp(prefix="so-test-mosquitto-"))
    directory.chmod(0o777)
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


class SilentTcpServer:
    """A destination that accepts TCP connections on 127.0.0.1 and never answers: every
    request to it hangs until the client's read timeout. Counts the connections it holds.
    With `drip` (seconds), it answers `200 OK` and then sends one byte of a header line every
    `drip` seconds, never ending the head: each read the client makes gets something."""

    def __init__(self, drip: float | None = None) -> None:
        self._drip = drip
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=128)
        self._lock = threading.Lock()
        self._held: list[socket.socket] = []
        self.accepted = 0
        self.open = 0
        self.most_open = 0
        self._closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def port(self) -> int:
        return self._listener.getsockname()[1]

    def properties(self, path: str = "/notify") -> dict[str, Any]:
        return {"address": "127.0.0.1", "port": self.port, "method": "POST", "path": path}

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self._held.append(connection)
                self.accepted += 1
                self.open += 1
                self.most_open = max(self.most_open, self.open)
            threading.Thread(target=self._hold, args=(connection,), daemon=True).start()
            if self._drip is not None:
                threading.Thread(target=self._drip_head, args=(connection,),
                                 daemon=True).start()

    def _drip_head(self, connection: socket.socket) -> None:
        try:
            connection.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
            while not self._closed.wait(self._drip):
                connection.sendall(b"a")
        except OSError:
            pass  # the client gave up

    def _hold(self, connection: socket.socket) -> None:
        """Read (and ignore) until the client gives up, so that `open` is the number of
        requests in flight right now."""
        try:
            while connection.recv(65536):
                pass
        except OSError:
            pass
        with self._lock:
            self.open -= 1

    def close(self) -> None:
        self._closed.set()
        self._listener.close()
        with self._lock:
            for connection in self._held:
                try:
                    connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                connection.close()
