"""Reading subscriptions: push management's query and the consumer's own query
(reference-simple §6.11)."""
import json
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime

from django.db import connection
from django.db.models import Count, Q

from conventions import names
from conventions.pagination import PageRequest, filter_given, paginate
from database.statements import Statement, model_instances, placeholders, prepared_rows
from subscriptions.models import MQTT_PROTOCOLS, Subscription

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


# The fields a subscribe reads of the subscriptions it overwrites (all of them).
_FIELDS = [field.name for field in Subscription._meta.concrete_fields]


def subscriptions_locked_statement(keys: Sequence[str]) -> Statement:
    """The statement that reads the subscriptions of these identity keys and row-locks them
    until the transaction ends (in primary-key order, the one lock order of every multi-row
    writer); `subscriptions_locked` makes them instances. A subscribe sends it with its
    locks, its other read and its write (database.statements.statements_rows)."""
    quote = connection.ops.quote_name
    columns = ", ".join(quote(Subscription._meta.get_field(name).column) for name in _FIELDS)
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    return (f"SELECT {columns} FROM {_table()} "
            f"WHERE identity_key IN ({placeholders(len(keys))}) ORDER BY id{lock}", list(keys))


def subscriptions_locked(rows: list[tuple]) -> list[Subscription]:
    """The subscriptions of the rows `subscriptions_locked_statement` read."""
    return model_instances(Subscription, _FIELDS, rows)


def _table() -> str:
    return connection.ops.quote_name(Subscription._meta.db_table)


# A notify topic in SQL: (as selected, as compared, the placeholder compared with, the
# parameter's form). PostgreSQL compares the jsonb value, the expression of the index
# subscription_notify_topic, whose condition the literal protocol list lets the planner prove.
_TOPIC_SQL = {"postgresql": ("notify_properties ->> 'topic'", "notify_properties -> 'topic'",
                             "%s::jsonb", json.dumps),
              "sqlite": ("JSON_EXTRACT(notify_properties, '$.topic')",
                         "JSON_EXTRACT(notify_properties, '$.topic')", "%s", str)}


def topic_users(topics: Sequence[str]) -> dict[str, set[str]]:
    """The targets of the MQTT subscriptions notifying on each of `topics` (used ones only).
    One plain statement: every MQTT subscribe and every MQTT interface answer reads it, and
    building the ORM's JSON lookup cost five times the statement (docs/performance.md)."""
    if not topics:
        return {}
    users, _ = topic_users_read(prepared_rows(*topic_users_statement(topics, ())))
    return users


def topic_users_statement(topics: Sequence[str], counted: Sequence[str]) -> Statement:
    """The statement of `topic_users` and of how many subscriptions each of the `counted`
    targets has (at least one topic or target); `topic_users_read` reads its rows."""
    topics, counted = sorted(set(topics)), sorted(set(counted))
    parts, params = [], []
    if topics:
        shown, compared, placeholder, parameter = _TOPIC_SQL[connection.vendor]
        protocols = ", ".join(f"'{protocol}'" for protocol in MQTT_PROTOCOLS)
        parts.append(f"SELECT DISTINCT {shown}, target, CAST(NULL AS BIGINT) FROM {_table()} "
                     f"WHERE notify_protocol IN ({protocols}) AND {compared} IN "
                     f"({', '.join([placeholder] * len(topics))})")
        params += [parameter(topic) for topic in topics]
    if counted:
        parts.append(f"SELECT NULL, target, COUNT(*) FROM {_table()} "
                     f"WHERE target IN ({placeholders(len(counted))}) GROUP BY target")
        params += counted
    return " UNION ALL ".join(parts), params


def topic_users_read(rows: list[tuple]) -> tuple[dict[str, set[str]], dict[str, int]]:
    """(the targets using each topic, the number of subscriptions of each counted target
    that has any) from the rows of `topic_users_statement`."""
    users: dict[str, set[str]] = defaultdict(set)
    counts: dict[str, int] = {}
    for topic, target, count in rows:
        if topic is None:
            counts[target] = count
        else:
            users[topic].add(target)
    return users, counts


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
