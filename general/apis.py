"""General management API (reference-simple §6.13, §6.14), one view per operation."""
from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.fields import PYTHON_BLANKS
from api.operations import operation
from api.request_data import validated
from api.schema import error_responses, null_body_is_absent
from conventions.exceptions import InvalidParameter
from conventions.pagination import parse_pagination
from general import openapi_examples as examples
from general.config_keys import public_config
from general.selectors import SORTING, log_filters_parse, log_list
from general.serializers import ConfigMapSerializer, LogListSerializer, LogQuerySerializer

TAG = ["General management"]
NO_KEYS = "The list of the requested configuration keys is null or empty"
BLANK_KEY = "The list of the requested configuration keys contains a null or empty value"
_KEY = f"[^,\\x00]*[^,\\x00{PYTHON_BLANKS}][^,\\x00]*"
KEYS_PARAMETER = OpenApiParameter(
    "keys", {"type": "array", "minItems": 1, "maxItems": settings.MAX_LIST_LENGTH,
             "items": {"type": "string", "pattern": f"^{_KEY}(?:,{_KEY})*$"}},
    required=True, examples=[examples.CONFIG_KEYS],
    description="Configuration keys; repeat the parameter or separate them "
    "with commas (surrounding blanks ignored; a blank key is a 400). At most MAX_LIST_LENGTH "
    "values. Only public keys are answered; others are left out.")


class LogsApi(APIView):
    service_operation = operation("generalManagement", "get-log")

    @extend_schema(operation_id="generalManagementLogs", tags=TAG, request=LogQuerySerializer,
                   examples=[examples.LOGS],
                   description="This service's log records matching every filter given, "
                   "newest first unless the paging says otherwise.",
                   responses={200: LogListSerializer, **error_responses(403, body=True)},
                   extensions=null_body_is_absent())
    def post(self, request: Request) -> Response:
        data = validated(LogQuerySerializer, request.data)
        page = parse_pagination(data.get("pagination"), **SORTING)
        filters = log_filters_parse(start=data.get("from"), end=data.get("to"),
                                    severity=data.get("severity"), logger=data.get("logger"))
        entries, count = log_list(filters=filters, page=page)
        return Response(LogListSerializer({"entries": entries, "count": count}).data)


def requested_keys(request: Request) -> list[str]:
    """The `keys` parameter: trimmed, in order, without repetitions."""
    values = request.query_params.getlist("keys")
    if not values or values == [""]:
        raise InvalidParameter(NO_KEYS)
    if len(values) > settings.MAX_LIST_LENGTH:
        raise InvalidParameter(f"keys: Ensure this parameter has no more than "
                               f"{settings.MAX_LIST_LENGTH} values.")
    keys = [piece.strip() for value in values for piece in value.split(",")]
    if not all(keys):
        raise InvalidParameter(BLANK_KEY)
    return list(dict.fromkeys(keys))


class GetConfigApi(APIView):
    service_operation = operation("generalManagement", "get-config")

    @extend_schema(operation_id="generalManagementGetConfig", tags=TAG, request=None,
                   parameters=[KEYS_PARAMETER],
                   responses={200: ConfigMapSerializer, **error_responses(403)},
                   description="The values of public configuration keys.")
    def get(self, request: Request) -> Response:
        return Response({"map": public_config(requested_keys(request))})
