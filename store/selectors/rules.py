"""Reading orchestration rules: the management query (SPEC §3)."""
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import QuerySet

from conventions import names
from conventions.exceptions import InvalidParameter
from conventions.instance_ids import instance_id
from conventions.pagination import PageRequest, filter_given, paginate
from conventions.uuids import require_uuid
from store.models import Rule

# API sort field → column (SPEC §3); the default order is createdAt ASC, ties by id.
SORT_COLUMNS = {
    "id": "id",
    "consumer": "consumer",
    "serviceDefinition": "service_definition",
    "serviceInstanceId": "service_instance_id",
    "priority": "priority",
    "createdAt": "created_at",
    "updatedAt": "updated_at",
}
SORTING = {"sort_fields": list(SORT_COLUMNS), "default_sort_field": "createdAt"}


@dataclass(frozen=True)
class RuleFilters:
    ids: tuple[uuid.UUID, ...] = ()
    consumers: tuple[str, ...] = ()
    service_definitions: tuple[str, ...] = ()
    service_instance_ids: tuple[str, ...] = ()
    min_priority: int | None = None
    max_priority: int | None = None
    created_by: str | None = None


def rule_filters_parse(
    *,
    ids: Sequence[str | None] | None = None,
    consumer_names: Sequence[str | None] | None = None,
    service_definitions: Sequence[str | None] | None = None,
    service_instance_ids: Sequence[str | None] | None = None,
    min_priority: int | None = None,
    max_priority: int | None = None,
    created_by: str | None = None,
) -> RuleFilters:
    """Validate and normalize query filters, in the reference's order. Every filter is
    optional (unlike the reference, an empty query lists every rule)."""
    parsed_ids = tuple(require_uuid(value) for value in names.list_without_blanks(ids, "Id"))
    consumer_names = names.list_without_blanks(consumer_names, "Consumer name")
    service_definitions = names.list_without_blanks(service_definitions, "Service definition name")
    service_instance_ids = names.list_without_blanks(service_instance_ids, "Service instance id")
    priority_range_check(min_priority, max_priority)
    return RuleFilters(
        ids=parsed_ids,
        consumers=tuple(names.system_name(value) for value in consumer_names),
        service_definitions=tuple(names.service_definition(v) for v in service_definitions),
        service_instance_ids=tuple(instance_id(value) for value in service_instance_ids),
        min_priority=min_priority,
        max_priority=max_priority,
        created_by=creator_filter(created_by),
    )


def priority_range_check(min_priority: int | None, max_priority: int | None) -> None:
    """The priority filters of a rule query: positive, the minimum not above the maximum."""
    if min_priority is not None and min_priority < 1:
        raise InvalidParameter("Invalid minimum priority: should be a positive integer")
    if max_priority is not None and max_priority < 1:
        raise InvalidParameter("Invalid maximum priority: should be a positive integer")
    if min_priority is not None and max_priority is not None and min_priority > max_priority:
        raise InvalidParameter("Minimum priority should not be greater than maximum priority")


def creator_filter(created_by: str | None) -> str | None:
    """The `createdBy` filter of a rule query, normalized; None or blank: no filter."""
    return (names.system_name(created_by)
            if created_by is not None and names.java_trim(created_by) else None)


def _filtered(filters: RuleFilters) -> QuerySet[Rule]:
    return filter_given(
        Rule.objects.all(), id__in=filters.ids, consumer__in=filters.consumers,
        service_definition__in=filters.service_definitions,
        service_instance_id__in=filters.service_instance_ids,
        priority__gte=filters.min_priority, priority__lte=filters.max_priority,
        created_by=filters.created_by)


def rule_list(*, filters: RuleFilters, page: PageRequest) -> tuple[list[Rule], int]:
    """One page of matching rules and the total number of matches; filtering, ordering and
    slicing happen in SQL."""
    rows, total = paginate(_filtered(filters), page, columns=SORT_COLUMNS, tie_breaker="id")
    return list(rows), total
