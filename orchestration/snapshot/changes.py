"""The change feed: which consumers' rules and which instances changed, recorded by database
triggers and read by every web process's pull snapshot (orchestration/snapshot/state.py) and
by the subscriptions' change processing (subscriptions/services/evaluation.py).

Triggers (orchestration/migrations/sql/) on the rule, instance, interface, reservation and
polled ServiceRegistry instance tables write `SnapshotChange` rows in the changing
transaction, whatever wrote (API, admin, import commands, tasks, raw SQL): one row per
consumer whose rules changed, one per instance whose catalog entry, interfaces or reservation
changed, one without either for a TRUNCATE or a bulk write (everything; a bulk write lists the
consumers whose rules it changed beside it, `bulk_consumers`). An interface update that only
records a latency measurement is not a change of what pull offers.

Reading in order (`changes_since`, the one reader). A reader remembers its position in the
feed and asks for the rows after it; no committed row may ever be missed:
- PostgreSQL: ids come from a sequence as rows are written, so a transaction that starts
  writing after a read writes higher ids than any the read saw. Only the transactions still
  running at the read may commit rows with lower ids later; their ids are remembered
  (`pg_snapshot_xip`) and their rows read by transaction id next time. Writers wait for
  nobody.
- SQLite commits one writer at a time, so row ids (AUTOINCREMENT, never reused) grow in
  commit order and the position is the last id read.

`changes_prune()` (beat, every minute) stamps rows with the time they were first seen and
deletes those seen more than CHANGE_KEEP_SECONDS ago. A reader that has not read the feed for
half that long (TRUSTED_SECONDS) no longer trusts its position: the snapshot loads everything
again, the subscriptions evaluate every live one.
"""
import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.db import connection
from django.db.models import Exists, Min, OuterRef
from django.utils import timezone

from database.statements import placeholders, prepared_rows
from orchestration.models import BulkChangeConsumer, SnapshotChange

CHANGE_KEEP_SECONDS = 600

CHANGES = SnapshotChange._meta.db_table
BULK_CONSUMERS = BulkChangeConsumer._meta.db_table
# A position not read for this long may have lost rows to pruning.
TRUSTED_SECONDS = CHANGE_KEEP_SECONDS / 2
# How much earlier than asked a timer may fire and still find a burst settled.
SETTLE_TOLERANCE_SECONDS = 0.02


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
    """The position of a reader that is about to load (or evaluate) everything: whatever
    commits after it is read from the feed afterwards."""
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
          "WHERE id > %s ORDER BY id LIMIT %s")
_READ_WITH_RUNNING = (
    f"(SELECT NULL::bigint, NULL, NULL, {_SNAPSHOT}) UNION ALL (({_ABOVE}) UNION "
    f"(SELECT id, consumer, service_instance_id, NULL FROM {CHANGES} "
    "WHERE xid = ANY(%s::bigint[]) LIMIT %s))")


def changes_since(position: FeedPosition, limit: int,
                  ticket: int = 0) -> tuple[list[Change], FeedPosition | None]:
    """The rows committed after `position` and the position after them, in one query (so
    under one snapshot); None for the position when there are more than `limit` rows.

    PostgreSQL: rows with a higher id than any seen (ids are allocated from a sequence as rows
    are written, so a transaction that starts later writes higher ids), plus the rows of the
    transactions that were running at the last read that raised the last id (they may have
    written lower ids before they committed). Each part is read from its own index."""
    if connection.vendor != "postgresql":
        changes = [Change(*row) for row in prepared_rows(
            f"SELECT id, consumer, service_instance_id FROM {CHANGES} WHERE id > %s "
            "ORDER BY id LIMIT %s", [position.last_id, limit + 1])]
        if len(changes) > limit:
            return changes, None
        return changes, FeedPosition(max([position.last_id, *(c.id for c in changes)]),
                                     (), ticket)
    if position.running:
        rows = prepared_rows(_READ_WITH_RUNNING,
                              [position.last_id, limit + 1, list(position.running), limit + 1])
    else:
        rows = prepared_rows(_ABOVE, [position.last_id, limit + 1])
    changes = [Change(*row[:3]) for row in rows if row[0] is not None]
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


def _in_progress(snapshot: str) -> tuple[int, ...]:
    """The in-progress transaction ids of a snapshot's text form `xmin:xmax:xip,…`."""
    listed = snapshot.rsplit(":", 1)[1]
    return tuple(sorted(int(xid) for xid in listed.split(","))) if listed else ()


def bulk_listed(changes: list[Change]) -> frozenset[int] | None:
    """The ids of the changes meaning everything among `changes`, when each is a bulk write
    that listed its consumers (one index probe each, whatever the lists' lengths); None when
    one lists none: it means everything (a TRUNCATE)."""
    ids = [change.id for change in changes if change.everything]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT change.id FROM {CHANGES} change WHERE change.id IN "
                       f"({placeholders(len(ids))}) AND EXISTS (SELECT 1 FROM {BULK_CONSUMERS} "
                       "listed WHERE listed.change_id = change.id)", ids)
        found = frozenset(change_id for (change_id,) in cursor.fetchall())
    return found if found == set(ids) else None


def bulk_lists(change_ids: frozenset[int], consumer: str) -> bool:
    """Whether one of the bulk writes `change_ids` changed `consumer`'s rules (an index probe
    per change)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT 1 FROM {BULK_CONSUMERS} WHERE change_id IN "
                       f"({placeholders(len(change_ids))}) AND consumer = %s LIMIT 1",
                       [*change_ids, consumer])
        return cursor.fetchone() is not None


LISTED_FETCHED = 250  # rows of a bulk write's list made into Python objects at a time


def bulk_consumers(ids: Iterable[int],
                   between: Callable[[], None] | None = None) -> set[str] | None:
    """The consumers whose rules the bulk writes `ids` (changes meaning everything) changed,
    as those writes listed them (orchestration.models.BulkChangeConsumer); None when one of the
    changes lists none: it means everything (a TRUNCATE). `between`, when given, is called
    before each LISTED_FETCHED rows (the background thread waits there for its process's
    requests, orchestration/snapshot/state.py)."""
    ids = list(ids)
    consumers: set[str] = set()
    listing: set[int] = set()
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT change_id, consumer FROM {BULK_CONSUMERS} "
                       f"WHERE change_id IN ({placeholders(len(ids))})", ids)
        # A few rows at a time: made into Python objects in one go, the 90 000 names of a
        # 900 000-rule import held the interpreter for tens of milliseconds, and the pulls of
        # the process waited.
        while True:
            if between is not None:
                between()
            if not (rows := cursor.fetchmany(LISTED_FETCHED)):
                break
            for change_id, consumer in rows:
                listing.add(change_id)
                consumers.add(consumer)
    return consumers if listing == set(ids) else None


# The newest committed change's `written_at` (one index read), for change processing's wait
# for a burst of changes to end (subscriptions' evaluation.py `flags_settling`).
NEWEST_WRITTEN = f"SELECT written_at FROM {CHANGES} ORDER BY id DESC LIMIT 1"


def changes_first_written(changes: list[Change]) -> dt.datetime | None:
    """The earliest `written_at` of the feed rows from the first to the last id of `changes`:
    one range read, never later than the earliest of `changes` themselves."""
    if not changes:
        return None
    ids = [change.id for change in changes]
    return SnapshotChange.objects.filter(id__gte=min(ids), id__lte=max(ids)).aggregate(
        first=Min("written_at"))["first"]


def changes_prune(*, now: dt.datetime | None = None) -> int:
    """Stamp the rows seen for the first time and delete those seen more than
    CHANGE_KEEP_SECONDS ago (a row's commit time is unknown; its first sighting is after it)."""
    now = now or timezone.now()
    SnapshotChange.objects.filter(seen_at__isnull=True).update(seen_at=now)
    deleted, _ = SnapshotChange.objects.filter(
        seen_at__lt=now - dt.timedelta(seconds=CHANGE_KEEP_SECONDS)).delete()
    # NOT EXISTS, an anti-join (NOT IN a subquery is never one: each listed consumer would
    # scan the feed's ids).
    BulkChangeConsumer.objects.filter(
        ~Exists(SnapshotChange.objects.filter(pk=OuterRef("change_id")))).delete()
    if connection.vendor == "postgresql":
        # Fresh statistics keep the feed query on its index even where autovacuum is off.
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {CHANGES}")
    return deleted
