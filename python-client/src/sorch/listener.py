"""The pushes of subscriptions, received over MQTT; after a lost connection the listener
connects again, subscribes again and pulls again, so that no change is missed."""
import json
import logging
import signal
import threading
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

from paho.mqtt.client import Client, ConnectFlags, DisconnectFlags, MQTTMessage
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

from sorch.errors import ClientError

DEFAULT_MQTT = "mqtt://127.0.0.1:1883"

log = logging.getLogger("sorch")

Response = dict[str, Any]


class PushListener:
    """Receives the pushes of subscriptions on `topic` of an MQTT broker
    (`mqtt://[user:password@]host[:port]`, `mqtts://` for TLS with the system's CAs) and calls
    `on_push(response)` with each push's orchestration response, in the listener's thread.

    When the connection is lost it connects again (waiting 1 s, then doubling up to
    `reconnect_max_delay`), subscribes again and, with `repull` (e.g. `lambda:
    orchestrator.pull(request)`), pulls and hands that result to `on_push` before any push that
    follows: a change pushed while it was away is not missed. `on_push` may so see a result
    twice. Raises `ClientError` when the broker cannot be reached at first or does not confirm
    the subscription within `timeout` seconds."""

    def __init__(self, broker_url: str, topic: str, on_push: Callable[[Response], None], *,
                 repull: Callable[[], Response] | None = None, timeout: float = 10,
                 reconnect_max_delay: int = 30) -> None:
        parts = urllib.parse.urlsplit(broker_url)
        if parts.scheme not in ("mqtt", "mqtts") or not parts.hostname:
            raise ClientError(f"invalid MQTT broker URL {broker_url!r} "
                              "(expected mqtt://host:port or mqtts://host:port)")
        self.topic = topic
        self.reconnects = 0
        self._on_push = on_push
        self._repull = repull
        self._subscribed = threading.Event()
        port = parts.port or (8883 if parts.scheme == "mqtts" else 1883)
        self._where = f"{parts.hostname}:{port}"
        self._client = Client(callback_api_version=CallbackAPIVersion.VERSION2)
        self._client.reconnect_delay_set(min_delay=1, max_delay=reconnect_max_delay)
        if parts.username:
            self._client.username_pw_set(urllib.parse.unquote(parts.username),
                                         urllib.parse.unquote(parts.password or ""))
        if parts.scheme == "mqtts":
            self._client.tls_set()
        self._client.on_connect = self._connected
        self._client.on_subscribe = self._confirmed
        self._client.on_disconnect = self._disconnected
        self._client.on_message = self._message
        try:
            self._client.connect(parts.hostname, port)
        except OSError as error:
            raise ClientError(f"cannot reach the MQTT broker {self._where}: "
                              f"{getattr(error, 'strerror', None) or error}") from None
        self._client.loop_start()
        if not self._subscribed.wait(timeout):
            self.close()
            raise ClientError(f"the MQTT broker {self._where} did not confirm the "
                              f"subscription to {topic}")

    def close(self) -> None:
        """Disconnect and stop the listener's thread."""
        self._client.disconnect()
        self._client.loop_stop()

    # paho's callbacks, all in the listener's one thread: a re-pull's result is handed over
    # before any message received after it.

    def _connected(self, client: Client, userdata: Any, flags: ConnectFlags,
                   reason: ReasonCode, properties: Properties | None) -> None:
        if reason.is_failure:
            log.warning("the MQTT broker %s refused the connection: %s", self._where, reason)
            return
        client.subscribe(self.topic, qos=1)

    def _confirmed(self, client: Client, userdata: Any, mid: int, reasons: list[ReasonCode],
                   properties: Properties | None) -> None:
        if any(reason.is_failure for reason in reasons):
            log.warning("the MQTT broker %s refused the subscription to %s", self._where,
                        self.topic)
            return
        if not self._subscribed.is_set():
            self._subscribed.set()
            return
        self.reconnects += 1
        log.info("connected to the MQTT broker %s again", self._where)
        if self._repull is None:
            return
        try:
            response = self._repull()
        except ClientError as error:
            log.warning("pull after reconnecting failed: %s", error)
            return
        self._on_push(response)

    def _disconnected(self, client: Client, userdata: Any, flags: DisconnectFlags,
                      reason: ReasonCode, properties: Properties | None) -> None:
        if self._subscribed.is_set() and reason.value != 0:
            log.warning("lost the connection to the MQTT broker %s (%s); connecting again",
                        self._where, reason)

    def _message(self, client: Client, userdata: Any, message: MQTTMessage) -> None:
        try:
            envelope = json.loads(message.payload)
        except ValueError:
            log.warning("ignored a message that is not JSON on %s", message.topic)
            return
        # The service wraps the response: {"receiver", "sender", "payload": <response>}.
        if isinstance(envelope, dict):
            self._on_push(envelope.get("payload", envelope))


def wait_for_pushes(broker_url: str, topic: str, on_push: Callable[[Response], None], *,
                    ready: Callable[[], None] | None = None,
                    repull: Callable[[], Response] | None = None, max_pushes: int = 0,
                    timeout: float = 0) -> int:
    """Listen on `topic` until `max_pushes` results came (0: no limit), `timeout` seconds
    passed (0: none), or SIGINT/SIGTERM; `ready` runs once the listener is subscribed (e.g.
    to subscribe at the service, so that no push is missed); `repull` as in `PushListener`.
    Returns the number of results handed to `on_push`. Call it from the main thread."""
    received = 0
    done = threading.Event()

    def handle(payload: Response) -> None:
        nonlocal received
        received += 1
        on_push(payload)
        if max_pushes and received >= max_pushes:
            done.set()

    previous = {sig: signal.signal(sig, lambda *_: done.set())
                for sig in (signal.SIGINT, signal.SIGTERM)}
    listener = PushListener(broker_url, topic, handle, repull=repull)
    try:
        if ready:
            ready()
        deadline = time.monotonic() + timeout if timeout else None
        while not done.wait(0.2):
            if deadline and time.monotonic() > deadline:
                break
    finally:
        listener.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return received
