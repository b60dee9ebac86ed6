"""What a view takes from a request: its body, type-checked (the precompiled check of the hot
operations first, DRF's serializer for whatever it declines and for the error messages), and
the values of a list query parameter."""
from collections.abc import Callable
from typing import Any

from django.conf import settings
from rest_framework import serializers
from rest_framework.request import Request

from conventions.exceptions import InvalidParameter


def validated(serializer_class, data) -> dict:
    """Shape and types of a JSON body; no body (or `null`) is an empty object."""
    serializer = serializer_class(data={} if data is None else data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def query_list(request: Request, name: str) -> list[str]:
    """Values of a query parameter, repeated and/or comma-separated, blanks dropped; at most
    MAX_BULK_SIZE of them (each becomes an element of an SQL IN list)."""
    values = [piece for value in request.query_params.getlist(name)
              for piece in value.split(",") if piece.strip()]
    if len(values) > settings.MAX_BULK_SIZE:
        raise InvalidParameter(f"{name}: Ensure this parameter has no more than "
                               f"{settings.MAX_BULK_SIZE} values.")
    return values


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
