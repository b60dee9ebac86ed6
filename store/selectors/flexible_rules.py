"""Reading flexible store rules: the management query (issue 33, docs/flexible-store.md; pull
reads them through its sources, orchestration.pull.selectors)."""
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import QuerySet

from conventions import names
from conventions.pagination import PageRequest, filter_given, paginate
from conventions.uuids import require_uuid
from store.models import FlexibleRule
from store.selectors.rules import creator_filter, priority_range_check

# API sort field → column; the default order is createdAt ASC, ties by id.
SORT_COLUMNS = {
    "id": "id",
    "consumer": "consumer",
    "provider": "provider",
    "serviceDefinition": "service_definition",
    "priority": "priority",
    "createdAt": "created_at",
}
SORTING = {"sort_fields": list(SORT_COLUMNS), "default_sort_field": "createdAt"}


@dataclass(frozen=True)
class FlexibleRuleFilters:
    ids: tuple[uuid.UUID, ...] = ()
    consumers: tuple[str, ...] = ()
    providers: tuple[str, ...] = ()
    service_definitions: tuple[str, ...] = ()
    min_priority: int | None = None
    max_priority: int | None = None
    created_by: str | None = None


def flexible_rule_filters_parse(
    *,
    ids: Sequence[str | None] | None = None,
    consumer_names: Sequence[str | None] | None = None,
    provider_names: Sequence[str | None] | None = None,
    service_definitions: Sequence[str | None] | None = None,
    min_priority: int | None = None,
    max_priority: int | None = None,
    created_by: str | None = None,
) -> FlexibleRuleFilters:
    """Validate and normalize query filters, as the simple store's query does; every filter is
    optional. A consumer (provider) name filter lists the rules naming that system, not those
    that select it by metadata."""
    parsed_ids = tuple(require_uuid(value) for value in names.list_without_blanks(ids, "Id"))
    consumer_names = names.list_without_blanks(consumer_names, "Consumer name")
    provider_names = names.list_without_blanks(provider_names, "Provider name")
    service_definitions = names.list_without_blanks(service_definitions, "Service definition name")
    priority_range_check(min_priority, max_priority)
    return FlexibleRuleFilters(
        ids=parsed_ids,
        consumers=tuple(names.system_name(value) for value in consumer_names),
        providers=tuple(names.system_name(value) for value in provider_names),
        service_definitions=tuple(names.service_definition(v) for v in service_definitions),
        min_priority=min_priority,
        max_priority=max_priority,
        created_by=creator_filter(created_by),
    )


def _filtered(filters: FlexibleRuleFilters) -> QuerySet[FlexibleRule]:
    return filter_given(
        FlexibleRule.objects.all(), id__in=filters.ids, consumer__in=filters.consumers,
        provider__in=filters.providers, service_definition__in=filters.service_definitions,
        priority__gte=filters.min_priority, priority__lte=filters.max_priority,
        created_by=filters.created_by)


def flexible_rule_list(*, filters: FlexibleRuleFilters,
                       page: PageRequest) -> tuple[list[FlexibleRule], int]:
    """One page of matching rules and the total number of matches."""
    rows, total = paginate(_filtered(filters), page, columns=SORT_COLUMNS, tie_breaker="id")
    return list(rows), total
