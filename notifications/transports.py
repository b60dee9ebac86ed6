"""Outbound adapters: send one notification body over MQTT(S) or HTTP(S).

Each call either returns (the message was accepted: PUBACK for MQTT QoS >= 1, a 2xx for HTTP)
or raises TransportError, whose `transient` flag tells the caller whether trying again later
can help. Nothing here touches the database.

The adapters live by role: MQTT publishing in notifications/mqtt_publishing.py (the broker's
address and connections: notifications/mqtt_broker.py), HTTP delivery in
notifications/http_delivery.py (connections and deadlines: notifications/http_connections.py).
"""
from typing import Any

from notifications.http_delivery import http_send
from notifications.mqtt_publishing import mqtt_publish
from notifications.transport_errors import TransportError


def send(protocol: str, properties: dict[str, Any], payload: Any) -> None:
    """Send `payload` (already the final body) as JSON through `protocol`."""
    protocol = protocol.upper()
    if protocol in ("MQTT", "MQTTS"):
        mqtt_publish(topic=properties.get("topic"), payload=payload)
    elif protocol in ("HTTP", "HTTPS"):
        http_send(protocol=protocol, properties=properties, payload=payload)
    else:
        raise TransportError(f"Unsupported notify protocol: {protocol}", transient=False)
