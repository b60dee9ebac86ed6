"""Helpers shared by the store's API views."""
from django.conf import settings
from rest_framework.request import Request

from config.exceptions import InvalidParameter


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

