"""A request body's type check: the precompiled check of the hot operations first, DRF's
serializer for whatever it declines (and for the error messages)."""
from collections.abc import Callable
from typing import Any

from rest_framework import serializers


def validated_body(data: Any, *, check: Callable[[Any], dict | None],
                   serializer: type[serializers.Serializer]) -> dict:
    """The validated body (an absent body is an empty one): `check(data)` when it accepts
    it (a precompiled check that gives exactly the serializer's validated_data, or None), else
    the serializer's validated_data, or its 400."""
    data = {} if data is None else data
    checked = check(data)
    if checked is None:
        validation = serializer(data=data)
        validation.is_valid(raise_exception=True)
        checked = validation.validated_data
    return checked
