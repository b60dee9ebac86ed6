"""Rule store management API (SPEC §3), one view per operation."""
from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.fields import (
    BoundedDictField,
    StrictCharField,
    StrictIntegerField,
    optional_positive_integer,
    optional_string_list,
    pagination_field,
)
from api.operations import operation
from api.request_data import query_list, validated
from api.schema import body_required, error_responses, null_body_is_absent
from conventions.exceptions import InvalidParameter
from conventions.pagination import parse_pagination
from conventions.uuids import require_uuid
from store import openapi_examples as examples
from store.models import MAX_PRIORITY
from store.selectors.rules import (
    SORTING,
    rule_filters_parse,
    rule_list,
)
from store.serializers.rules import (
    RuleCreateSerializer,
    RuleListSerializer,
    rule_drafts_from,
)
from store.services.rules import (
    rule_create_many,
    rule_delete_many,
    rule_priorities_modify,
)

SIMPLE_STORE_MANAGEMENT = "serviceOrchestrationSimpleStoreManagement"
TAG = ["Rule store management"]
PRIORITY_MAP_SCHEMA = {
    "type": "object",
    "description": "Rule id (UUID, any case, surrounding blanks ignored) → new priority. An id "
    "with no rule is a 400 (`Not existing UUID: <id>`); the new priorities apply together, so "
    "two rules can swap theirs. At most MAX_BULK_SIZE entries.",
    "additionalProperties": {"type": "integer", "minimum": 1, "maximum": MAX_PRIORITY},
    "maxProperties": settings.MAX_BULK_SIZE,
}
REMOVE_PARAMETERS = [OpenApiParameter(
    "uuids", OpenApiTypes.UUID, many=True, required=True, examples=[examples.RULE_IDS],
    description="Rule ids; repeat the parameter or separate them with commas (blanks around "
    "an id are ignored). Ids with no rule are ignored.")]


def _rule_list_response(rules, count: int, status: int = 200) -> Response:
    return Response(RuleListSerializer({"entries": rules, "count": count}).data, status=status)


class RuleQuerySerializer(serializers.Serializer):
    """The filters, named as `rule_filters_parse` names them."""

    pagination = pagination_field(**SORTING)
    ids = optional_string_list(limit_setting="MAX_BULK_SIZE")
    consumerNames = optional_string_list(source="consumer_names")
    serviceDefinitions = optional_string_list(source="service_definitions")
    serviceInstanceIds = optional_string_list(limit_setting="MAX_BULK_SIZE",
                                              source="service_instance_ids")
    minPriority = optional_positive_integer(source="min_priority")
    maxPriority = optional_positive_integer(source="max_priority")
    createdBy = StrictCharField(required=False, allow_null=True, source="created_by")


class RuleQueryApi(APIView):
    """`POST .../query`; `DELETE .../query` removes, as the interface document's example does
    (docs/decisions.md)."""

    service_operation = {"POST": operation(SIMPLE_STORE_MANAGEMENT, "query"),
                         "DELETE": operation(SIMPLE_STORE_MANAGEMENT, "remove")}

    @extend_schema(operation_id="simpleStoreQuery", tags=TAG, request=RuleQuerySerializer,
                   examples=[examples.RULE_QUERY],
                   description="Rules matching every filter given (none: all rules), paged.",
                   responses={200: RuleListSerializer, **error_responses(403, body=True)},
                   extensions=null_body_is_absent())
    def post(self, request: Request) -> Response:
        data = validated(RuleQuerySerializer, request.data)
        page = parse_pagination(data.pop("pagination", None), **SORTING)
        return _rule_list_response(*rule_list(filters=rule_filters_parse(**data), page=page))

    @extend_schema(operation_id="simpleStoreRemoveAtQuery", tags=TAG, request=None,
                   parameters=REMOVE_PARAMETERS, responses={200: None, **error_responses(403, 423)},
                   description="Same as DELETE .../remove.")
    def delete(self, request: Request) -> Response:
        return _remove(request)


class RuleCreateApi(APIView):
    service_operation = operation(SIMPLE_STORE_MANAGEMENT, "create")

    @extend_schema(operation_id="simpleStoreCreate", tags=TAG, request=RuleCreateSerializer,
                   examples=[examples.RULE_CREATE],
                   description="Bulk create (`entries`, or `candidates` as the Java reference "
                   "names them, not both); a rule that already exists is a 400.",
                   responses={201: RuleListSerializer, **error_responses(403, 423, body=True)},
                   extensions=body_required())
    def post(self, request: Request) -> Response:
        drafts = rule_drafts_from(validated(RuleCreateSerializer, request.data))
        rules = rule_create_many(drafts=drafts, requester=request.user.name,
                                 limit=settings.MAX_BULK_SIZE)
        return _rule_list_response(rules, len(rules), status=201)


class RuleModifyPrioritiesApi(APIView):
    service_operation = operation(SIMPLE_STORE_MANAGEMENT, "modify-priorities")

    @extend_schema(operation_id="simpleStoreModifyPriorities", tags=TAG,
                   request={"application/json": PRIORITY_MAP_SCHEMA},
                   examples=[examples.MODIFY_PRIORITIES],
                   responses={200: RuleListSerializer, **error_responses(403, 423, body=True)},
                   description="Sets new priorities of existing rules, all together; no body "
                   "changes nothing.")
    def put(self, request: Request) -> Response:
        # One rule id per entry, so bounded like a bulk.
        priorities = BoundedDictField(
            child=StrictIntegerField(allow_null=True), limit_setting="MAX_BULK_SIZE",
            error_messages={"max_entries": "Priority map has more than {max_length} entries"},
        ).run_validation(request.data)
        rules = rule_priorities_modify(priorities=priorities, requester=request.user.name)
        return _rule_list_response(rules, len(rules))

    @extend_schema(operation_id="simpleStoreModifyPrioritiesPost", tags=TAG,
                   request={"application/json": PRIORITY_MAP_SCHEMA},
                   examples=[examples.MODIFY_PRIORITIES],
                   responses={200: RuleListSerializer, **error_responses(403, 423, body=True)},
                   description="Same as PUT; the interface document shows POST.")
    def post(self, request: Request) -> Response:
        return self.put(request)


def _remove(request: Request) -> Response:
    values = query_list(request, "uuids")
    if not values:
        raise InvalidParameter("UUIDs are missing")
    rule_delete_many(ids=[require_uuid(value) for value in values])
    return Response(status=200)


class RuleRemoveApi(APIView):

    service_operation = operation(SIMPLE_STORE_MANAGEMENT, "remove")

    @extend_schema(operation_id="simpleStoreRemove", tags=TAG, request=None,
                   parameters=REMOVE_PARAMETERS, responses={200: None, **error_responses(403, 423)},
                   description="Removes the rules with these ids.")
    def delete(self, request: Request) -> Response:
        return _remove(request)


class RuleRemoveAtStoreApi(APIView):
    """`DELETE .../simple-store?uuids=...`, the path the interface document names."""

    service_operation = operation(SIMPLE_STORE_MANAGEMENT, "remove")

    @extend_schema(operation_id="simpleStoreRemoveAtStore", tags=TAG, request=None,
                   parameters=REMOVE_PARAMETERS, responses={200: None, **error_responses(403, 423)},
                   description="Same as DELETE .../remove.")
    def delete(self, request: Request) -> Response:
        return _remove(request)
