"""The change feed of the pull snapshot: which consumers' rules and which instances changed,
recorded by database triggers and read by every web process (orchestration/snapshot/state.py).

Triggers on the rule, instance, interface and reservation tables write `SnapshotChange` rows
in the changing transaction, whatever wrote (API, admin, import commands, tasks, raw SQL):
one row per consumer whose rules changed, one per instance whose catalog entry, interfaces or
reservation changed, one without either for a TRUNCATE (everything). An interface update that
only records a latency measurement is not a change of what pull offers.

Reading in order. A process remembers its position in the feed and asks for the rows after
it before it answers a pull from its snapshot; no committed row may ever be missed:
- PostgreSQL: ids come from a sequence as rows are written, so a transaction that starts
  writing after a read writes higher ids than any the read saw. Only the transactions still
  running at the read may commit rows with lower ids later; their ids are remembered
  (`pg_snapshot_xip`) and their rows read by transaction id next time. Writers wait for
  nobody.
- SQLite commits one writer at a time, so row ids (AUTOINCREMENT, never reused) grow in
  commit order and the position is the last id read.

`changes_prune()` (beat, every minute) stamps rows with the time they were first seen and
deletes those seen more than CHANGE_KEEP_SECONDS ago. A process that has not read the feed for
half that long no longer trusts its position and loads everything again.
"""
import datetime as dt
from dataclasses import dataclass

from django.db import connection
from django.utils import timezone

from database.prepared_statements import run_prepared
from orchestration.models import OrchestrationLock, SnapshotChange
from store.models import Rule, ServiceInstance, ServiceInterface

CHANGE_KEEP_SECONDS = 600

CHANGES = SnapshotChange._meta.db_table
RULES = Rule._meta.db_table
INSTANCES = ServiceInstance._meta.db_table
INTERFACES = ServiceInterface._meta.db_table
LOCKS = OrchestrationLock._meta.db_table
_TABLES = {"changes": CHANGES, "rules": RULES, "instances": INSTANCES,
           "interfaces": INTERFACES, "locks": LOCKS}
# What an interface offers; an update of other columns (latency) changes no pull result.
_OFFERED = "instance_id, position, template_name, protocol, policy, properties"

_XID = "pg_current_xact_id()::text::bigint"
_POSTGRES_INSTALL = f"""
CREATE OR REPLACE FUNCTION orchestration_snapshot_rules() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO {{changes}} (xid, consumer) SELECT DISTINCT {_XID}, consumer FROM new_rows;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO {{changes}} (xid, consumer) SELECT DISTINCT {_XID}, consumer FROM old_rows;
    ELSE
        INSERT INTO {{changes}} (xid, consumer) SELECT {_XID}, consumer FROM (
            SELECT consumer FROM new_rows UNION SELECT consumer FROM old_rows) AS changed;
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION orchestration_snapshot_instances() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO {{changes}} (xid, service_instance_id)
        SELECT DISTINCT {_XID}, service_instance_id FROM new_rows;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO {{changes}} (xid, service_instance_id)
        SELECT DISTINCT {_XID}, service_instance_id FROM old_rows;
    ELSE
        INSERT INTO {{changes}} (xid, service_instance_id)
        SELECT {_XID}, service_instance_id FROM (
            SELECT service_instance_id FROM new_rows
            UNION SELECT service_instance_id FROM old_rows) AS changed;
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION orchestration_snapshot_interfaces() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO {{changes}} (xid, service_instance_id)
        SELECT {_XID}, service_instance_id FROM {{instances}}
        WHERE id IN (SELECT instance_id FROM new_rows);
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO {{changes}} (xid, service_instance_id)
        SELECT {_XID}, service_instance_id FROM {{instances}}
        WHERE id IN (SELECT instance_id FROM old_rows);
    ELSE
        INSERT INTO {{changes}} (xid, service_instance_id)
        SELECT {_XID}, service_instance_id FROM {{instances}} WHERE id IN (
            SELECT n.instance_id FROM new_rows AS n JOIN old_rows AS o ON o.id = n.id
            WHERE (n.{_OFFERED.replace(", ", ", n.")}) IS DISTINCT FROM
                  (o.{_OFFERED.replace(", ", ", o.")})
            UNION
            SELECT o.instance_id FROM new_rows AS n JOIN old_rows AS o ON o.id = n.id
            WHERE n.instance_id <> o.instance_id);
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION orchestration_snapshot_locks() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO {{changes}} (xid, service_instance_id)
        SELECT DISTINCT {_XID}, service_instance_id FROM new_rows;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO {{changes}} (xid, service_instance_id)
        SELECT DISTINCT {_XID}, service_instance_id FROM old_rows;
    ELSE
        INSERT INTO {{changes}} (xid, service_instance_id)
        SELECT {_XID}, service_instance_id FROM (
            SELECT service_instance_id FROM new_rows
            UNION SELECT service_instance_id FROM old_rows) AS changed;
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION orchestration_snapshot_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {{changes}} (xid) VALUES ({_XID});
    RETURN NULL;
END $$;
"""
# (table, function): one trigger per event, since a trigger with transition tables may
# handle only one.
_POSTGRES_TRIGGERS = (("rules", "rules"), ("instances", "instances"),
                      ("interfaces", "interfaces"), ("locks", "locks"))


def _postgres_install() -> str:
    statements = [_POSTGRES_INSTALL]
    for table, function in _POSTGRES_TRIGGERS:
        for event, references in (("INSERT", "NEW TABLE AS new_rows"),
                                  ("UPDATE", "NEW TABLE AS new_rows OLD TABLE AS old_rows"),
                                  ("DELETE", "OLD TABLE AS old_rows")):
            statements.append(
                f"CREATE TRIGGER snapshot_{table}_{event.lower()} AFTER {event} ON {{{table}}} "
                f"REFERENCING {references} FOR EACH STATEMENT "
                f"EXECUTE FUNCTION orchestration_snapshot_{function}();")
        statements.append(f"CREATE TRIGGER snapshot_{table}_truncate AFTER TRUNCATE ON "
                          f"{{{table}}} FOR EACH STATEMENT "
                          "EXECUTE FUNCTION orchestration_snapshot_truncate();")
    return "\n".join(statements).format(**_TABLES)


def _postgres_uninstall() -> str:
    statements = [f"DROP TRIGGER IF EXISTS snapshot_{table}_{event} ON {{{table}}};"
                  for table, _ in _POSTGRES_TRIGGERS
                  for event in ("insert", "update", "delete", "truncate")]
    statements += [f"DROP FUNCTION IF EXISTS orchestration_snapshot_{name}();"
                   for name in ("rules", "instances", "interfaces", "locks", "truncate")]
    return "\n".join(statements).format(**_TABLES)


def _instance_of(interface: str) -> str:
    return f"(SELECT service_instance_id FROM {{instances}} WHERE id = {interface}.instance_id)"


# SQLite has row triggers only; a transaction's rows are many, but SQLite is the small setup.
_SQLITE_TRIGGERS = {
    "rule_insert": "AFTER INSERT ON {rules} BEGIN "
                   "INSERT INTO {changes} (consumer) VALUES (NEW.consumer); END",
    "rule_update": "AFTER UPDATE ON {rules} BEGIN "
                   "INSERT INTO {changes} (consumer) VALUES (OLD.consumer); "
                   "INSERT INTO {changes} (consumer) SELECT NEW.consumer "
                   "WHERE NEW.consumer <> OLD.consumer; END",
    "rule_delete": "AFTER DELETE ON {rules} BEGIN "
                   "INSERT INTO {changes} (consumer) VALUES (OLD.consumer); END",
    "instance_insert": "AFTER INSERT ON {instances} BEGIN INSERT INTO {changes} "
                       "(service_instance_id) VALUES (NEW.service_instance_id); END",
    "instance_update": "AFTER UPDATE ON {instances} BEGIN INSERT INTO {changes} "
                       "(service_instance_id) VALUES (OLD.service_instance_id); "
                       "INSERT INTO {changes} (service_instance_id) "
                       "SELECT NEW.service_instance_id "
                       "WHERE NEW.service_instance_id <> OLD.service_instance_id; END",
    "instance_delete": "AFTER DELETE ON {instances} BEGIN INSERT INTO {changes} "
                       "(service_instance_id) VALUES (OLD.service_instance_id); END",
    "interface_insert": "AFTER INSERT ON {interfaces} BEGIN INSERT INTO {changes} "
                        f"(service_instance_id) VALUES ({_instance_of('NEW')}); END",
    "interface_update": f"AFTER UPDATE OF {_OFFERED} ON {{interfaces}} BEGIN "
                        "INSERT INTO {changes} "
                        f"(service_instance_id) VALUES ({_instance_of('OLD')}); "
                        "INSERT INTO {changes} "
                        f"(service_instance_id) SELECT {_instance_of('NEW')} "
                        "WHERE NEW.instance_id <> OLD.instance_id; END",
    "interface_delete": "AFTER DELETE ON {interfaces} BEGIN INSERT INTO {changes} "
                        f"(service_instance_id) VALUES ({_instance_of('OLD')}); END",
    "lock_insert": "AFTER INSERT ON {locks} BEGIN INSERT INTO {changes} "
                   "(service_instance_id) VALUES (NEW.service_instance_id); END",
    "lock_update": "AFTER UPDATE ON {locks} BEGIN INSERT INTO {changes} "
                   "(service_instance_id) VALUES (OLD.service_instance_id); "
                   "INSERT INTO {changes} (service_instance_id) "
                   "SELECT NEW.service_instance_id "
                   "WHERE NEW.service_instance_id <> OLD.service_instance_id; END",
    "lock_delete": "AFTER DELETE ON {locks} BEGIN INSERT INTO {changes} "
                   "(service_instance_id) VALUES (OLD.service_instance_id); END",
}


def install_triggers(schema_editor) -> None:
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(_postgres_install(), params=None)
    elif vendor == "sqlite":
        for name, body in _SQLITE_TRIGGERS.items():
            schema_editor.execute(f"CREATE TRIGGER snapshot_{name} "
                                  f"{body.format(**_TABLES)}", params=None)


def uninstall_triggers(schema_editor) -> None:
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(_postgres_uninstall(), params=None)
    elif vendor == "sqlite":
        for name in _SQLITE_TRIGGERS:
            schema_editor.execute(f"DROP TRIGGER IF EXISTS snapshot_{name}", params=None)


# --- reading --------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Change:
    id: int
    consumer: str | None
    service_instance_id: str | None

    @property
    def everything(self) -> bool:
        return self.consumer is None and self.service_instance_id is None


@dataclass(frozen=True)
class FeedPosition:
    """Where a process stands in the feed after a read: the highest row id it has seen and
    (PostgreSQL) the transactions that were running when that id was read and still were at
    this read: their rows may appear later with lower ids. `ticket` orders the reads of one
    process (taken before the query)."""

    last_id: int
    running: tuple[int, ...] = ()
    ticket: int = 0


_RUNNING = ("ARRAY(SELECT x::text::bigint FROM pg_snapshot_xip(pg_current_snapshot()) AS x)")


def feed_start(ticket: int = 0) -> FeedPosition:
    """The position of a process that is about to load everything: whatever commits after it
    is read from the feed afterwards."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"SELECT COALESCE(MAX(id), 0), {_RUNNING} FROM {CHANGES}")
            last_id, running = cursor.fetchone()
            return FeedPosition(last_id, tuple(running), ticket)
        cursor.execute(f"SELECT COALESCE(MAX(id), 0) FROM {CHANGES}")
        return FeedPosition(cursor.fetchone()[0], (), ticket)


# The read, by where the last one left off. Each row carries the statement's snapshot
# (`xmin:xmax:xip,…`), whose in-progress list is the transactions still running at this read.
# Nothing running at the last read: only the rows above the last id seen, from the index on id
# (almost always none; then nothing else is needed). Some running: a header row with the
# snapshot, those rows and the rows of the transactions that were running.
_SNAPSHOT = "pg_current_snapshot()::text"
_ABOVE = (f"SELECT id, consumer, service_instance_id, {_SNAPSHOT} FROM {CHANGES} "
          "WHERE id > $1::bigint ORDER BY id LIMIT $2::bigint")
_READ = _ABOVE.encode()
_READ_WITH_RUNNING = (
    f"(SELECT NULL::bigint, NULL, NULL, {_SNAPSHOT}) UNION ALL (({_ABOVE}) UNION "
    f"(SELECT id, consumer, service_instance_id, NULL FROM {CHANGES} "
    "WHERE xid = ANY($3::bigint[]) LIMIT $2::bigint))").encode()


def changes_since(position: FeedPosition, limit: int,
                  ticket: int = 0) -> tuple[list[Change], FeedPosition | None]:
    """The rows committed after `position` and the position after them, in one query (so
    under one snapshot); None for the position when there are more than `limit` rows.

    PostgreSQL: rows with a higher id than any seen (ids are allocated from a sequence as rows
    are written, so a transaction that starts later writes higher ids), plus the rows of the
    transactions that were running at the last read that raised the last id (they may have
    written lower ids before they committed). Each part is read from its own index."""
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT id, consumer, service_instance_id FROM {CHANGES} "
                           "WHERE id > %s ORDER BY id LIMIT %s", [position.last_id, limit + 1])
            changes = [Change(*row) for row in cursor.fetchall()]
        if len(changes) > limit:
            return changes, None
        return changes, FeedPosition(max([position.last_id, *(c.id for c in changes)]),
                                     (), ticket)
    params = [str(position.last_id).encode(), str(limit + 1).encode()]
    if position.running:
        params.append(("{%s}" % ",".join(map(str, position.running))).encode())
        rows = run_prepared(b"orchestration_feed_running", _READ_WITH_RUNNING, params)
    else:
        rows = run_prepared(b"orchestration_feed", _READ, params)
    changes = [Change(int(row[0]), _text(row[1]), _text(row[2]))
               for row in rows if row[0] is not None]
    if len(changes) > limit:
        return changes, None
    if not rows:  # nothing above the last id and nothing was running: nothing changed
        return changes, FeedPosition(position.last_id, (), ticket)
    running = _in_progress(next(row[3] for row in rows if row[3] is not None))
    last_id = max([position.last_id, *(change.id for change in changes)])
    if last_id == position.last_id:
        # Transactions that began after the last read that raised the last id write higher
        # ids: of those running now, only the ones already running then still matter.
        running = tuple(sorted(set(running) & set(position.running)))
    return changes, FeedPosition(last_id, running, ticket)


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode()


def _in_progress(snapshot: bytes) -> tuple[int, ...]:
    """The in-progress transaction ids of a snapshot's text form `xmin:xmax:xip,…`."""
    listed = snapshot.rsplit(b":", 1)[1]
    return tuple(sorted(int(xid) for xid in listed.split(b","))) if listed else ()


def changes_prune(*, now: dt.datetime | None = None) -> int:
    """Stamp the rows seen for the first time and delete those seen more than
    CHANGE_KEEP_SECONDS ago (a row's commit time is unknown; its first sighting is after it)."""
    now = now or timezone.now()
    SnapshotChange.objects.filter(seen_at__isnull=True).update(seen_at=now)
    deleted, _ = SnapshotChange.objects.filter(
        seen_at__lt=now - dt.timedelta(seconds=CHANGE_KEEP_SECONDS)).delete()
    if connection.vendor == "postgresql":
        # Fresh statistics keep the feed query on its index even where autovacuum is off.
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {CHANGES}")
    return deleted
