"""Push management (reference-simple §6.8–§6.11): subscriptions on behalf of any consumer,
triggered pushes, bulk removal and the query; and the consumer's own query (our extension).
docs/push-management.md."""
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
    extend_schema_serializer,
)
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.fields import bulk_list, optional_string_list, pagination_field
from api.operations import operation
from api.request_data import query_list, validated
from api.schema import (
    body_required,
    error_responses,
    null_body_is_absent,
    required_not_null,
)
from conventions.exceptions import InvalidParameter
from conventions.pagination import parse_pagination
from conventions.uuids import require_uuid_element
from subscriptions import openapi_examples as examples
from subscriptions.push_jobs import parse_trigger_request, push_trigger
from subscriptions.requests import parse_subscribe_list
from subscriptions.selectors import SORTING, subscription_list
from subscriptions.serializers import (
    OrchestrationSubscriptionListResponseSerializer,
    PushJobListSerializer,
    SubscribeSerializer,
)
from subscriptions.services.subscribing import subscriptions_delete, subscriptions_upsert

PUSH_MANAGEMENT = "serviceOrchestrationPushManagement"
TAG = ["Push management"]
IDS_PARAMETER = OpenApiParameter(
    "ids", OpenApiTypes.UUID, many=True, required=True, examples=[examples.SUBSCRIPTIONS],
    description="Subscription ids; repeat the parameter or separate them with commas. Ids with "
    "no subscription are ignored.")


# --- request bodies (used by these views only) ---------------------------------------------


@extend_schema_serializer(extensions=required_not_null("notifyInterface", "targetSystemName"))
class PushSubscriptionSerializer(SubscribeSerializer):
    """A subscription on behalf of a consumer: the same fields, `targetSystemName` required
    (any system)."""


@extend_schema_serializer(extensions=required_not_null("subscriptions"))
class PushSubscribeSerializer(serializers.Serializer):
    subscriptions = bulk_list(PushSubscriptionSerializer(allow_null=True),
                              help_text="Each with `targetSystemName` (any system).")


class SubscriptionQuerySerializer(serializers.Serializer):
    pagination = pagination_field(**SORTING)
    ownerSystems = optional_string_list()
    targetSystems = optional_string_list()
    serviceDefinitions = optional_string_list()


class PushTriggerSerializer(serializers.Serializer):
    targetSystems = optional_string_list(help_text="Push every subscription for these "
                                         "consumers (used when subscriptionIds is empty).")
    subscriptionIds = optional_string_list(limit_setting="MAX_BULK_SIZE",
                                           help_text="Push these subscriptions.")


# --- views -----------------------------------------------------------------------------------


def subscriptions_response(data: dict | None, *, involving: str | None = None) -> Response:
    """The answer of a subscription query body, restricted to the subscriptions `involving`
    a system when given."""
    data = validated(SubscriptionQuerySerializer, data)
    page = parse_pagination(data.get("pagination"), **SORTING)
    entries, count = subscription_list(
        owner_systems=data.get("ownerSystems"), target_systems=data.get("targetSystems"),
        service_definitions=data.get("serviceDefinitions"), involving=involving, page=page)
    return Response(OrchestrationSubscriptionListResponseSerializer(
        {"entries": entries, "count": count}).data)


class PushSubscribeApi(APIView):
    service_operation = operation(PUSH_MANAGEMENT, "subscribe")

    @extend_schema(operation_id="pushSubscribe", tags=TAG, request=PushSubscribeSerializer,
                   examples=[examples.PUSH_SUBSCRIBE],
                   description="Subscriptions on behalf of consumers (`targetSystemName`), "
                   "owned by the requester; an existing one is overwritten.",
                   responses={201: OrchestrationSubscriptionListResponseSerializer,
                              **error_responses(403, 423, body=True)},
                   extensions=body_required())
    def post(self, request: Request) -> Response:
        if request.data is None:
            raise InvalidParameter("Request payload is missing")
        items = validated(PushSubscribeSerializer, request.data).get("subscriptions")
        subscribes = parse_subscribe_list(items, requester=request.user.name)
        upserted = subscriptions_upsert(owner=request.user.name, subscribes=subscribes)
        entries = [subscription for subscription, _ in upserted]
        return Response(OrchestrationSubscriptionListResponseSerializer(
            {"entries": entries, "count": len(entries)}).data, status=201)


class PushTriggerApi(APIView):
    service_operation = operation(PUSH_MANAGEMENT, "trigger")

    @extend_schema(operation_id="pushTrigger", tags=TAG, request=PushTriggerSerializer,
                   examples=[examples.TRIGGER],
                   responses={201: PushJobListSerializer, **error_responses(403, 423, body=True)},
                   extensions=body_required(),
                   description="Give targetSystems or subscriptionIds (or both: then the ids "
                   "are used); both empty is a 400.")
    def post(self, request: Request) -> Response:
        data = None if request.data is None else validated(PushTriggerSerializer, request.data)
        jobs = push_trigger(requester=request.user.name, trigger=parse_trigger_request(data))
        return Response(PushJobListSerializer({"jobs": jobs}).data, status=201)


def _unsubscribe(request: Request, values: list[str]) -> Response:
    if not values:
        raise InvalidParameter("Request payload is missing")
    subscriptions_delete(requester=request.user.name, is_operator=request.user.is_operator,
                         ids=[require_uuid_element(value) for value in values])
    return Response(status=200)


class PushUnsubscribeApi(APIView):
    service_operation = operation(PUSH_MANAGEMENT, "unsubscribe")

    @extend_schema(operation_id="pushUnsubscribe", tags=TAG, request=None,
                   parameters=[IDS_PARAMETER],
                   responses={200: None, **error_responses(403, 423)},
                   description="Removes the subscriptions with these ids, all or none: another "
                   "system's subscription is a 403 unless the requester is an operator.")
    def delete(self, request: Request) -> Response:
        return _unsubscribe(request, query_list(request, "ids"))


class PushUnsubscribeOneApi(APIView):
    """`DELETE .../unsubscribe/{id}`: the path the reference registers in the ServiceRegistry
    (its controller only serves `?ids=`)."""

    service_operation = operation(PUSH_MANAGEMENT, "unsubscribe")

    @extend_schema(operation_id="pushUnsubscribeOne", tags=TAG, request=None,
                   parameters=[OpenApiParameter("subscription_id", OpenApiTypes.UUID,
                                                OpenApiParameter.PATH,
                                                examples=[examples.SUBSCRIPTION])],
                   responses={200: None, **error_responses(403, 423)})
    def delete(self, request: Request, subscription_id: str) -> Response:
        return _unsubscribe(request, [subscription_id])


class PushQueryApi(APIView):
    service_operation = operation(PUSH_MANAGEMENT, "query")

    @extend_schema(operation_id="pushQuery", tags=TAG, request=SubscriptionQuerySerializer,
                   examples=[examples.QUERY],
                   description="Every subscription matching the filters given, paged.",
                   responses={200: OrchestrationSubscriptionListResponseSerializer,
                              **error_responses(403, body=True)},
                   extensions=null_body_is_absent())
    def post(self, request: Request) -> Response:
        return subscriptions_response(request.data)


class SubscriptionQueryApi(APIView):
    """The consumer's own subscriptions: those it owns or is the target of (our extension)."""

    @extend_schema(operation_id="subscriptionQuery", tags=["Orchestration"],
                   request=SubscriptionQuerySerializer, examples=[examples.QUERY],
                   responses={200: OrchestrationSubscriptionListResponseSerializer,
                              **error_responses(body=True)},
                   extensions=null_body_is_absent())
    def post(self, request: Request) -> Response:
        return subscriptions_response(request.data, involving=request.user.name)
