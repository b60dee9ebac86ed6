"""Reading the service instance catalog: the management query (SPEC §4)."""
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import Q, QuerySet
from django.utils import timezone

from conventions import names
from conventions.exceptions import InvalidParameter
from conventions.instance_ids import instance_id
from conventions.pagination import PageRequest, filter_given, order, paginate
from conventions.timestamps import parse_utc
from conventions.versions import version
from store import metadata_requirements
from store.models import ServiceInstance

SORT_COLUMNS = {
    "instanceId": "service_instance_id",
    "provider": "provider",
    "serviceDefinition": "service_definition",
    "version": "version",
    "expiresAt": "expires_at",
    "createdAt": "created_at",
    "updatedAt": "updated_at",
}
SORTING = {"sort_fields": list(SORT_COLUMNS), "default_sort_field": "instanceId"}
ALIVE_FORMAT = ("Alive time has an invalid time format, UTC string expected "
                "(example: 2024-10-11T14:30:00Z)")


@dataclass(frozen=True)
class InstanceFilters:
    instance_ids: tuple[str, ...] = ()
    providers: tuple[str, ...] = ()
    service_definitions: tuple[str, ...] = ()
    versions: tuple[str, ...] = ()
    alives_at: dt.datetime | None = None
    metadata_requirements: tuple[dict, ...] = ()


def instance_filters_parse(
    *,
    instance_ids: Sequence[str | None] | None = None,
    provider_names: Sequence[str | None] | None = None,
    service_definition_names: Sequence[str | None] | None = None,
    versions: Sequence[str | None] | None = None,
    alives_at: str | None = None,
    metadata_requirements_list: object = None,
) -> InstanceFilters:
    """Validate and normalize query filters; every filter is optional."""
    alive = None
    if alives_at is not None and alives_at.strip():
        alive = parse_utc(alives_at)
        if alive is None:
            raise InvalidParameter(ALIVE_FORMAT)
    metadata_requirements.validate_requirements(metadata_requirements_list,
                                                "metadataRequirementsList")
    return InstanceFilters(
        instance_ids=tuple(instance_id(v) for v in names.list_without_blanks(instance_ids, "Instance id")),
        providers=tuple(names.system_name(v) for v in names.list_without_blanks(provider_names, "Provider name")),
        service_definitions=tuple(names.service_definition(v) for v in names.list_without_blanks(
            service_definition_names, "Service definition name")),
        versions=tuple(version(v) for v in names.list_without_blanks(versions, "Version")),
        alives_at=alive,
        metadata_requirements=tuple(metadata_requirements_list or ()),
    )


def alive_q(at: dt.datetime) -> Q:
    """Instances that have not expired by `at`."""
    return Q(expires_at__isnull=True) | Q(expires_at__gt=at)


def _filtered(filters: InstanceFilters) -> QuerySet[ServiceInstance]:
    instances = filter_given(
        ServiceInstance.objects.all(), service_instance_id__in=filters.instance_ids,
        provider__in=filters.providers, service_definition__in=filters.service_definitions,
        version__in=filters.versions)
    if filters.alives_at is not None:
        # Alive at that time, and not already expired now (expired ones are never offered).
        instances = instances.filter(alive_q(filters.alives_at)).filter(alive_q(timezone.now()))
    return instances


def instance_list(*, filters: InstanceFilters,
                  page: PageRequest) -> tuple[list[ServiceInstance], int]:
    """One page of matching instances (with their interfaces) and the number of matches.
    Metadata requirements are evaluated in Python on the rows the other filters leave."""
    instances = _filtered(filters)
    if not filters.metadata_requirements:
        rows, total = paginate(instances, page, columns=SORT_COLUMNS)
        return list(rows.prefetch_related("interfaces")), total
    requirements = list(filters.metadata_requirements)
    ordered = order(instances, page, columns=SORT_COLUMNS).values_list("pk", "metadata")
    with metadata_requirements.regex_budget():
        matching = [pk for pk, metadata in ordered.iterator(chunk_size=2000)
                    if metadata_requirements.matches_any(metadata, requirements)]
    page_pks = matching[page.offset:page.offset + page.size]
    rows = ServiceInstance.objects.prefetch_related("interfaces").in_bulk(page_pks)
    return [rows[pk] for pk in page_pks], len(matching)
