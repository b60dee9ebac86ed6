"""What a view takes from a request: its body, type-checked (the precompiled check of the hot
operations first, DRF's serializer for whatever it declines and for the error messages), and
the values of a list query parameter."""
from collections.abc import Callable
from typing import Any

from django.conf import settings
from rest_framework import serializers
from rest_framework.request import Request

from conventions.exceptions import InvalidParameter


def validated(serializer_class: type[serializers.Serializer], data: Any,
              check: Callable[[Any], dict | None] | None = None) -> dict:
    """Shape and types of a JSON body; no body (or `null`) is an empty object. `check`, a check
    compiled from the serializer (api.shapes), gives its validated_data for a body it accepts;
    for any other, the serializer decides, with its messages."""
    data = {} if data is None else data
    if check is not None and (checked := check(data)) is not None:
        return checked
    serializer = serializer_class(data=data)
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
