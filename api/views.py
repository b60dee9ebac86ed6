"""Service-wide endpoints: liveness (echo) and the JSON answer for unknown paths. Readiness
(health) is observability/health_endpoint.py."""
from django.http import HttpRequest, HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.views import APIView

from api.errors import error_response
from api.operations import UNKNOWN_MANAGEMENT_OPERATION, ServiceOperation
from api.plain_text import text_response
from api.schema import ErrorResponseSerializer
from conventions.exceptions import DataNotFound


class EchoApi(APIView):
    """Health check; needs no identity (SPEC §2)."""

    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(operation_id="echo", auth=[], responses={
        (200, "text/plain"): OpenApiTypes.STR,
        406: OpenApiResponse(ErrorResponseSerializer, description="Content negotiation failed")})
    def get(self, request: Request) -> HttpResponse:
        return text_response(request, "Got it!")


class NotFoundApi(APIView):
    """Any unknown path: authenticated and permission-checked like a real endpoint first (an
    anonymous caller gets 401, as behind the reference's filters), then 404. Under `/mgmt/`
    it is a management operation of no service, as the reference's management filter sees
    it: only operators and whitelisted systems reach the 404."""

    schema = None  # not an operation: kept out of the OpenAPI document

    @property
    def service_operation(self) -> ServiceOperation | None:
        return UNKNOWN_MANAGEMENT_OPERATION if "/mgmt/" in self.request.path else None

    def _not_found(self, request: Request, *args: object, **kwargs: object) -> HttpResponse:
        raise DataNotFound(_no_such_endpoint(request))

    get = post = put = patch = delete = head = options = _not_found


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler404: Http404 raised outside the API views answers with the envelope too."""
    return NotFoundApi.as_view()(request)


def no_such_endpoint(request: HttpRequest) -> HttpResponse:
    """The 404 of an unknown path at once, without asking who calls: for a path that is there
    only when a feature is on (`/metrics`), so that off it reads as absent, not as a login."""
    return error_response(request, 404, DataNotFound.exception_type, _no_such_endpoint(request))


def _no_such_endpoint(request: HttpRequest) -> str:
    return f"No such endpoint: {request.method} {request.path}"
