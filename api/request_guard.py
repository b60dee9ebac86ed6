"""The first look at every request, before anything reads its body or its parameters reach
a view, the admin or the database (docs/errors.md):

- a body larger than MAX_REQUEST_BODY_BYTES is answered 413 without being read: by its
  Content-Length, or, for a chunked body without one, after reading at most one byte more
  than the limit; a malformed Content-Length is answered 400;
- NUL characters in the path, a query parameter or a header value are answered 400 naming
  where (api.input_safety; the JSON parser checks bodies).
"""
import io
import re
from collections.abc import Callable

from django.conf import settings
from django.core.handlers.wsgi import LimitedStream
from django.http import HttpRequest, HttpResponse

from api.errors import body_too_large_message, error_response
from api.input_safety import text_problem
from conventions.exceptions import ArrowheadError, InvalidParameter

_DIGITS = re.compile(r"[0-9]+")
_READ_CHUNK = 64 * 1024


class RequestGuardMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # The cheap text checks first: a chunked body is read only for a request worth it.
        refusal = _text_refusal(request) or _body_refusal(request)
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
    if "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower():
        return _chunked_body_refusal(request, limit)
    return None


def _chunked_body_refusal(request: HttpRequest, limit: int) -> tuple[int, str] | None:
    """Without a Content-Length Django would see an empty body; the server (gunicorn) has
    de-chunked the stream, so read it, but never more than one byte past the limit."""
    stream = request.META.get("wsgi.input")
    if stream is None:
        return None
    received = io.BytesIO()
    while received.tell() <= limit:
        try:
            chunk = stream.read(min(_READ_CHUNK, limit + 1 - received.tell()))
        except ArrowheadError as error:  # the server's body deadline passed (408)
            return error.status_code, error.message
        except Exception as error:  # noqa: BLE001 - whatever the server raises on this stream
            # (bad chunk framing, a trailer that is no header, the client gone) is the body's
            # fault, not the service's: the request is refused, never a 500.
            return 400, f"Malformed request body: {error}"
        if not chunk:
            break
        received.write(chunk)
    size = received.tell()
    if size > limit:
        return 413, body_too_large_message()
    received.seek(0)
    request.META["CONTENT_LENGTH"] = str(size)
    request._stream = LimitedStream(received, size)  # what WSGIRequest builds from the length
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
