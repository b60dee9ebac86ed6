"""The subscribe body's type check without DRF: what SubscribeSerializer gives as
`validated_data`, for the bodies it certainly accepts (issue 15: building the serializer,
whose fields are deep-copied per request, was over half of a subscribe call's CPU).

The same one-sided contract as orchestration/pull/body_check.py, whose check it uses for the
orchestration request: a dict only for a body the serializer accepts, equal to its
`validated_data`; None for anything else or unusual, and the caller then runs the serializer,
which answers with its own messages. tests/subscriptions/test_request_check.py holds this
against the serializer on generated bodies.
"""
from typing import Any

from orchestration.pull.body_check import (
    checked_duration,
    checked_fields,
    checked_json_object,
    checked_orchestration_request,
    checked_text,
)


def _text(value: Any) -> str | None:
    return value if checked_text(value) else None


def _duration(value: Any) -> int | None:
    return value if checked_duration(value) else None


def _notify_interface(value: Any) -> dict | None:
    """NotifyInterfaceSerializer."""
    if type(value) is not dict:
        return None
    return checked_fields(value, (("protocol", _text), ("properties", checked_json_object)))


# SubscribeSerializer's fields, in its order.
_FIELDS = (("orchestrationRequest", checked_orchestration_request),
           ("notifyInterface", _notify_interface),
           ("duration", _duration),
           ("targetSystemName", _text))


def checked_subscribe_request(document: Any) -> dict | None:
    """`document` is a parsed JSON body (already screened by api.input_safety). Returns
    what SubscribeSerializer(data=document).validated_data would be when the serializer would
    accept it, else None."""
    if type(document) is not dict:
        return None
    return checked_fields(document, _FIELDS)
