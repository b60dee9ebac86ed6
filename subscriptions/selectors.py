"""Reading subscriptions: push management's query and the consumer's own query
(reference-simple §6.11)."""
from collections.abc import Sequence
from datetime import datetime

from django.db import connection
from django.db.models import Count, Q

from conventions import names
from conventions.pagination import PageRequest, filter_given, paginate
from subscriptions.models import Subscription

# API sort field → column; the default order is createdAt DESC, ties by id.
SORT_COLUMNS = {
    "id": "id",
    "ownerSystem": "owner",
    "targetSystem": "target",
    "serviceDefinition": "service_definition",
    "createdAt": "created_at",
}
SORTING = {"sort_fields": list(SORT_COLUMNS), "default_sort_field": "createdAt",
           "default_direction": "DESC"}


def subscription_list(*, owner_systems: Sequence[str | None] | None,
                      target_systems: Sequence[str | None] | None,
                      service_definitions: Sequence[str | None] | None,
                      involving: str | None, page: PageRequest) -> tuple[list[Subscription], int]:
    """One page of the subscriptions matching the filters and the total number of matches;
    filtering, ordering and slicing happen in SQL. The filters are validated and normalized in
    the reference's order (blank elements of every list first, then the names); `involving`
    (the consumer's query) keeps the subscriptions this system owns or is the target of."""
    owners = names.without_blanks(owner_systems, "Owner system list contains empty element")
    targets = names.without_blanks(target_systems, "Target system list contains empty element")
    definitions = names.without_blanks(service_definitions,
                                       "Service definition list contains empty element")
    subscriptions = Subscription.objects.all()
    if involving is not None:
        subscriptions = subscriptions.filter(Q(owner=involving) | Q(target=involving))
    subscriptions = filter_given(
        subscriptions, owner__in=[names.system_name(value) for value in owners],
        target__in=[names.system_name(value) for value in targets],
        service_definition__in=[names.service_definition(value) for value in definitions])
    rows, total = paginate(subscriptions, page, columns=SORT_COLUMNS, tie_breaker="id")
    return list(rows), total


def subscription_counts(targets: Sequence[str]) -> dict[str, int]:
    """How many subscriptions each of `targets` has (those with none left out). One plain
    statement: on the subscribe call's path, where building the ORM's grouped count cost a
    quarter of the call's CPU (docs/performance.md, push fan-out)."""
    if not targets:
        return {}
    meta, quote = Subscription._meta, connection.ops.quote_name
    column = quote(meta.get_field("target").column)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {column}, COUNT(*) FROM {quote(meta.db_table)} "
                       f"WHERE {column} IN ({', '.join(['%s'] * len(targets))}) "
                       f"GROUP BY {column}", list(targets))
        return dict(cursor.fetchall())


def subscription_counts_by_protocol(now: datetime) -> dict[str, int]:
    """Live (unexpired) subscriptions per notify protocol, every protocol (zero included) in
    its order: one grouped count. The metrics read it (observability/metrics_state.py
    SUBSCRIPTIONS, registered in subscriptions/apps.py)."""
    counts = dict(Subscription.objects.exclude(expires_at__lte=now).order_by()
                  .values_list("notify_protocol").annotate(Count("id")))
    return {protocol: counts.get(protocol, 0) for protocol in Subscription.Protocol.values}


def live_targets(now: datetime):
    """The consumers of the subscriptions alive at `now` (a query, evaluated by the caller):
    whose ServiceRegistry instances the poll follows."""
    return (Subscription.objects.filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
            .values_list("target", flat=True).distinct())
