"""Reading the orchestration history: the management history query (reference-simple §6.12,
docs/history.md)."""
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import QuerySet

from conventions import names
from conventions.exceptions import InvalidParameter
from conventions.pagination import PageRequest, order
from conventions.uuids import require_uuid_element
from orchestration.history.job_counts import counted_by_triggers, job_count
from orchestration.history.job_rows import job_rows
from orchestration.history.job_writer import job_writer_flush
from orchestration.models import OrchestrationJob

# API sort field → column. Default: newest first (createdAt DESC), ties by id in the same
# direction, so that pages are stable (the reference's default, `id` DESC, orders by a random
# UUID: docs/decisions.md).
SORT_COLUMNS = {
    "id": "id",
    "createdAt": "created_at",
    "startedAt": "started_at",
    "finishedAt": "finished_at",
}
SORTING = {"sort_fields": list(SORT_COLUMNS), "default_sort_field": "createdAt",
           "default_direction": "DESC"}
FLUSH_WAIT_SECONDS = 2.0  # the longest a query waits for this process's unwritten pull jobs


@dataclass(frozen=True)
class JobFilters:
    ids: tuple[uuid.UUID, ...] = ()
    statuses: tuple[str, ...] = ()
    type: str | None = None
    requesters: tuple[str, ...] = ()
    targets: tuple[str, ...] = ()
    service_definitions: tuple[str, ...] = ()
    subscription_ids: tuple[uuid.UUID, ...] = ()


def _enum_value(value: str, allowed: Sequence[str], what: str) -> str:
    """Trimmed and upper-cased (`"done \\n"` is DONE); the message quotes the value as sent."""
    normalized = names.java_trim(value).upper()
    if normalized not in allowed:
        raise InvalidParameter(f"Invalid {what}: {value}")
    return normalized


def job_filters_parse(
    *,
    ids: Sequence[str | None] | None = None,
    statuses: Sequence[str | None] | None = None,
    type: str | None = None,
    requester_systems: Sequence[str | None] | None = None,
    target_systems: Sequence[str | None] | None = None,
    service_definitions: Sequence[str | None] | None = None,
    subscription_ids: Sequence[str | None] | None = None,
) -> JobFilters:
    """Validate and normalize the filters in the reference's order; `subscriptionIds` are
    checked like `ids` (the reference checks `ids` twice instead: docs/history.md)."""
    parsed_ids = tuple(require_uuid_element(value) for value in ids or ())
    statuses = names.without_blanks(statuses, "Status list contains empty element")
    parsed_statuses = tuple(_enum_value(value, OrchestrationJob.Status.values, "status")
                            for value in statuses)
    parsed_type = (None if type is None
                   else _enum_value(type, OrchestrationJob.Type.values, "type"))
    requester_systems = names.without_blanks(
        requester_systems, "Requester system list contains empty element")
    target_systems = names.without_blanks(
        target_systems, "Target system list contains empty element")
    service_definitions = names.without_blanks(
        service_definitions, "Service definition list contains empty element")
    parsed_subscription_ids = tuple(require_uuid_element(value)
                                    for value in subscription_ids or ())
    return JobFilters(
        ids=parsed_ids,
        statuses=parsed_statuses,
        type=parsed_type,
        requesters=tuple(names.system_name(value) for value in requester_systems),
        targets=tuple(names.system_name(value) for value in target_systems),
        service_definitions=tuple(names.service_definition(v) for v in service_definitions),
        subscription_ids=parsed_subscription_ids,
    )


def _filtered(filters: JobFilters) -> QuerySet[OrchestrationJob]:
    """The AND of the given filters, in SQL. A job without subscription never matches a
    subscription filter (`IN` never matches NULL)."""
    jobs = OrchestrationJob.objects.all()
    for column, values in (("id", filters.ids), ("status", filters.statuses),
                           ("requester", filters.requesters), ("target", filters.targets),
                           ("service_definition", filters.service_definitions),
                           ("subscription_id", filters.subscription_ids)):
        if values:
            jobs = jobs.filter(**{f"{column}__in": sorted(set(values))})
    if filters.type is not None:
        jobs = jobs.filter(type=filters.type)
    return jobs


def _count(jobs: QuerySet[OrchestrationJob], filters: JobFilters) -> int:
    """Filters on status and type alone (or none) can match most of the table: on PostgreSQL
    they are counted from the per-type-and-status delta rows (orchestration.history.job_counts);
    the other filters are selective and counted through their index."""
    coarse = not (filters.ids or filters.requesters or filters.targets
                  or filters.service_definitions or filters.subscription_ids)
    if coarse and counted_by_triggers():
        return job_count(statuses=filters.statuses, type=filters.type)
    return jobs.count()


def job_list(*, filters: JobFilters, page: PageRequest) -> tuple[list[dict], int]:
    """One page of matching jobs in their wire shape (job_rows) and the total number of
    matches, not counted when the page itself shows it (a short page, or an empty first one).
    This process's unwritten pull jobs are written first (job_writer), so that a pull is in
    the history of the process that answered it as soon as it answered."""
    job_writer_flush(timeout=FLUSH_WAIT_SECONDS)
    jobs = _filtered(filters)
    ordered = order(jobs, page, columns=SORT_COLUMNS, tie_breaker="id")
    rows = job_rows(ordered[page.offset:page.offset + page.size])
    if len(rows) < page.size and (rows or page.offset == 0):
        return rows, page.offset + len(rows)
    return rows, _count(jobs, filters)
