"""A request id for every request: in the logs, in the X-Request-ID header and in 500 bodies."""
import contextvars
import logging
import re
import uuid
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

_current: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")
# A caller-supplied id is kept when it is short and harmless in a log line.
_ACCEPTABLE = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


def current_request_id() -> str:
    return _current.get()


class RequestIdMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        supplied = request.headers.get("X-Request-ID", "")
        request_id = supplied if _ACCEPTABLE.match(supplied) else uuid.uuid4().hex
        request.request_id = request_id
        token = _current.set(request_id)
        try:
            response = self.get_response(request)
        finally:
            _current.reset(token)
        response["X-Request-ID"] = request_id
        return response


class RequestIdLogFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = _current.get()
        return True
