"""Lock management API (issue 33): `serviceOrchestrationLockManagement` as the Java
DynamicServiceOrchestration serves it, over the reservations pull makes, in both strategies."""
from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.name_fields import INSTANCE_ID_LIST, accepted_name_pattern
from api.operations import LOCK_MANAGEMENT, operation
from api.request_data import query_list, validated
from api.schema import body_required, error_responses, null_body_is_absent
from conventions.pagination import parse_pagination
from orchestration import openapi_examples as examples
from orchestration.locks.selectors import SORTING, lock_filters_parse, lock_list
from orchestration.locks.serializers import (
    LockCreateSerializer,
    LockListSerializer,
    LockQuerySerializer,
    lock_drafts_from,
)
from orchestration.locks.services import locks_create, locks_remove

TAG = ["Lock management"]


def _list_response(locks, count: int, status: int = 200) -> Response:
    return Response(LockListSerializer({"entries": locks, "count": count}).data, status=status)


class LockCreateApi(APIView):
    service_operation = operation(LOCK_MANAGEMENT, "create")

    @extend_schema(operation_id="lockCreate", tags=TAG, request=LockCreateSerializer,
                   examples=[examples.LOCK_CREATE],
                   description="Locks instances for owners until a time, all or nothing: "
                   "nobody else is offered them meanwhile. An instance with a live lock or "
                   "reservation is a 400.",
                   responses={201: LockListSerializer, **error_responses(403, 423, body=True)},
                   extensions=body_required())
    def post(self, request: Request) -> Response:
        drafts = lock_drafts_from(validated(LockCreateSerializer, request.data))
        locks = locks_create(drafts=drafts, limit=settings.MAX_BULK_SIZE)
        return _list_response(locks, len(locks), status=201)


class LockQueryApi(APIView):
    service_operation = operation(LOCK_MANAGEMENT, "query")

    @extend_schema(operation_id="lockQuery", tags=TAG, request=LockQuerySerializer,
                   examples=[examples.LOCK_QUERY],
                   description="Locks and reservations matching every filter given, paged "
                   "(default: id descending).",
                   responses={200: LockListSerializer, **error_responses(403, body=True)},
                   extensions=null_body_is_absent())
    def post(self, request: Request) -> Response:
        data = validated(LockQuerySerializer, request.data)
        page = parse_pagination(data.pop("pagination", None), **SORTING)
        return _list_response(*lock_list(filters=lock_filters_parse(**data), page=page))


class LockRemoveApi(APIView):
    service_operation = operation(LOCK_MANAGEMENT, "remove")

    @extend_schema(operation_id="lockRemove", tags=TAG, request=None,
                   parameters=[
                       OpenApiParameter("owner", {"type": "string", "pattern":
                                                  accepted_name_pattern("system",
                                                                        blank_allowed=False)},
                                        OpenApiParameter.PATH, examples=[examples.LOCK_OWNER]),
                       OpenApiParameter("instanceIds", {
                           "type": "array", "items": {"type": "string", INSTANCE_ID_LIST: True}},
                           required=True, examples=[examples.LOCK_INSTANCES],
                           description="Instance ids, repeated or comma-separated (blank "
                           "pieces are dropped; at least one must remain).")],
                   responses={200: None, **error_responses(403, 423)},
                   description="Removes the owner's locks of these instances; other owners' "
                   "are kept, unknown instances ignored.")
    def delete(self, request: Request, owner: str) -> Response:
        locks_remove(owner=owner, instance_ids=query_list(request, "instanceIds"))
        return Response(status=200)
