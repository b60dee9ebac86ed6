"""The MQTT broker of MQTT_BROKER_URL: its address, and a connection to it (paho).

Used by the notification publisher (notifications/mqtt_publishing.py), the readiness check
(observability/health.py), the MQTT interface (mqtt_api/) and what this service publishes
in the ServiceRegistry (serviceregistry/published.py)."""
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit
from uuid import uuid4

from django.conf import settings
from paho.mqtt.client import Client
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion

from notifications.transport_errors import TransportError


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


def mqtt_connect(broker: BrokerAddress, deadline: float) -> Client:
    """A client connected to `broker` by `deadline` (its CONNACK received), its network loop
    running; TransportError otherwise."""
    # A lost publisher connection stays lost: the next publish opens a new one
    # (notifications/mqtt_publishing.py, `_Publisher.client`), so paho's own reconnecting in
    # the background would be a second, racing policy.
    where = f"MQTT broker {broker.host}:{broker.port}"
    try:
        client = mqtt_client(broker, reconnect=False)
    except OSError as exc:  # TLS_CA_FILE / TLS_CERT_FILE missing or unreadable: fixable
        raise TransportError(f"{where}: TLS settings: {exc}", transient=True) from exc
    connected, reasons = threading.Event(), []

    def on_connect(client: Client, userdata: Any, flags: Any, reason: Any,
                   properties: Any) -> None:  # on paho's network thread
        reasons.append(reason)
        connected.set()

    client.on_connect = on_connect
    try:
        client.connect(broker.host, broker.port, keepalive=max(10, settings.MQTT_TIMEOUT_SECONDS))
    except OSError as exc:  # refused, unreachable, timeout, TLS failure
        raise TransportError(f"{where}: {exc}", transient=True) from exc
    except ValueError as exc:  # an address paho cannot use: configuration
        raise TransportError(f"Invalid MQTT_BROKER_URL: {exc}", transient=False) from exc
    client.loop_start()
    # A refused CONNACK (bad credentials, broker unavailable) is reported as transient: an
    # operator can fix the broker or its credentials and nothing queued is lost.
    if not connected.wait(max(0.0, deadline - time.monotonic())):
        error = TransportError(f"{where}: no answer to CONNECT in time", transient=True)
    elif reasons[0].is_failure:
        error = TransportError(f"{where} refused the connection: {reasons[0]}", transient=True)
    else:
        return client
    client.disconnect()
    client.loop_stop()
    raise error


def mqtt_broker_check(deadline: float) -> None:
    """Connect to MQTT_BROKER_URL and leave (readiness, observability/health.py): TransportError
    unless the broker accepts us by `deadline`."""
    client = mqtt_connect(broker_address(settings.MQTT_BROKER_URL), deadline)
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
