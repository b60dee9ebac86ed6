"""Flexible store management API (issue 33, docs/flexible-store.md): bulk create, query, bulk
remove; served when ORCHESTRATION_STRATEGY is flexible-store."""
from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.fields import (
    StrictCharField,
    optional_positive_integer,
    optional_string_list,
    pagination_field,
)
from api.operations import FLEXIBLE_STORE_MANAGEMENT, operation
from api.request_data import query_list, validated
from api.schema import body_required, error_responses, null_body_is_absent
from conventions.exceptions import InvalidParameter
from conventions.pagination import parse_pagination
from conventions.uuids import require_uuid
from store import openapi_examples as examples
from store.selectors.flexible_rules import (
    SORTING,
    flexible_rule_filters_parse,
    flexible_rule_list,
)
from store.serializers.flexible_rules import (
    FlexibleRuleCreateSerializer,
    FlexibleRuleListSerializer,
    flexible_rule_drafts_from,
)
from store.services.flexible_rules import flexible_rule_create_many, flexible_rule_delete_many

TAG = ["Flexible store management"]


def _list_response(rules, count: int, status: int = 200) -> Response:
    return Response(FlexibleRuleListSerializer({"entries": rules, "count": count}).data,
                    status=status)


class FlexibleRuleQuerySerializer(serializers.Serializer):
    """The filters, named as `flexible_rule_filters_parse` names them."""

    pagination = pagination_field(**SORTING)
    ids = optional_string_list(limit_setting="MAX_BULK_SIZE")
    consumerNames = optional_string_list(source="consumer_names")
    providerNames = optional_string_list(source="provider_names")
    serviceDefinitions = optional_string_list(source="service_definitions")
    minPriority = optional_positive_integer(source="min_priority")
    maxPriority = optional_positive_integer(source="max_priority")
    createdBy = StrictCharField(required=False, allow_null=True, source="created_by")


class FlexibleRuleQueryApi(APIView):
    service_operation = operation(FLEXIBLE_STORE_MANAGEMENT, "query")

    @extend_schema(operation_id="flexibleStoreQuery", tags=TAG,
                   request=FlexibleRuleQuerySerializer, examples=[examples.FLEXIBLE_QUERY],
                   description="Flexible rules matching every filter given (none: all), paged. "
                   "A consumer or provider name filter lists the rules naming that system.",
                   responses={200: FlexibleRuleListSerializer, **error_responses(403, body=True)},
                   extensions=null_body_is_absent())
    def post(self, request: Request) -> Response:
        data = validated(FlexibleRuleQuerySerializer, request.data)
        page = parse_pagination(data.pop("pagination", None), **SORTING)
        filters = flexible_rule_filters_parse(**data)
        return _list_response(*flexible_rule_list(filters=filters, page=page))


class FlexibleRuleCreateApi(APIView):
    service_operation = operation(FLEXIBLE_STORE_MANAGEMENT, "create")

    @extend_schema(operation_id="flexibleStoreCreate", tags=TAG,
                   request=FlexibleRuleCreateSerializer, examples=[examples.FLEXIBLE_CREATE],
                   description="Bulk create, all or nothing; the same rule twice (in the "
                   "request or stored) is a 400.",
                   responses={201: FlexibleRuleListSerializer,
                              **error_responses(403, 423, body=True)},
                   extensions=body_required())
    def post(self, request: Request) -> Response:
        drafts = flexible_rule_drafts_from(validated(FlexibleRuleCreateSerializer, request.data))
        rules = flexible_rule_create_many(drafts=drafts, requester=request.user.name,
                                          limit=settings.MAX_BULK_SIZE)
        return _list_response(rules, len(rules), status=201)


class FlexibleRuleRemoveApi(APIView):
    service_operation = operation(FLEXIBLE_STORE_MANAGEMENT, "remove")

    @extend_schema(operation_id="flexibleStoreRemove", tags=TAG, request=None,
                   parameters=[OpenApiParameter(
                       "ids", OpenApiTypes.UUID, many=True, required=True,
                       examples=[examples.FLEXIBLE_RULE_IDS],
                       description="Rule ids; repeat the parameter or separate them with "
                       "commas. Ids with no rule are ignored.")],
                   responses={200: None, **error_responses(403, 423)},
                   description="Removes the flexible rules with these ids.")
    def delete(self, request: Request) -> Response:
        values = query_list(request, "ids")
        if not values:
            raise InvalidParameter("Rule ids are missing")
        flexible_rule_delete_many(ids=[require_uuid(value) for value in values])
        return Response(status=200)
