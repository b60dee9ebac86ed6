"""Subscribe and unsubscribe (SPEC §5)."""
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.operations import operation
from api.plain_text import text_response
from api.request_data import validated
from api.schema import body_required, error_responses
from conventions.exceptions import InvalidParameter
from conventions.uuids import parse_uuid
from subscriptions import openapi_examples as examples
from subscriptions.requests import parse_subscribe_request
from subscriptions.serializers import SubscribeSerializer, checked_subscribe_request
from subscriptions.services.subscribing import subscription_delete, subscription_upsert

TAG = ["Orchestration"]


def _trigger(request: Request) -> bool:
    value = request.query_params.get("trigger")
    if value is None or value.strip().lower() == "false":
        return False
    if value.strip().lower() == "true":
        return True
    raise InvalidParameter(f"Invalid trigger value: {value} (true or false expected)")


class SubscribeApi(APIView):
    service_operation = operation("serviceOrchestration", "subscribe")
    @extend_schema(
        operation_id="subscribe", tags=TAG, request=SubscribeSerializer,
        examples=[examples.SUBSCRIBE],
        description="Subscribes the requester to its orchestration result for a service: "
        "the result is pushed to `notifyInterface` whenever it changes (and at once with "
        "`trigger=true`). Subscribing again for the same service definition overwrites the "
        "subscription and keeps its id.",
        parameters=[OpenApiParameter("trigger", bool, required=False,
                                     description="Also orchestrate and push now.")],
        responses={
            (201, "text/plain"): OpenApiResponse(OpenApiTypes.UUID, description="Created"),
            (200, "text/plain"): OpenApiResponse(OpenApiTypes.UUID,
                                                 description="Overwritten (same id)"),
            # 503: `trigger` orchestrates now, which may need the ServiceRegistry.
            **error_responses(403, 423, 503, body=True)},
        extensions=body_required())
    def post(self, request: Request) -> HttpResponse:
        trigger = _trigger(request)
        body = validated(SubscribeSerializer, request.data, checked_subscribe_request)
        subscribe = parse_subscribe_request(body, requester=request.user.name)
        subscription_id, created = subscription_upsert(requester=request.user.name,
                                                       subscribe=subscribe, trigger=trigger)
        return text_response(request, str(subscription_id), status=201 if created else 200)


class UnsubscribeApi(APIView):
    service_operation = operation("serviceOrchestration", "unsubscribe")
    @extend_schema(operation_id="unsubscribe", tags=TAG, request=None,
                   parameters=[OpenApiParameter("subscription_id", OpenApiTypes.UUID,
                                                OpenApiParameter.PATH,
                                                examples=[examples.SUBSCRIPTION])],
                   description="Removes one of the requester's subscriptions.",
                   responses={200: OpenApiResponse(description="Removed"),
                              204: OpenApiResponse(description="No such subscription"),
                              **error_responses(403, 423)})
    def delete(self, request: Request, subscription_id: str) -> Response:
        parsed = parse_uuid(subscription_id)
        if parsed is None:
            raise InvalidParameter("Invalid subscription id")
        removed = subscription_delete(requester=request.user.name, subscription_id=parsed)
        return Response(status=200 if removed else 204)
