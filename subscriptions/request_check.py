"""The subscribe body's type check without DRF: what SubscribeSerializer gives as
`validated_data`, for the bodies it certainly accepts (issue 15: building the serializer,
whose fields are deep-copied per request, was over half of a subscribe call's CPU).

The same one-sided contract as orchestration/request_check.py, whose check it uses for the
orchestration request: a dict only for a body the serializer accepts, equal to its
`validated_data`; None for anything else or unusual, and the caller then runs the serializer,
which answers with its own messages. tests/subscriptions/test_request_check.py holds this
against the serializer on generated bodies.
"""
from typing import Any

from orchestration.request_check import (
    ABSENT,
    checked_duration,
    checked_json_object,
    checked_orchestration_request,
    checked_text,
)


def checked_subscribe_request(document: Any) -> dict | None:
    """`document` is a parsed JSON body (already screened by config.input_safety). Returns
    what SubscribeSerializer(data=document).validated_data would be when the serializer would
    accept it, else None."""
    if type(document) is not dict:
        return None
    checked: dict = {}
    request = document.get("orchestrationRequest", ABSENT)
    if request is not ABSENT:
        if request is not None:
            request = checked_orchestration_request(request)
            if request is None:
                return None
        checked["orchestrationRequest"] = request
    interface = document.get("notifyInterface", ABSENT)
    if interface is not ABSENT:
        if interface is not None:
            interface = _notify_interface(interface)
            if interface is None:
                return None
        checked["notifyInterface"] = interface
    duration = document.get("duration", ABSENT)
    if duration is not ABSENT:
        if duration is not None and not checked_duration(duration):
            return None
        checked["duration"] = duration
    target = document.get("targetSystemName", ABSENT)
    if target is not ABSENT:
        if target is not None and not checked_text(target):
            return None
        checked["targetSystemName"] = target
    return checked


def _notify_interface(data: Any) -> dict | None:
    """NotifyInterfaceSerializer."""
    if type(data) is not dict:
        return None
    checked: dict = {}
    protocol = data.get("protocol", ABSENT)
    if protocol is not ABSENT:
        if protocol is not None and not checked_text(protocol):
            return None
        checked["protocol"] = protocol
    properties = data.get("properties", ABSENT)
    if properties is not ABSENT:
        if properties is not None:
            properties = checked_json_object(properties)
            if properties is None:
                return None
        checked["properties"] = properties
    return checked
