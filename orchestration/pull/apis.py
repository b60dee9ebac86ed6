"""Orchestration API (SPEC §5): pull. Subscriptions live in the subscriptions app."""
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.operations import operation
from api.request_data import validated
from api.schema import error_responses, null_body_is_absent
from observability.metrics import pull_answered, pull_refused
from orchestration import openapi_examples as examples
from orchestration.pull.normalization import parse_orchestration_request, parsed_request
from orchestration.pull.serializers import (
    OrchestrationRequestSerializer,
    OrchestrationResponseSerializer,
    checked_orchestration_request,
    orchestration_response_data,
)
from orchestration.pull.services import orchestration_pull
from orchestration.pull.types import OrchestrationRequest


def request_from_body(data) -> OrchestrationRequest:
    """Type-check and parse an orchestration request body (absent body = empty request): the
    usual well-typed body by the check compiled from the serializer, anything else by the
    serializer, which answers with its messages."""
    return parse_orchestration_request(validated(
        OrchestrationRequestSerializer, data, checked_orchestration_request))


class OrchestrationPullApi(APIView):
    service_operation = operation("serviceOrchestration", "pull")

    @extend_schema(operation_id="pull", tags=["Orchestration"],
                   request=OrchestrationRequestSerializer,
                   examples=[examples.PULL, examples.JAVA_CLIENT],
                   description="Orchestration by the simple store: the providers of the "
                   "requester's rules whose instances meet the service requirement, best "
                   "priority first. Flags, exclusivity and QoS are described with their fields; "
                   "what was ignored is listed in `warnings`.",
                   responses={200: OrchestrationResponseSerializer,
                              **error_responses(503, body=True)},
                   extensions=null_body_is_absent())
    def post(self, request: Request) -> Response:
        result = orchestration_pull(requester=request.user.name, request=parsed_request(
            request, lambda request: request_from_body(request.data)))
        pull_answered(result.results)
        return Response(orchestration_response_data(result))

    def handle_exception(self, exc: Exception) -> Response:
        """Every error answer of pull is counted too (docs/metrics.md)."""
        response = super().handle_exception(exc)
        pull_refused(response.status_code)
        return response
