"""Jobs in their wire shape (`OrchestrationJobDTO`), fast enough for a page of a thousand.

Reading a thousand jobs as model instances and running them through the DRF serializer
costs about 70 ms on our machines, almost all of it in Python (loading three timestamps per
row, then field by field serialization); the query itself takes a few milliseconds
(docs/performance.md, "History query"). On PostgreSQL each row is therefore built as a JSON
object by the database, with the timestamps already in the wire format, and decoded here in
one C call per row. Other databases take the serializer. Both produce the same entries
(tests/orchestration/test_history_query_api.py compares them).
"""
import json

from django.db import connection
from django.db.models import QuerySet
from django.db.models.expressions import RawSQL

from orchestration.history.job_serializers import OrchestrationJobSerializer
from orchestration.models import OrchestrationJob


def _instant(column: str) -> str:
    """`2025-11-08T12:00:00Z`, or with six fraction digits when there is a fraction: what
    the serializer's DateTimeField writes (ISO 8601, UTC, `Z`)."""
    utc = f"({column} AT TIME ZONE 'UTC')"
    return (f"to_char({utc}, 'YYYY-MM-DD\"T\"HH24:MI:SS')"
            f" || CASE WHEN date_trunc('second', {column}) = {column} THEN ''"
            f" ELSE to_char({utc}, '.US') END || 'Z'")


# Wire name → column expression; the names are those of OrchestrationJobSerializer.
_WIRE = {
    "id": "id",
    "status": "status",
    "type": "type",
    "requesterSystem": "requester",
    "targetSystem": "target",
    "serviceDefinition": "service_definition",
    "subscriptionId": "subscription_id",
    "message": "message",
    "createdAt": _instant("created_at"),
    "startedAt": _instant("started_at"),
    "finishedAt": _instant("finished_at"),
}
_JSON_ROW = ("json_build_object(" + ", ".join(f"'{name}', {expression}"
                                              for name, expression in _WIRE.items())
             + ")::text")


def job_rows(page: QuerySet[OrchestrationJob]) -> list[dict]:
    """The jobs of `page` (filtered, ordered and sliced) as wire dictionaries."""
    if connection.vendor != "postgresql":
        return OrchestrationJobSerializer(list(page), many=True).data
    # PostgreSQL computes the select list before OFFSET skips rows: the page's ids are
    # chosen first, so that only the rows shown are built (a deep page skips thousands).
    shown = OrchestrationJob.objects.filter(pk__in=page.values("pk")).order_by(
        *page.query.order_by)
    texts = shown.annotate(wire=RawSQL(_JSON_ROW, ())).values_list("wire", flat=True)
    return [json.loads(text) for text in texts]
