"""Reading the pull snapshot's data from the database: all of it, or the rules of some
consumers and some instances with their interfaces and reservations. Plain SQL through the
request thread's connection, no model instances: a million rules load in seconds."""
import datetime as dt
import itertools
import json
import sys
import uuid
from collections.abc import Callable, Iterable, Iterator
from operator import itemgetter
from typing import Any

from django.db import connection
from django.utils.dateparse import parse_datetime

from database.statements import placeholders
from orchestration.models import OrchestrationLock
from orchestration.pull.records import (
    FLEXIBLE_RULE_COLUMNS,
    CatalogInstance,
    FlexibleRuleRecord,
    PullRule,
    Reservation,
    interface_record,
)
from store.models import FlexibleRule, Rule, ServiceInstance, ServiceInterface

RULES = Rule._meta.db_table
INSTANCES = ServiceInstance._meta.db_table
INTERFACES = ServiceInterface._meta.db_table
LOCKS = OrchestrationLock._meta.db_table
FLEXIBLE_RULES = FlexibleRule._meta.db_table

# Rules by consumer, then by service definition, best priority first.
ConsumerRules = dict[str, tuple[PullRule, ...]]
_CHUNK = 500  # values of one IN list (SQLite allows a few hundred at least)
# Rows made into Python objects at a time (each time a C call holding the GIL), and the
# consumers whose records `load_rules` makes between two calls of `between`: each step of a
# catch-up batch takes about half a millisecond, which a request of the process arriving
# meanwhile shares the interpreter with (with 1 000 and 100, about 2 ms: docs/performance.md,
# "A catch-up in smaller steps").
FETCHED = 250
BETWEEN_CONSUMERS = 25
_consumer = itemgetter(0)


def _json(value: Any) -> Any:
    """PostgreSQL hands JSONB to Django as text, SQLite stores text."""
    return json.loads(value) if isinstance(value, (str, bytes)) else value


def _aware(value: Any) -> dt.datetime | None:
    """SQLite hands back naive datetimes (or text); the database holds UTC."""
    if isinstance(value, str):
        value = parse_datetime(value)
    if value is not None and value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    return value


def _rows(sql: str, column: str, keys: Iterable[str | int] | None,
          between: Callable[[], None] | None = None) -> Iterator[tuple]:
    """Rows of `sql`, whose `{keys}` is replaced by `column` = each of `keys` (PostgreSQL) or
    IN a list of them (in chunks); without keys (None), by a condition that holds. Made into
    Python objects FETCHED at a time: a million rows fetched at once were 300 MB of objects,
    freed after the load but kept by the process (its memory does not shrink back).
    `between`, when given, is called before each fetch (see `load_rules`)."""
    if keys is not None:
        keys = list(dict.fromkeys(keys))
        if not keys:
            return
    with connection.cursor() as cursor:
        if keys is None or connection.vendor == "postgresql":
            if keys is None:
                cursor.execute(sql.format(keys="TRUE" if connection.vendor == "postgresql"
                                          else "1"))
            else:
                cursor.execute(*_each_key(sql, column, keys))
            while True:
                if between is not None:
                    between()
                if not (rows := cursor.fetchmany(FETCHED)):
                    return
                yield from rows
        for start in range(0, len(keys), _CHUNK):
            chunk = keys[start:start + _CHUNK]
            cursor.execute(sql.format(keys=f"{column} IN ({placeholders(len(chunk))})"),
                           chunk)
            yield from cursor.fetchall()


def _each_key(sql: str, column: str, keys: list[str | int]) -> tuple[str, list]:
    """PostgreSQL: one statement however many keys (a catch-up batch's 1 000 consumers), that
    reads `sql` once per key from `column`'s index. With `column = ANY(keys)`, the planner
    chose a parallel scan of the whole table for a few hundred keys or more (their rows
    looked like a large share): a catch-up batch read every rule, in three processes, and the
    larger the table the longer (docs/performance.md, "The catch-up's plan"). The subquery per
    key (OFFSET 0 keeps it one) has only the one key to go by. The rows come key by key, in
    the order of `sql` within each (the key's place orders them without a sort: the plan
    reads the keys in that order)."""
    array = "bigint[]" if isinstance(keys[0], int) else "text[]"
    per_key = sql.format(keys=f"{column} = wanted.key")
    return (f"SELECT picked.* FROM unnest(%s::{array}) WITH ORDINALITY AS wanted(key, place) "
            f"CROSS JOIN LATERAL ({per_key} OFFSET 0) AS picked ORDER BY wanted.place", [keys])


# Entries `RecordSharing.release` lets go of at a time.
RELEASED = 1000
# Records and groups a sharing holds at most before the snapshot begins another (25-50 bytes
# each: a million rules with nothing in common would otherwise add 40 MB to a process).
SHARED_MAX = 200_000


class RecordSharing:
    """The records of the loads given it, shared between them (see `load_rules`). Each
    record and group is its own key: a plain tuple of the same values finds it (a PullRule is
    a tuple), so the index holds no objects of its own but its tables."""

    def __init__(self) -> None:
        self.rules: dict[tuple[str, str, int], PullRule] = {}
        # A consumer's rules for a definition, best first.
        self.groups: dict[tuple, tuple[PullRule, ...]] = {}

    def full(self) -> bool:
        return len(self.rules) + len(self.groups) > SHARED_MAX

    def release(self, between: Callable[[], None]) -> None:
        """Let go of what it holds, RELEASED entries at a time, calling `between` before
        each step (records no longer in the snapshot are freed with it: dropped at once, what
        a catch-up of 30 000 consumers had shared held the interpreter for 27-44 ms;
        docs/performance.md, "Measuring a bulk change against its noise")."""
        for entries in (self.groups, self.rules):
            while entries:
                between()
                for _ in range(min(RELEASED, len(entries))):
                    entries.popitem()


def load_rules(consumers: Iterable[str] | None = None,
               sharing: RecordSharing | None = None,
               between: Callable[[], None] | None = None) -> dict[str, ConsumerRules]:
    """The rules of `consumers` (None: of everybody) by consumer and service definition;
    consumers without rules are absent.

    Records are immutable and shared within a load (and between the loads given the same
    `sharing`): consumers whose rules point at the same instance with the same priority hold
    one PullRule, and those with the same rules for a definition one tuple (a plant's
    consumers mostly share their providers; docs/performance.md, "The snapshot's memory").

    The rows come consumer by consumer and are grouped as they come, as plain values; a
    group is looked up by them, and records are made only for a group not seen before (a
    catch-up batch of 10 000 rules took 3 times the CPU when each row was made a record
    first; docs/performance.md, "The catch-up's plan"). Only one consumer's rows are held
    at a time: the short-lived objects of a whole load, made between the records that stay,
    kept 40 MB of a million-rule load's memory from going back (docs/performance.md, "The
    snapshot's memory, grown change by change").

    `between`, when given, is called every few milliseconds of the work (a catch-up's
    batch waits there while its process answers a request)."""
    intern = sys.intern  # a million rules share a few thousand instance ids and names
    sharing = sharing or RecordSharing()
    records, groups = sharing.rules, sharing.groups
    loaded: dict[str, ConsumerRules] = {}
    rows = _rows(f"SELECT consumer, service_definition, priority, service_instance_id FROM "
                 f"{RULES} WHERE {{keys}} ORDER BY consumer, service_definition, priority",
                 "consumer", consumers, between)
    for count, (consumer, consumer_rows) in enumerate(itertools.groupby(rows, _consumer)):
        if between is not None and not count % BETWEEN_CONSUMERS:
            between()
        by_definition: dict[str, list[tuple[int, str]]] = {}
        for _, definition, priority, instance_id in consumer_rows:
            by_definition.setdefault(definition, []).append((priority, instance_id))
        rules = loaded[intern(consumer)] = {}
        for definition, pairs in by_definition.items():
            pairs.sort()  # best priority first (one rule a priority and definition)
            wanted = tuple((instance_id, definition, priority) for priority, instance_id in pairs)
            group = groups.get(wanted)
            if group is None:
                group = tuple(records.get(values) or _shared(records, PullRule(
                    intern(values[0]), intern(values[1]), values[2])) for values in wanted)
                groups[group] = group
            rules[group[0].service_definition] = group
    return loaded


def _shared(records: dict, record: PullRule) -> PullRule:
    records[record] = record
    return record


def load_instances(instance_ids: Iterable[str] | None = None) -> dict[str, CatalogInstance]:
    """The catalog entries of `instance_ids` (None: all) with their interfaces in order."""
    instance_ids = None if instance_ids is None else list(instance_ids)
    rows = list(_rows(f"SELECT id, service_instance_id, expires_at, metadata FROM {INSTANCES} "
                      "WHERE {keys}", "service_instance_id", instance_ids))
    interfaces: dict[int, list[dict]] = {row[0]: [] for row in rows}
    # One table a statement: a statement never holds one table's lock while it waits for
    # another's, so reads and a concurrent TRUNCATE cannot deadlock.
    for instance, *interface in sorted(
            _rows(f"SELECT instance_id, position, template_name, protocol, policy, properties "
                  f"FROM {INTERFACES} WHERE {{keys}}", "instance_id",
                  None if instance_ids is None else list(interfaces)),
            key=lambda row: (row[0], row[1])):
        if instance in interfaces:  # an instance created after its row was read: next change
            position, template, protocol, policy, properties = interface
            interfaces[instance].append(
                interface_record(template, protocol, policy, _json(properties)))
    return {sys.intern(instance_id): CatalogInstance(instance_id, pk, _aware(expires_at),
                                                     _json(metadata), tuple(interfaces[pk]))
            for pk, instance_id, expires_at, metadata in rows}


def _flexible_record(row: tuple) -> FlexibleRuleRecord:
    (rule_id, consumer, consumer_metadata, provider, provider_metadata, definition, template,
     service_metadata, min_version, max_version, priority, created_at) = row
    return FlexibleRuleRecord(
        uuid.UUID(str(rule_id)), consumer, _json(consumer_metadata), provider,
        _json(provider_metadata), sys.intern(definition), template, _json(service_metadata),
        min_version, max_version, priority, _aware(created_at))


def load_flexible_rules(*, consumers: Iterable[str] | None = None,
                        definitions: Iterable[str] | None = None,
                        ) -> tuple[dict[str, tuple[FlexibleRuleRecord, ...]],
                                   dict[str, tuple[FlexibleRuleRecord, ...]]]:
    """The flexible rules naming a consumer, by consumer, and those selecting consumers by
    metadata, by service definition, each in pull order: all of them (neither argument), the
    rules naming `consumers`, or the metadata rules of `definitions`."""
    columns = ", ".join(FLEXIBLE_RULE_COLUMNS)
    if consumers is not None:
        rows = _rows(f"SELECT {columns} FROM {FLEXIBLE_RULES} WHERE {{keys}}", "consumer",
                     consumers)
    elif definitions is not None:
        rows = _rows(f"SELECT {columns} FROM {FLEXIBLE_RULES} WHERE consumer IS NULL AND "
                     "{keys}", "service_definition", definitions)
    else:
        rows = _rows(f"SELECT {columns} FROM {FLEXIBLE_RULES} WHERE {{keys}}", "", None)
    named: dict[str, list[FlexibleRuleRecord]] = {}
    by_metadata: dict[str, list[FlexibleRuleRecord]] = {}
    for rule in map(_flexible_record, rows):
        if rule.consumer is None:
            by_metadata.setdefault(rule.service_definition, []).append(rule)
        else:
            named.setdefault(sys.intern(rule.consumer), []).append(rule)
    return ({key: tuple(sorted(rules, key=lambda rule: rule.order))
             for key, rules in named.items()},
            {key: tuple(sorted(rules, key=lambda rule: rule.order))
             for key, rules in by_metadata.items()})


def load_reservations(instance_ids: Iterable[str] | None = None) -> dict[str, Reservation]:
    """Every lock of `instance_ids` (None: all), expired ones too (pull compares times)."""
    return {instance_id: Reservation(owner, _aware(expires_at))
            for instance_id, owner, expires_at in _rows(
                f"SELECT service_instance_id, owner, expires_at FROM {LOCKS} WHERE {{keys}}",
                "service_instance_id", instance_ids)}


def count_rules() -> int:
    """The rules a load would hold: the simple store's and the flexible store's."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT (SELECT COUNT(*) FROM {RULES}) + "
                       f"(SELECT COUNT(*) FROM {FLEXIBLE_RULES})")
        return cursor.fetchone()[0]
