"""The reference's MQTT request and response templates (issue 16).

Request: `{traceId, authentication, responseTopic, qosRequirement, params, payload}`.
Response, published on `responseTopic` at QoS `qosRequirement`:
`{status, traceId, receiver, payload}` (fields without a value left out, an empty payload
sent as "", as the reference does).

A missing `qosRequirement` means QoS 0, as the reference's documentation says, instead of
the reference's silent drop (decisions). A message that is not a valid template is not
answered: nothing in it says who sent it (mqtt_api/response_topics.py).
"""
import json
from dataclasses import dataclass
from typing import Any

# A response topic is where we publish: a plain topic name, no wildcard, not the broker's ($).
_TOPIC_REFUSED = ("#", "+", "\x00")
MAX_TOPIC_BYTES = 65535


class TemplateError(Exception):
    """A request that is not a valid template (logged and dropped)."""


@dataclass(frozen=True)
class MqttRequest:
    trace_id: str | None
    authentication: str | None
    response_topic: str | None
    qos: int
    params: dict[str, str]
    payload: Any


def parse_request(raw: bytes) -> MqttRequest:
    """The request template of a message, or TemplateError."""
    try:
        document = json.loads(raw)
    except (ValueError, RecursionError) as error:
        raise TemplateError(f"Invalid message template. Reason: {type(error).__name__}") from None
    if type(document) is not dict:
        raise TemplateError("Invalid message template. Reason: not a JSON object")
    trace_id = document.get("traceId")
    trace_id = trace_id if isinstance(trace_id, str) else None
    topic = _response_topic(document.get("responseTopic"))
    qos = document.get("qosRequirement")
    if qos is None:
        qos = 0
    elif type(qos) is not int or not 0 <= qos <= 2:
        raise TemplateError(f"Unknown MQTT QoS value: {qos}")
    authentication = document.get("authentication")
    if authentication is not None and not isinstance(authentication, str):
        raise TemplateError("Invalid authentication info")
    params = document.get("params") or {}
    if type(params) is not dict or not all(
            isinstance(key, str) and isinstance(value, str) for key, value in params.items()):
        raise TemplateError("Invalid message template. Reason: params must map names to "
                            "strings")
    return MqttRequest(trace_id, authentication, topic, qos, params, document.get("payload"))


def _response_topic(value: Any) -> str | None:
    if not isinstance(value, str) or not value or value.startswith("$") or any(
            c in value for c in _TOPIC_REFUSED):
        return None
    if len(value.encode()) > MAX_TOPIC_BYTES:
        return None
    return value


def response_bytes(*, status: int, trace_id: str | None, receiver: str | None,
                   payload: Any) -> bytes:
    template = {"status": status, "traceId": trace_id, "receiver": receiver,
                "payload": "" if payload is None else payload}
    return json.dumps({key: value for key, value in template.items() if value is not None},
                      separators=(",", ":")).encode()
