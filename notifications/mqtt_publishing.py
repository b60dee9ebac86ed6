"""Publishing notifications on the MQTT broker: one connection per process, shared by its
threads (notifications/services.py hands it a whole batch)."""
import json
import os
import threading
import time
from typing import Any

from django.conf import settings
from paho.mqtt.client import Client, MQTTMessageInfo

from conventions.encoded_json import EncodedJSON
from notifications.mqtt_broker import BrokerAddress, broker_address, mqtt_connect
from notifications.transport_errors import TransportError


def mqtt_publish_many(messages: list[tuple[Any, Any]]) -> list["TransportError | None"]:
    """Publish (topic, payload) pairs with MQTT_QOS, not retained: all are handed to the
    broker before any acknowledgement is awaited (PUBACK/PUBCOMP for QoS >= 1). Connecting
    and the first acknowledgement take at most MQTT_TIMEOUT_SECONDS, and so does each next
    one after the one before: a batch of hundreds, which paho lets only 20 at a time be
    unacknowledged, takes as many round trips to the broker as it needs while the broker
    answers, and a broker that stops answering fails the rest after MQTT_TIMEOUT_SECONDS.
    A payload that knows its encoding (EncodedJSON) is sent as that text. Each process keeps one
    connection to the broker (clean session: no broker state that a restart could lose or
    duplicate), opened at its first publish and shared by its threads; a lost or stuck
    publish closes it, and the next one connects again. Per message None (the broker has it)
    or its TransportError."""
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
            text = payload.text if type(payload) is EncodedJSON else json.dumps(payload)
            pending.append((index, client.publish(topic, text,
                                                  qos=settings.MQTT_QOS, retain=False)))
        except ValueError as exc:  # wildcards in the topic, topic too long
            outcomes[index] = TransportError(f"Invalid MQTT topic {topic!r}: {exc}",
                                             transient=False)
    lost = False
    for index, info in pending:
        try:
            info.wait_for_publish(timeout=max(0.0, deadline - time.monotonic()))
            published = info.is_published()
            if published:  # the broker answers: the next acknowledgement gets its own time
                deadline = time.monotonic() + settings.MQTT_TIMEOUT_SECONDS
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
                client = mqtt_connect(broker, deadline)
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


_publisher = _Publisher()
