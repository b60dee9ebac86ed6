"""The one error envelope: every non-2xx answer is
`{"errorMessage", "errorCode", "exceptionType", "origin"}` (SPEC §1).

Apps raise the `conventions.exceptions` classes; DRF's own exceptions, Django's Http404 and
PermissionDenied, and anything unexpected are translated here. Nothing builds an error
response by hand elsewhere.
"""
import logging
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse, UnreadablePostError
from rest_framework import exceptions as drf
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import set_rollback

from api.input_safety import encodable
from api.json_media import JSONRenderer
from api.request_id import current_request_id
from conventions.exceptions import (
    ArrowheadError,
    AuthError,
    DataNotFound,
    ExternalServerError,
    Forbidden,
    InternalServerError,
    InvalidParameter,
    OperationDependentError,
)
from database.transaction_retry import is_conflict

logger = logging.getLogger("serviceorchestration.errors")


# DRF exceptions that have no Arrowhead counterpart keep their HTTP status (405, 406, 415)
# and are reported as INVALID_PARAMETER: the request, not the server, is at fault.
_DRF_TYPES: list[tuple[type[drf.APIException], str]] = [
    (drf.NotAuthenticated, AuthError.exception_type),
    (drf.AuthenticationFailed, AuthError.exception_type),
    (drf.PermissionDenied, Forbidden.exception_type),
    (drf.NotFound, DataNotFound.exception_type),
]


def origin_of(request: HttpRequest) -> str:
    return f"{request.method} {request.path}"


def envelope(message: str, status: int, exception_type: str, origin: str) -> dict[str, Any]:
    """Messages may echo client input: whatever it held, the envelope stays encodable."""
    return {
        "errorMessage": encodable(message),
        "errorCode": status,
        "exceptionType": exception_type,
        "origin": encodable(origin),
    }


def error_response(request: HttpRequest, status: int, exception_type: str,
                   message: str) -> HttpResponse:
    """The envelope outside DRF views (middleware, Django's error handlers), rendered as
    DRF views render it."""
    body = envelope(message, status, exception_type, origin_of(request))
    return HttpResponse(JSONRenderer().render(body), status=status,
                        content_type="application/json")


def body_too_large_message() -> str:
    return f"Request body too large: at most {settings.MAX_REQUEST_BODY_BYTES} bytes are accepted"


def exception_handler(exc: Exception, context: Mapping[str, Any]) -> Response:
    """DRF's EXCEPTION_HANDLER: every exception raised in an API view ends here."""
    request = context["request"]
    set_rollback()
    if isinstance(exc, OperationDependentError):
        exc = exc.resolve(context.get("view"), request.method)
    if isinstance(exc, ArrowheadError):
        status, exception_type, message = exc.status_code, exc.exception_type, exc.message
    elif isinstance(exc, drf.ValidationError):
        status, exception_type = 400, InvalidParameter.exception_type
        message = first_validation_message(exc.detail)
    elif isinstance(exc, drf.APIException):
        status, message = exc.status_code, str(exc.detail)
        exception_type = next((kind for cls, kind in _DRF_TYPES if isinstance(exc, cls)),
                              InternalServerError.exception_type if status >= 500
                              else InvalidParameter.exception_type)
    elif isinstance(exc, Http404):
        status, exception_type, message = 404, DataNotFound.exception_type, "Not found"
    elif isinstance(exc, DjangoPermissionDenied):
        status, exception_type, message = 403, Forbidden.exception_type, "Forbidden"
    elif isinstance(exc, RequestDataTooBig):  # the request guard answers first; a safety net
        status, exception_type = 413, InvalidParameter.exception_type
        message = body_too_large_message()
    elif isinstance(exc, UnreadablePostError):  # the client went away mid-body
        status, exception_type = 400, InvalidParameter.exception_type
        message = "Request body could not be read"
    else:
        status, exception_type, message = _unexpected(request, exc)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    body = envelope(message, status, exception_type, origin_of(request))
    return Response(body, status=status, headers=headers)


def _unexpected(request: HttpRequest, exc: BaseException | None) -> tuple[int, str, str]:
    """A failure of ours, logged: the database unreachable or its connection lost (server down
    or restarting, connect timeout, a pooled connection it closed), as opposed to a conflict
    with a concurrent transaction (`database.transaction_retry`, 423), is a 503; anything else
    a 500."""
    request_id = current_request_id()
    if isinstance(exc, (OperationalError, InterfaceError)) and not is_conflict(exc):
        logger.warning("Database unavailable on %s (request id %s): %s", origin_of(request),
                       request_id, " ".join(str(exc).split()))
        return (503, ExternalServerError.exception_type, "The database is unavailable; the "
                f"request was not applied, please retry (request id {request_id})")
    logger.error("Unhandled exception on %s (request id %s)", origin_of(request), request_id,
                 exc_info=exc or True)
    return (500, InternalServerError.exception_type,
            f"Internal server error (request id {request_id})")


def first_validation_message(detail: Any, path: str = "") -> str:
    """The first error of a (nested) DRF validation result as one sentence naming the field,
    e.g. `entries[0].priority: A valid integer is required.`"""
    if isinstance(detail, Mapping):
        for key, value in detail.items():
            if key == api_settings.NON_FIELD_ERRORS_KEY:
                return first_validation_message(value, path)
            if isinstance(key, int):  # ListField reports items by index
                return first_validation_message(value, f"{path}[{key}]")
            return first_validation_message(value, f"{path}.{key}" if path else str(key))
    if isinstance(detail, Sequence) and not isinstance(detail, str):
        # A list of messages for one field, or a list of per-item results (ListSerializer).
        for index, item in enumerate(detail):
            if isinstance(item, str):
                return f"{path}: {item}" if path else str(item)
            if item:
                return first_validation_message(item, f"{path}[{index}]")
        return f"{path}: invalid value" if path else "Invalid request"
    return f"{path}: {detail}" if path else str(detail)


# --- Django-level handlers, for errors that never reach a DRF view -------------------------


def server_error(request: HttpRequest) -> HttpResponse:
    # Django calls handler500 while handling the exception.
    return error_response(request, *_unexpected(request, sys.exception()))


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    if isinstance(exception, RequestDataTooBig):  # e.g. an admin form over the limit
        return error_response(request, 413, InvalidParameter.exception_type,
                              body_too_large_message())
    if isinstance(exception, TooManyFieldsSent):  # Django's DATA_UPLOAD_MAX_NUMBER_FIELDS
        return error_response(request, 400, InvalidParameter.exception_type,
                              f"Too many query parameters or form fields: at most "
                              f"{settings.DATA_UPLOAD_MAX_NUMBER_FIELDS} are accepted")
    return error_response(request, 400, InvalidParameter.exception_type, "Bad request")


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    return error_response(request, 403, Forbidden.exception_type, "Forbidden")
