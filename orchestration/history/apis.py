"""History management API (reference-simple §6.12): the query of orchestration jobs."""
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.operations import operation
from api.request_data import validated
from api.schema import error_responses, null_body_is_absent
from conventions.pagination import parse_pagination
from orchestration.history.selectors import (
    SORTING,
    job_filters_parse,
    job_list,
)
from orchestration.history.serializers import JobListSerializer, JobQuerySerializer
from orchestration.openapi_examples import HISTORY_QUERY


class HistoryQueryApi(APIView):
    service_operation = operation("serviceOrchestrationHistoryManagement", "query")

    @extend_schema(operation_id="historyQuery", tags=["History management"],
                   request=JobQuerySerializer, examples=[HISTORY_QUERY],
                   description="Orchestration jobs (pulls and pushes) matching every filter "
                   "given, paged.",
                   responses={200: JobListSerializer, **error_responses(403, body=True)},
                   extensions=null_body_is_absent())
    def post(self, request: Request) -> Response:
        data = validated(JobQuerySerializer, request.data)
        page = parse_pagination(data.get("pagination"), **SORTING)
        filters = job_filters_parse(
            ids=data.get("ids"), statuses=data.get("statuses"), type=data.get("type"),
            requester_systems=data.get("requesterSystems"),
            target_systems=data.get("targetSystems"),
            service_definitions=data.get("serviceDefinitions"),
            subscription_ids=data.get("subscriptionIds"))
        entries, count = job_list(filters=filters, page=page)  # already in the wire shape
        return Response({"entries": entries, "count": count})
