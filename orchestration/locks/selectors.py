"""Reading orchestration locks: the lock management query (issue 33)."""
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import QuerySet

from conventions import names
from conventions.exceptions import InvalidParameter
from conventions.instance_ids import instance_id
from conventions.pagination import DESC, PageRequest, filter_given, paginate
from conventions.timestamps import parse_utc
from orchestration.models import OrchestrationLock

# API sort field → column; the default order is id descending, as the Java system's.
SORT_COLUMNS = {"id": "id", "owner": "owner", "serviceInstanceId": "service_instance_id",
                "expiresAt": "expires_at"}
SORTING = {"sort_fields": list(SORT_COLUMNS), "default_sort_field": "id",
           "default_direction": DESC}


@dataclass(frozen=True)
class LockFilters:
    ids: tuple[int, ...] = ()
    service_instance_ids: tuple[str, ...] = ()
    owners: tuple[str, ...] = ()
    expires_before: dt.datetime | None = None
    expires_after: dt.datetime | None = None
    by_job: bool = False  # orchestration job ids asked for: locks made by pull record none


def _instant(value: str | None, what: str) -> dt.datetime | None:
    """An instant filter; blank (by Python's strip, as instants are read) is not given."""
    if value is None or not value.strip():
        return None
    parsed = parse_utc(value)
    if parsed is None:
        raise InvalidParameter(f"Invalid {what}: {value}")
    return parsed


def lock_filters_parse(*, ids: Sequence[int] | None = None,
                       orchestration_job_ids: Sequence[str | None] | None = None,
                       service_instance_ids: Sequence[str | None] | None = None,
                       owners: Sequence[str | None] | None = None,
                       expires_before: str | None = None,
                       expires_after: str | None = None) -> LockFilters:
    job_ids = names.list_without_blanks(orchestration_job_ids, "Orchestration job id")
    instance_ids = names.list_without_blanks(service_instance_ids, "Service instance id")
    owner_names = names.list_without_blanks(owners, "Owner")
    return LockFilters(
        ids=tuple(ids or ()),
        service_instance_ids=tuple(instance_id(value) for value in instance_ids),
        owners=tuple(names.system_name(value) for value in owner_names),
        expires_before=_instant(expires_before, "expires before"),
        expires_after=_instant(expires_after, "expires after"),
        by_job=bool(job_ids))


def _filtered(filters: LockFilters) -> QuerySet[OrchestrationLock]:
    if filters.by_job:
        return OrchestrationLock.objects.none()
    return filter_given(OrchestrationLock.objects.all(), id__in=filters.ids,
                        service_instance_id__in=filters.service_instance_ids,
                        owner__in=filters.owners, expires_at__lt=filters.expires_before,
                        expires_at__gt=filters.expires_after)


def lock_list(*, filters: LockFilters,
              page: PageRequest) -> tuple[list[OrchestrationLock], int]:
    rows, total = paginate(_filtered(filters), page, columns=SORT_COLUMNS, tie_breaker="id")
    return list(rows), total
