"""The first look at every request, before anything reads its body or its parameters reach a
view, the admin or the database (docs/errors.md): a body declared larger than
MAX_REQUEST_BODY_BYTES (413, unread; nginx in front gives gunicorn every body with a
Content-Length) or a malformed Content-Length (400); more than SERVER_LIMIT_REQUEST_FIELDS
header fields (431: nginx bounds their size, not their number); NUL in the path, a query
parameter or a header value (400 naming where; the JSON parser checks bodies).
"""
import re
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from api.errors import body_too_large_message, error_response
from api.input_safety import text_problem
from conventions.exceptions import InvalidParameter

_DIGITS = re.compile(r"[0-9]+")
# Header fields nginx adds to every request it passes on (deploy/nginx.conf).
_PROXY_FIELDS = {"HTTP_X_FORWARDED_FOR", "HTTP_X_FORWARDED_PROTO", "HTTP_X_CLIENT_CERTIFICATE"}


class RequestGuardMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        refusal = _fields_refusal(request) or _text_refusal(request) or _body_refusal(request)
        if refusal is not None:
            status, message = refusal
            return error_response(request, status, InvalidParameter.exception_type, message)
        return self.get_response(request)


def _body_refusal(request: HttpRequest) -> tuple[int, str] | None:
    limit = settings.MAX_REQUEST_BODY_BYTES
    declared = request.META.get("CONTENT_LENGTH", "").strip()
    if declared:
        # Django reads a malformed length as 0, DRF too, but request.body fails on it.
        if not _DIGITS.fullmatch(declared):
            return 400, "Invalid Content-Length header"
        return (413, body_too_large_message()) if int(declared) > limit else None
    return None


def _fields_refusal(request: HttpRequest) -> tuple[int, str] | None:
    limit = settings.SERVER_LIMIT_REQUEST_FIELDS
    fields = sum(key.startswith("HTTP_") and key not in _PROXY_FIELDS for key in request.META)
    fields += ("CONTENT_TYPE" in request.META) + ("CONTENT_LENGTH" in request.META)
    if fields > limit:
        return 431, f"Request Header Fields Too Large: more than {limit} header fields"
    return None


def _text_refusal(request: HttpRequest) -> tuple[int, str] | None:
    problem = text_problem(request.path_info)
    if problem is not None:
        return 400, f"Path: {problem}"
    for name, values in request.GET.lists():
        problem = text_problem(name)
        if problem is not None:
            return 400, f"Query parameter name: {problem}"
        problem = next(filter(None, map(text_problem, values)), None)
        if problem is not None:
            return 400, f"Query parameter {name}: {problem}"
    for key, value in request.META.items():
        if key.startswith("HTTP_") or key == "CONTENT_TYPE":
            problem = text_problem(value) if isinstance(value, str) else None
            if problem is not None:
                return 400, f"Header {_header_name(key)}: {problem}"
    return None


def _header_name(meta_key: str) -> str:
    """`HTTP_X_REQUEST_ID` → `X-Request-Id`."""
    return meta_key.removeprefix("HTTP_").replace("_", "-").title()
