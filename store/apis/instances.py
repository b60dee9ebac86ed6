"""Service instance catalog management API (SPEC §4), one view per operation."""
from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.fields import (
    RequirementListField,
    StrictCharField,
    optional_string_list,
    pagination_field,
)
from api.name_fields import INSTANCE_ID_LIST
from api.operations import operation
from api.request_data import query_list, validated
from api.schema import body_required, error_responses, null_body_is_absent
from conventions.exceptions import InvalidParameter
from conventions.instance_ids import instance_id
from conventions.pagination import parse_pagination
from store import openapi_examples as examples
from store.selectors.instances import (
    SORTING,
    instance_filters_parse,
    instance_list,
)
from store.serializers.instances import (
    InstanceCreateSerializer,
    InstanceUpdateSerializer,
    ServiceInstanceListSerializer,
    instance_drafts_from,
    instance_update_drafts_from,
)
from store.services.instances import (
    instance_create_many,
    instance_delete_many,
    instance_update_many,
)

TAG = ["Service instance catalog"]


def _list_response(instances, count: int, status: int = 200) -> Response:
    body = ServiceInstanceListSerializer({"entries": instances, "count": count}).data
    return Response(body, status=status)


class InstanceCreateApi(APIView):
    service_operation = operation("serviceOrchestrationServiceInstanceManagement", "create")

    @extend_schema(operation_id="serviceInstanceCreate", tags=TAG,
                   request=InstanceCreateSerializer, examples=[examples.INSTANCE_CREATE],
                   responses={201: ServiceInstanceListSerializer,
                              **error_responses(403, 423, body=True)},
                   extensions=body_required(),
                   description="Bulk create; an instance whose id exists replaces it.")
    def post(self, request: Request) -> Response:
        drafts = instance_drafts_from(validated(InstanceCreateSerializer, request.data))
        instances = instance_create_many(drafts=drafts, limit=settings.MAX_BULK_SIZE)
        return _list_response(instances, len(instances), status=201)


class InstanceUpdateApi(APIView):
    service_operation = operation("serviceOrchestrationServiceInstanceManagement", "update")

    @extend_schema(operation_id="serviceInstanceUpdate", tags=TAG,
                   request=InstanceUpdateSerializer, examples=[examples.INSTANCE_UPDATE],
                   responses={200: ServiceInstanceListSerializer,
                              **error_responses(403, 423, body=True)},
                   extensions=body_required(),
                   description="Replaces expiry (absent clears it), metadata and interfaces.")
    def put(self, request: Request) -> Response:
        drafts = instance_update_drafts_from(validated(InstanceUpdateSerializer, request.data))
        instances = instance_update_many(drafts=drafts, limit=settings.MAX_BULK_SIZE)
        return _list_response(instances, len(instances))


class InstanceQuerySerializer(serializers.Serializer):
    """The filters, named as `instance_filters_parse` names them."""

    pagination = pagination_field(**SORTING)
    instanceIds = optional_string_list(limit_setting="MAX_BULK_SIZE", source="instance_ids")
    providerNames = optional_string_list(source="provider_names")
    serviceDefinitionNames = optional_string_list(source="service_definition_names")
    versions = optional_string_list()
    alivesAt = StrictCharField(required=False, allow_null=True, source="alives_at")
    metadataRequirementsList = RequirementListField(
        required=False, allow_null=True, source="metadata_requirements_list",
        help_text="OR of requirement objects; each object is an AND of key-path conditions.")


class InstanceQueryApi(APIView):
    service_operation = operation("serviceOrchestrationServiceInstanceManagement", "query")

    @extend_schema(operation_id="serviceInstanceQuery", tags=TAG,
                   request=InstanceQuerySerializer, examples=[examples.INSTANCE_QUERY],
                   description="Instances matching every filter given (none: all), paged.",
                   responses={200: ServiceInstanceListSerializer,
                              **error_responses(403, body=True)},
                   extensions=null_body_is_absent())
    def post(self, request: Request) -> Response:
        data = validated(InstanceQuerySerializer, request.data)
        page = parse_pagination(data.pop("pagination", None), **SORTING)
        return _list_response(*instance_list(filters=instance_filters_parse(**data), page=page))


class InstanceRemoveApi(APIView):
    service_operation = operation("serviceOrchestrationServiceInstanceManagement", "remove")

    @extend_schema(operation_id="serviceInstanceRemove", tags=TAG, request=None,
                   parameters=[OpenApiParameter(
                       "ids", {"type": "array",
                               "items": {"type": "string", INSTANCE_ID_LIST: True}},
                       required=True, examples=[examples.INSTANCE_IDS],
                       description="Instance ids; repeat the parameter or separate them with "
                       "commas (blank pieces are dropped; at least one must remain).")],
                   responses={200: None, **error_responses(403, 423)},
                   description="Removes the instances with these ids; unknown ids are "
                   "ignored.")
    def delete(self, request: Request) -> Response:
        values = query_list(request, "ids")
        if not values:
            raise InvalidParameter("Instance id list is empty")
        instance_delete_many(instance_ids=[instance_id(value) for value in values])
        return Response(status=200)
