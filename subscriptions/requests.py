"""Validation of a subscribe request (SPEC §5 subscribe, reference-simple §6.2), and of push
management's list of them (reference-simple §6.8)."""
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from conventions import names
from conventions.exceptions import InvalidParameter
from orchestration.pull.normalization import parse_orchestration_request
from orchestration.pull.services import qos_max_latency
from orchestration.pull.types import OrchestrationRequest
from subscriptions import notify_targets
from subscriptions.models import Subscription
from subscriptions.notify_topics import interface_topic, system_topic_refusal

HTTP_METHODS = ("POST", "PUT", "PATCH")
PROTOCOLS = tuple(Subscription.Protocol.values)


@dataclass(frozen=True)
class SubscribeRequest:
    # The orchestration request as sent (types checked), re-parsed per push.
    raw_request: dict
    request: OrchestrationRequest
    protocol: str
    properties: dict[str, Any]
    duration: int | None
    target: str                # the consumer orchestrated for (normalized)

    @property
    def service_definition(self) -> str | None:
        return self.request.requirement.service_definition


def _properties(raw: dict | None) -> dict[str, Any]:
    if not raw:
        raise InvalidParameter("Notify properties are missing")
    properties = {}
    for key, value in raw.items():
        if not key.strip():
            raise InvalidParameter("Notify properties contains empty key")
        if value is None or (isinstance(value, str) and not value.strip()):
            raise InvalidParameter("Notify properties contains empty value")
        properties[key.strip().lower()] = value.strip() if isinstance(value, str) else value
    return properties


def _require(properties: dict, key: str, message: str, text: bool = True) -> Any:
    if key not in properties:
        raise InvalidParameter(message)
    if text and not isinstance(properties[key], str):
        raise InvalidParameter(f"Notify property {key} should be a string")
    return properties[key]


def _http(properties: dict) -> dict:
    address = _require(properties, "address", "Notify properties has no address property")
    port = _require(properties, "port", "Notify properties has no port property", text=False)
    text = str(port).strip() if isinstance(port, (str, int)) and not isinstance(port, bool) else ""
    # isdigit() alone also holds for superscripts ("²"), which int() refuses.
    if not (text.isascii() and text.lstrip("-").isdigit()):
        raise InvalidParameter("Notify port is not a number")
    # int() refuses more than 4300 digits (CPython's conversion limit): compare lengths first.
    if len(text.lstrip("-").lstrip("0")) > 5 or not 1 <= int(text) <= 65535:
        raise InvalidParameter("Notify port is out of the valid range")
    method = _require(properties, "method", "Notify properties has no method property")
    if method.upper() not in HTTP_METHODS:
        raise InvalidParameter(f"Unsupported notify HTTP method: {method}")
    path = _require(properties, "path", "Notify properties has no path property")
    address, path = notify_targets.http_address(address), notify_targets.http_path(path)
    notify_targets.http_destination_allowed(address, int(text))
    return {**properties, "address": address, "port": int(text), "method": method.upper(),
            "path": path}


def _mqtt(properties: dict, target: str) -> dict:
    if not settings.MQTT_BROKER_URL:
        raise InvalidParameter("MQTT notify protocol required, but MQTT is not enabled")
    topic = notify_targets.mqtt_topic(
        _require(properties, "topic", "Notify properties has no topic member"))
    if interface_topic(topic):
        raise InvalidParameter(f"Notify property topic {topic} is one of the MQTT interface's "
                               f"topics (under {settings.MQTT_API_BASE_TOPIC})")
    if (outside := system_topic_refusal(topic, target)) is not None:
        raise InvalidParameter(f"Notify property topic {topic} is not {target}'s: {outside}")
    return {**properties, "topic": topic}


def _target(value: str | None, *, requester: str, explicit: bool) -> str:
    """The consumer subscribed for. A consumer subscribes for itself (`targetSystemName`
    absent, blank or the requester); push management names any system (`explicit`)."""
    blank = value is None or not value.strip()
    if explicit:
        if blank:
            raise InvalidParameter("Target system name is missing")
        return names.system_name(value)
    if not blank and names.system_name(value) != requester:
        raise InvalidParameter("Target system cannot be different than the requester system")
    return requester


def parse_subscribe_request(data: dict, *, requester: str,
                            explicit_target: bool = False) -> SubscribeRequest:
    """`data` is the validated body of SubscribeSerializer. With `explicit_target` (push
    management) `targetSystemName` is required and may be any system; otherwise it must be
    the requester (or absent)."""
    interface = data.get("notifyInterface") or {}
    protocol = (interface.get("protocol") or "").strip().upper()
    if not protocol:
        raise InvalidParameter("Notify protocol is missing")
    properties = _properties(interface.get("properties"))
    duration = data.get("duration")
    if duration is not None and duration < 1:
        raise InvalidParameter("Subscription duration must be greater than 0")
    target = _target(data.get("targetSystemName"), requester=requester,
                     explicit=explicit_target)
    raw_request = data.get("orchestrationRequest") or {}
    request = parse_orchestration_request(raw_request)
    qos_max_latency(request)
    if protocol not in PROTOCOLS:
        raise InvalidParameter(f"Unsupported notify protocol: {protocol}")
    properties = _http(properties) if protocol.startswith("HTTP") else _mqtt(properties, target)
    return SubscribeRequest(raw_request, request, protocol, properties, duration, target)


def parse_subscribe_list(items: Sequence[dict | None] | None, *,
                         requester: str) -> list[SubscribeRequest]:
    """Push management's subscribe body (`subscriptions`): every element checked in order,
    then no two for the same target and service definition. At most MAX_BULK_SIZE."""
    if not items or any(item is None for item in items):
        raise InvalidParameter("Request payload is missing")
    limit = settings.MAX_BULK_SIZE
    if len(items) > limit:
        raise InvalidParameter(f"Too many entries: at most {limit} may be created in one request")
    parsed = [parse_subscribe_request(item, requester=requester, explicit_target=True)
              for item in items]
    seen = set()
    for subscribe in parsed:
        pair = (subscribe.target, subscribe.service_definition)
        if pair in seen:
            raise InvalidParameter(f"Duplicated subscription request for system {pair[0]} "
                                   f"and service definition {pair[1] or 'null'}")
        seen.add(pair)
    return parsed
