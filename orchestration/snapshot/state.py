"""The pull snapshot: every rule, catalog instance and reservation, held in memory by each web
process, so that a pull reads them without querying them (issue 14, docs/performance.md).

Correctness first: a pull answered from the snapshot sees every change committed before the
pull arrived, as a pull that queried the tables would. Before answering, the pull asks the
change feed (orchestration/snapshot/changes.py, written by database triggers) for the rows
after the process's position: one small indexed query, usually answered with none. Rows that
are there are applied first: the rules of the consumers they name and the instances (entry,
interfaces, reservation) they name are read again. A pull applies at most MAX_INLINE_CHANGES
rows; with more it queries the database and leaves them to the background thread, which
applies up to MAX_APPLIED_CHANGES at once. More than that, a TRUNCATE, or a position too old
to trust (the feed is pruned) drop the snapshot until it is loaded again in the background;
pulls query the database meanwhile. A bulk write (an import) lists the consumers whose rules it
changed: those become stale, their pulls read their rules from the database, and the
background thread reads their rules again CATCH_UP_CONSUMERS at a time, while every other
consumer is answered from memory all along. A pull that meets a bulk write before the
background thread has read its list asks the database whether the list names its consumer.

A background thread per process loads the snapshot at start and reads the feed every
REFRESH_SECONDS, so that an idle process keeps its position and does not fall behind.
Applying changes and installing a load hold the snapshot's lock; reading the feed and
answering do not (of two pulls that read the feed at once, the one whose read began later
decides the position). A pull racing a commit may see part of that concurrent transaction
(the rules but not yet the instance it created), never a state older than its arrival. When
pull reads the database instead: `snapshot_view`, docs/orchestration.md.
"""
import contextlib
import datetime as dt
import fcntl
import gc
import hashlib
import itertools
import logging
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from django.conf import settings
from django.db import connection

from api.heap import heap_trim
from api.requests_in_progress import between_requests, idle_wait
from orchestration.pull.records import (
    CatalogInstance,
    FlexibleRuleRecord,
    PullRule,
    Reservation,
)
from orchestration.snapshot.changes import (
    TRUSTED_SECONDS,
    Change,
    FeedPosition,
    bulk_consumers,
    bulk_listed,
    bulk_lists,
    changes_since,
    feed_start,
)
from orchestration.snapshot.loading import (
    ConsumerRules,
    RecordSharing,
    count_rules,
    load_flexible_rules,
    load_instances,
    load_reservations,
    load_rules,
)

logger = logging.getLogger(__name__)

MAX_INLINE_CHANGES = 200  # a pull applies at most these; more are the background's
MAX_APPLIED_CHANGES = 20_000  # the background thread's; more: load everything again
REFRESH_SECONDS = 5
RETRY_SECONDS = 5
# While other pulls are under way in the process, a feed read begins no sooner than this after
# the previous one began, so that the pulls arriving meanwhile share it; a lone pull never
# waits.
GATHER_SECONDS = 0.002
# A web worker freezes its objects again (see PullSnapshot.freeze_after_load) once it has
# applied this many changes since the last time.
FREEZE_AFTER_CHANGES = 10_000
# A freeze waits for a break between the process's requests; after this long without one, it
# freezes during them.
FREEZE_WAIT_SECONDS = 30.0
# While the background thread loads or applies many changes, the interpreter lets another
# thread run after this many seconds instead of Python's 5 ms: a pull of the same process
# waiting to go on after each of its database reads would wait that long each time
# (issue 34: single-connection pull p50 went from 3.5 to 66 ms during reloads).
BUSY_SWITCH_INTERVAL = 0.0005
# The stale consumers (a bulk write's) whose rules the background thread reads again at once,
# one process of a host at a time: 1 000 consumers of 10 rules take about 40 ms (5 000 took
# 0.2 s, and the pulls' p99 while the processes caught up was 5-15 x steady; now up to 3.3 x).
CATCH_UP_CONSUMERS = 1_000
# After each batch a process keeps the host's turn (`_one_load_per_host`) and waits as long as
# the batch took (times this), so that while the host's processes catch up, its pulls have
# the cores to themselves at least half the time. (Waiting after the turn instead let the
# four processes of a host take turns back to back: one core read rules all along.)
CATCH_UP_PAUSE = 1.0
# A catch-up batch's steps wait for the process's requests to end, at most this long each.
REQUEST_WAIT_SECONDS = 0.05


class SnapshotView:
    """What pull reads, from the snapshot: a `PullSource` (orchestration.pull.records) giving
    the same records as the database source (orchestration.pull.selectors.DATABASE)."""

    def __init__(self, data: "_Data") -> None:
        self._data = data

    def consumer_rules(self, *, consumer: str, service_definition: str | None) -> list[PullRule]:
        # A bulk write's consumers, not read again yet, from the database: the stale ones and,
        # while the background thread reads a newly met bulk write's list, the ones it lists.
        # `pending` first: a change leaves it after its consumers joined `stale`.
        pending = self._data.pending
        if consumer in self._data.stale or pending and bulk_lists(pending, consumer):
            by_definition = load_rules([consumer]).get(consumer)
        else:
            by_definition = self._data.rules.get(consumer)
        if not by_definition:
            return []
        if service_definition:
            return list(by_definition.get(service_definition, ()))
        return sorted((rule for rules in by_definition.values() for rule in rules),
                      key=lambda rule: (rule.priority, rule.service_definition))

    def local_instances(self, instance_ids: Iterable[str]) -> dict[str, CatalogInstance]:
        instances = self._data.instances
        return {instance_id: instance for instance_id in instance_ids
                if (instance := instances.get(instance_id)) is not None}

    def local_instances_of(self, service_definitions: Iterable[str],
                           ) -> dict[str, CatalogInstance]:
        # Read while another pull may apply changes: the index's sets are replaced, never
        # changed, and an id whose instance has just gone is skipped.
        by_definition, instances = self._data.by_definition, self._data.instances
        return {instance_id: instance for definition in service_definitions
                for instance_id in by_definition.get(definition, ())
                if (instance := instances.get(instance_id)) is not None}

    def flexible_rules(self, *, consumer: str, service_definition: str | None,
                       ) -> list[FlexibleRuleRecord]:
        named = self._data.flexible_named.get(consumer, ())
        by_metadata = self._data.flexible_by_metadata
        if service_definition:
            rules = [*(rule for rule in named if rule.service_definition == service_definition),
                     *by_metadata.get(service_definition, ())]
        else:  # a copy first: another pull may be replacing groups
            rules = [*named, *(rule for rules in tuple(by_metadata.values()) for rule in rules)]
        return sorted(rules, key=lambda rule: rule.order)

    def active_locks(self, instance_ids: Iterable[str], *,
                     now: dt.datetime) -> dict[str, Reservation]:
        locks = self._data.locks
        return {instance_id: lock for instance_id in instance_ids
                if (lock := locks.get(instance_id)) is not None and lock.expires_at > now}


FlexibleRules = dict[str, tuple[FlexibleRuleRecord, ...]]


class _Data:
    def __init__(self, rules: dict[str, ConsumerRules], instances: dict[str, CatalogInstance],
                 locks: dict[str, Reservation],
                 flexible: tuple[FlexibleRules, FlexibleRules]) -> None:
        self.rules, self.instances, self.locks = rules, instances, locks
        # Consumers whose rules a bulk write changed and that are not read again yet: pulls
        # read theirs from the database. Changed in place under the snapshot's lock (a copy
        # of 90 000 names after each batch held the interpreter for milliseconds); pulls,
        # unlocked, only ask whether it holds their consumer, one step of the interpreter.
        self.stale: set[str] = set()
        # Bulk writes a pull met whose lists of consumers the background thread has not read
        # yet: pulls ask the database whether they list theirs. Replaced, never changed.
        self.pending: frozenset[int] = frozenset()
        # The flexible store's rules: naming a consumer (by consumer), selecting consumers by
        # metadata (by service definition).
        self.flexible_named, self.flexible_by_metadata = flexible
        self.rule_count = sum(len(r) for by_def in rules.values() for r in by_def.values())
        self.rule_count += sum(len(r) for r in self.flexible_named.values())
        self.rule_count += sum(len(r) for r in self.flexible_by_metadata.values())
        # The catalog's instance ids by service definition (the flexible store's pull); each
        # set is replaced when it changes, never changed, as pulls read it without the lock.
        grouped: dict[str, set[str]] = {}
        for instance_id in instances:
            grouped.setdefault(_definition(instance_id), set()).add(instance_id)
        self.by_definition: dict[str, frozenset[str]] = {
            definition: frozenset(ids) for definition, ids in grouped.items()}

    def instance_replace(self, instance_id: str, instance: CatalogInstance | None) -> None:
        definition = _definition(instance_id)
        ids = self.by_definition.get(definition, frozenset())
        if instance is None:
            self.by_definition[definition] = ids - {instance_id}
            _replace(self.instances, instance_id, None)
        else:
            _replace(self.instances, instance_id, instance)
            self.by_definition[definition] = ids | {instance_id}


def _definition(instance_id: str) -> str:
    return instance_id.split("|")[1] if instance_id.count("|") == 2 else ""


class PullSnapshot:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._data: _Data | None = None  # None: not loaded, or dropped until the next load
        self._position: FeedPosition | None = None
        self._read_at = 0.0  # monotonic time at which the applied position was read
        self._read_began = 0.0  # monotonic time at which the last feed read began
        self._pulls = 0  # pulls of this process in view() now
        self._tickets = itertools.count(1)  # orders this process's pulls and feed reads
        self._reading = False  # a feed read is under way
        self._read_done = threading.Condition(self._lock)
        self._wake = threading.Event()
        self._stopping = threading.Event()  # stop(): the background thread ends
        self._next_load = 0.0  # monotonic time before which a refused load is not retried
        self._thread: threading.Thread | None = None
        # A web worker moves what it holds out of the garbage collector's reach (gc.freeze)
        # after each load and after each FREEZE_AFTER_CHANGES applied changes, and collects
        # nothing while it loads: the snapshot is millions of objects that no cycle
        # collection frees, and each full collection walked them all, stalling the process
        # for 0.1-0.5 s.
        self.freeze_after_load = False
        self._unfrozen = 0  # changes applied since the last freeze
        self._freeze_due = 0.0  # monotonic time of the first postponed freeze (0: none)
        # Stale consumers whose rules changed again since the background thread began to read
        # a batch of them (under the lock): what it read of them may be older, they stay.
        self._touched: set[str] = set()
        self._catch_up_began = 0.0  # monotonic time at which consumers last became stale
        # The records of the snapshot's rules, shared by every load of them (the full load,
        # a catch-up's batches, a change's consumers; see load_rules) until it holds
        # SHARED_MAX: then the background thread lets go of it and begins another.
        self._records = RecordSharing()

    # --- answering ------------------------------------------------------------------------

    def view(self, *, limit: int | None = None) -> SnapshotView | None:
        """The snapshot with every change committed until now applied; None when pull must
        query the database (see the module docstring). At most `limit` (MAX_INLINE_CHANGES)
        changes are applied here: more are left to the background thread.

        One feed read at a time per process: a pull that arrives while one is under way waits
        for it and, unless that read began after the pull arrived, for the next one, which
        then serves every pull that arrived before it began. While other pulls are under way,
        that next read waits until GATHER_SECONDS after the previous one began."""
        limit = limit or MAX_INLINE_CHANGES
        with self._lock:
            self._pulls += 1
            arrival = next(self._tickets)
        try:
            return self._view(arrival, limit)
        finally:
            with self._lock:
                self._pulls -= 1

    def _view(self, arrival: int, limit: int) -> SnapshotView | None:
        while True:
            with self._lock:
                while self._reading and self._data is not None:
                    self._read_done.wait()
                data, position = self._data, self._position
                if data is None:
                    return None
                if position.ticket > arrival:
                    return SnapshotView(data)  # a read begun after this pull arrived
                now = time.monotonic()
                if now - self._read_at > TRUSTED_SECONDS:
                    self._drop(data, "its feed position is too old to trust")
                    return None
                self._reading = True
                gather = self._read_began + GATHER_SECONDS - now if self._pulls > 1 else 0
            try:
                if gather > 0:
                    time.sleep(gather)  # the pulls arriving meanwhile wait for this read
                started = self._read_began = time.monotonic()
                changes, after = changes_since(position, limit, next(self._tickets))
            except BaseException:
                self._read_end()
                raise
            stale = listed = None
            if after is not None and any(change.everything for change in changes):
                if limit >= MAX_APPLIED_CHANGES:
                    # The background thread reads the consumers a bulk write listed (90 000
                    # names for an import of 900 000 rules) without keeping the pulls waiting:
                    # they read the feed themselves meanwhile and meet the bulk change.
                    self._read_end()
                    stale = bulk_consumers((c.id for c in changes if c.everything),
                                           _BetweenRequests())
                else:  # a pull: whether each is a bulk write with a list (not a TRUNCATE)
                    try:
                        listed = bulk_listed(changes)
                    except BaseException:
                        self._read_end()
                        raise
            with self._lock:  # the waiting pulls go on once this read is applied
                if stale is None:
                    self._read_end(locked=True)
                if self._data is not data:
                    continue  # loaded anew meanwhile: read again from its position
                if stale is not None and self._position is not position:
                    # A pull read the feed while this thread read the list: it applied these
                    # changes and more, and left the bulk writes pending. Their consumers
                    # become stale now (then leave `pending`, as in `_pending_read`); the
                    # position stays the pull's, and the next read goes on from there.
                    self._stale_add(stale)
                    data.pending = data.pending - {c.id for c in changes if c.everything}
                    continue
                if not self._apply(changes, after, limit, stale, listed):
                    return None
                self._position, self._read_at = after, started
                self._unfrozen += len(changes)
                if self._unfrozen >= FREEZE_AFTER_CHANGES and self.freeze_after_load:
                    self._wake.set()  # the background thread freezes them
                return SnapshotView(data)

    def _read_end(self, locked: bool = False) -> None:
        """This feed read is over: the pulls waiting for it go on."""
        with contextlib.nullcontext() if locked else self._lock:
            self._reading = False
            self._read_done.notify_all()

    def _apply(self, changes: list[Change], after: FeedPosition | None, limit: int,
               stale: set[str] | None = None, listed: frozenset[int] | None = None) -> bool:
        """Under the lock. False when the changes cannot be applied here: too many, or
        everything (a reload; a pull leaves them to the background thread). `stale`: the
        consumers the bulk writes among the changes listed (the background thread's read);
        `listed`: those bulk writes' ids (a pull's read: the background thread reads their
        lists, `_pending_read`). None for none listed."""
        background = limit >= MAX_APPLIED_CHANGES
        everything = any(change.everything for change in changes)
        if after is None or not background and everything and listed is None:
            if background:
                self._drop(self._data, f"more than {limit} changes at once")
            else:
                self._wake.set()
            return False
        if everything and background:
            if stale is None:
                self._drop(self._data, "everything changed (a table was emptied)")
                return False
            self._stale_add(stale)
        elif everything:
            self._data.pending = self._data.pending | listed
            self._wake.set()
        if changes:
            self._reload_keys({c.consumer for c in changes if c.consumer},
                              {c.service_instance_id for c in changes if c.service_instance_id})
            if self._data.rule_count > settings.PULL_SNAPSHOT_MAX_RULES:
                self._drop(self._data, "more than PULL_SNAPSHOT_MAX_RULES rules")
                return False
        return True

    def _drop(self, data: "_Data", reason: str) -> None:
        """Under the lock: stop answering from `data` (if still current) until the next
        load."""
        if self._data is data:
            self._data = None
            logger.info("Pull snapshot dropped until reloaded: %s", reason)
        self._wake.set()

    def _stale_add(self, consumers: set[str]) -> None:
        """Under the lock: `consumers`' rules changed in bulk; read from the database until
        the background thread has read them again (`_catch_up`)."""
        data = self._data
        if not data.stale:
            self._catch_up_began = time.monotonic()
        data.stale |= consumers
        self._touched |= consumers  # a batch being read may be older than this change
        logger.info("Pull snapshot: the rules of %d consumers changed in bulk; read again in "
                    "the background, from the database meanwhile", len(consumers))

    def _reload_keys(self, consumers: set[str], instance_ids: set[str]) -> None:
        data = self._data
        stale = consumers & data.stale
        if stale:  # read again by `_catch_up`, not before this change
            self._touched |= stale
        if fresh := consumers - stale:
            _rules_replace(data, fresh, load_rules(fresh, self._records))
        if consumers:
            named, _ = load_flexible_rules(consumers=consumers)
            _replace_groups(data, data.flexible_named, consumers, named)
        definitions = {instance_id.split("|")[1] for instance_id in instance_ids
                       if instance_id.startswith(FLEXIBLE_DEFINITION_CHANGE)}
        if definitions:
            _, by_metadata = load_flexible_rules(definitions=definitions)
            _replace_groups(data, data.flexible_by_metadata, definitions, by_metadata)
            instance_ids = instance_ids - {f"*|{definition}|*" for definition in definitions}
        if instance_ids:
            instances, locks = load_instances(instance_ids), load_reservations(instance_ids)
            for instance_id in instance_ids:
                data.instance_replace(instance_id, instances.get(instance_id))
                _replace(data.locks, instance_id, locks.get(instance_id))

    # --- loading --------------------------------------------------------------------------

    def start(self) -> None:
        """The background thread of this process (started once; after a fork, again)."""
        if self._thread is not None and self._thread.is_alive():
            return
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._stopping.clear()
                self._thread = threading.Thread(target=self._maintain, daemon=True,
                                                name="pull-snapshot")
                self._thread.start()

    def stop(self, timeout: float) -> None:
        """End the background thread after what it is doing, waiting for it up to `timeout`
        seconds (at process exit, before the database goes away; config/processes.py)."""
        self._stopping.set()
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _maintain(self) -> None:
        while not self._stopping.is_set():
            try:
                if self._data is None:
                    if time.monotonic() >= self._next_load:
                        self.load()
                else:
                    # Keeps the position fresh while no pull comes, and applies what the pulls
                    # left: too many changes for one of them, a bulk write's stale consumers.
                    with _pulls_go_first():
                        self.view(limit=MAX_APPLIED_CHANGES)
                        self._pending_read()
                        self._catch_up()
                        self._records_renew()
                    if self.freeze_after_load and (
                            self._freeze_due or self._unfrozen >= FREEZE_AFTER_CHANGES):
                        self._freeze()
                    if (data := self._data) is not None and data.stale:
                        continue  # the next batch of stale consumers, on this connection
            except Exception:  # the database may be away; pulls query it meanwhile
                logger.warning("Pull snapshot not refreshed; retrying in %s s", RETRY_SECONDS,
                               exc_info=True)
                time.sleep(RETRY_SECONDS)
            connection.close()
            if self._data is not None or time.monotonic() < self._next_load:
                self._wake.wait(REFRESH_SECONDS)
            self._wake.clear()

    def _pending_read(self) -> None:
        """Read the lists of the bulk writes pulls met (`_Data.pending`): their consumers
        become stale, read again by `_catch_up`."""
        data = self._data
        if data is None or not data.pending:
            return
        ids = data.pending
        consumers = bulk_consumers(ids, _BetweenRequests())
        with self._lock:
            if self._data is not data:
                return  # loaded anew meanwhile
            if consumers is None:  # cannot be: each was checked to have its list
                self._drop(data, "a bulk write without its list of consumers")
                return
            self._stale_add(consumers)
            data.pending = data.pending - ids  # after: pulls read `pending` before `stale`

    def _catch_up(self) -> None:
        """Read again the rules of up to CATCH_UP_CONSUMERS stale consumers (one process of a
        host at a time) and answer them from memory again, but for those whose rules changed
        again meanwhile: what was read of them may be older, they stay for a later batch."""
        with self._lock:
            data = self._data
            if data is None or not data.stale:
                return
            batch = set(itertools.islice(data.stale, CATCH_UP_CONSUMERS))
            self._touched = set()
        # As a load does: no cycle collection while it builds records (each would walk
        # every record built since the last freeze, stalling the process's pulls), and what
        # it built frozen after one collection, between requests (see `_freeze`).
        collecting = gc.isenabled() and self.freeze_after_load
        between = _BetweenRequests()
        with _one_load_per_host():
            began = time.monotonic()
            if collecting:
                gc.disable()
            try:
                rules = load_rules(batch, self._records, between)
            finally:
                if collecting:
                    gc.enable()
            with self._lock:
                if self._data is not data:
                    return  # loaded anew meanwhile
                done = batch - self._touched
                _rules_replace(data, done, rules)
                data.stale -= done
                caught_up = not data.stale
                if caught_up:
                    data.stale = set()  # a set keeps the table of its largest size
                    logger.info("Pull snapshot caught up with the bulk changes in %.2f s",
                                time.monotonic() - self._catch_up_began)
                if data.rule_count > settings.PULL_SNAPSHOT_MAX_RULES:
                    self._drop(data, "more than PULL_SNAPSHOT_MAX_RULES rules")
                self._unfrozen += len(done)
            if self.freeze_after_load:
                self._freeze(trim=caught_up)
            # Still holding the host's turn: the host's processes together catch up at most
            # 1 / (1 + CATCH_UP_PAUSE) of the time, however many of them are behind.
            worked = time.monotonic() - began - between.waited
            self._stopping.wait(worked * CATCH_UP_PAUSE)

    def _records_renew(self) -> None:
        """A sharing that holds SHARED_MAX records and groups is let go of, a few at a time
        between requests (records the snapshot no longer holds are freed with it), and
        another begins: loads share records with the snapshot's newer rules only."""
        with self._lock:
            if not self._records.full():
                return
            full, self._records = self._records, RecordSharing()
        full.release(_BetweenRequests())

    def _freeze(self, trim: bool = True, loaded: bool = False) -> None:
        """Between requests, cyclic garbage is collected (every generation: only what is not
        frozen yet) and the rest of the process's objects leave the collector's reach. An
        object of a request in progress, frozen, would stay for good once it became garbage
        (a request's objects form cycles: its request, response and serializers): the
        processes that served writes kept the rule lists of 10 to 30 bulk writes each.

        When requests in progress do not end (`between_requests`), a freeze is tried again
        after the next changes or REFRESH_SECONDS, and done anyway after
        FREEZE_WAIT_SECONDS, keeping what those requests hold. After a full load (`loaded`)
        it is done at once: until it is, every collection would walk the whole snapshot."""
        now = time.monotonic()
        self._freeze_due = self._freeze_due or now
        if not between_requests(_collect_and_freeze, REQUEST_WAIT_SECONDS):
            if not loaded and now - self._freeze_due < FREEZE_WAIT_SECONDS:
                return
            logger.info("Pull snapshot frozen while requests were in progress")
            _collect_and_freeze()
        with self._lock:
            self._unfrozen, self._freeze_due = 0, 0.0
        if trim:
            heap_trim()  # what loading and applying freed, back to the system

    def load(self) -> bool:
        """Load everything (the background thread; tests). False when there are more rules
        than PULL_SNAPSHOT_MAX_RULES (tried again after REFRESH_SECONDS × 10)."""
        with _one_load_per_host():
            return self._load()

    def _load(self) -> bool:
        started = time.monotonic()
        rules = count_rules()
        if rules > settings.PULL_SNAPSHOT_MAX_RULES:
            self._next_load = started + REFRESH_SECONDS * 10
            logger.info("Pull snapshot not loaded: %d rules, PULL_SNAPSHOT_MAX_RULES is %d",
                        rules, settings.PULL_SNAPSHOT_MAX_RULES)
            return False
        ticket = next(self._tickets)
        position = feed_start(ticket)  # before the data: what commits later is in the feed
        collecting = gc.isenabled() and self.freeze_after_load
        if collecting:  # each collection during the load would walk all it loaded so far
            gc.disable()
        records = RecordSharing()
        try:
            with _pulls_go_first():
                data = _Data(load_rules(sharing=records), load_instances(), load_reservations(),
                             load_flexible_rules())
        finally:
            if collecting:
                gc.enable()
        with self._lock:
            self._data, self._position, self._read_at = data, position, started
            self._records = records
        if self.freeze_after_load:
            self._freeze(loaded=True)
        else:
            heap_trim()
        logger.info("Pull snapshot loaded: %d rules, %d instances in %.2f s", data.rule_count,
                    len(data.instances), time.monotonic() - started)
        return True


def _collect_and_freeze() -> None:
    gc.collect()
    gc.freeze()


class _BetweenRequests:
    """Called between the steps of a catch-up batch (`load_rules`' `between`): waits while
    the process answers a request, so that the batch uses the interpreter between requests
    only, and the process's own pulls do not share it with the batch (the process that
    serves a client's connection may be busy with its pulls most of the time). It waits at
    most REQUEST_WAIT_SECONDS at a time, so a process busy without a break still catches up,
    slowly. `waited`: the seconds it waited in all."""

    def __init__(self) -> None:
        self.waited = 0.0

    def __call__(self) -> None:
        started = time.monotonic()
        if not idle_wait(REQUEST_WAIT_SECONDS):
            logger.debug("Pull snapshot: a catch-up step waited %s s for requests to end",
                         REQUEST_WAIT_SECONDS)
        self.waited += time.monotonic() - started


@contextlib.contextmanager
def _pulls_go_first() -> Iterator[None]:
    """While the block runs, the interpreter switches threads every BUSY_SWITCH_INTERVAL
    (process-wide; only this process's background thread uses it)."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(BUSY_SWITCH_INTERVAL)
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


@contextlib.contextmanager
def _one_load_per_host() -> Iterator[None]:
    """One full load at a time among the web processes of this host serving this database
    (a lock file in the temporary directory; the system releases it when a process dies).
    After a bulk change every process loads again: side by side on a small machine they took
    all its cores from the pulls, which the database answers meanwhile. Where the file
    cannot be opened, no waiting."""
    database = connection.settings_dict
    key = hashlib.sha256(f"{database.get('HOST')}:{database.get('PORT')}/"
                         f"{database.get('NAME')}".encode()).hexdigest()[:16]
    try:
        handle = open(Path(tempfile.gettempdir()) / f"serviceorchestration-snapshot-{key}.lock",
                      "a")
    except OSError:
        yield
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# The change of the pseudo instance `*|<definition>|*`: the flexible rules selecting consumers
# by metadata of that definition (orchestration/migrations/sql/0007_feed_flexible_rules.*).
FLEXIBLE_DEFINITION_CHANGE = "*|"


def _rules_replace(data: "_Data", consumers: Iterable[str], rules: dict[str, ConsumerRules],
                   ) -> None:
    """Replace the rules of `consumers` with those loaded (absent: none), keeping the count;
    each in one step (a pull reading meanwhile, unlocked, sees the old or the new rules)."""
    for consumer in consumers:
        old = data.rules.get(consumer)
        data.rule_count -= sum(map(len, old.values())) if old else 0
        if consumer in rules:
            data.rules[consumer] = rules[consumer]
            data.rule_count += sum(map(len, rules[consumer].values()))
        else:
            data.rules.pop(consumer, None)


def _replace_groups(data: "_Data", groups: dict, keys: Iterable[str], loaded: dict) -> None:
    """Replace the rule groups of `keys` in `groups` with those loaded, keeping the count; a
    group is replaced in one step (a pull reading meanwhile sees the old or the new one)."""
    for key in keys:
        data.rule_count += len(loaded.get(key, ())) - len(groups.get(key, ()))
        if key in loaded:
            groups[key] = loaded[key]
        else:
            groups.pop(key, None)


def _replace(records: dict, key: str, record: object | None) -> None:
    if record is None:
        records.pop(key, None)
    else:
        records[key] = record


pull_snapshot = PullSnapshot()  # this process's


_transaction_reads = threading.local()
_UNREAD = object()


@contextlib.contextmanager
def snapshot_in_transaction(allowed: bool = True):
    """Within the block, orchestrations inside a transaction may read the snapshot, and they
    all read one view of it, brought up to date when the first of them asks (one feed read
    for the block). For callers whose transaction has written nothing the snapshot holds
    (rules, instances, reservations), so the snapshot's committed state is what the
    transaction would read, and which hold the locks that make a change committed after
    that read come back to them (evaluation.py `subscriptions_evaluate` in subscriptions)."""
    before = (getattr(_transaction_reads, "allowed", False),
              getattr(_transaction_reads, "view", _UNREAD))
    _transaction_reads.allowed, _transaction_reads.view = allowed, _UNREAD
    try:
        yield
    finally:
        _transaction_reads.allowed, _transaction_reads.view = before


def snapshot_view() -> SnapshotView | None:
    """The snapshot for a pull (orchestration.pull.selectors.pull_source is the one caller),
    or None when the pull must query the database: inside a transaction, whose own writes the
    snapshot cannot see (but see `snapshot_in_transaction`); with PULL_SNAPSHOT=false; while
    it loads, or is dropped (too many rules or changes, too far behind)."""
    if not settings.PULL_SNAPSHOT or connection.vendor not in ("postgresql", "sqlite"):
        return None
    if connection.in_atomic_block:
        if not getattr(_transaction_reads, "allowed", False):
            return None
        if _transaction_reads.view is _UNREAD:
            pull_snapshot.start()
            _transaction_reads.view = pull_snapshot.view()
        return _transaction_reads.view
    pull_snapshot.start()
    return pull_snapshot.view()


def snapshot_start() -> None:
    """Load the snapshot of this process in the background (a web worker at start); what
    the process holds once it is loaded is left out of garbage collections."""
    if settings.PULL_SNAPSHOT:
        pull_snapshot.freeze_after_load = True
        pull_snapshot.start()


def snapshot_stop(timeout: float = 5.0) -> None:
    """End this process's background thread, if it runs (see PullSnapshot.stop)."""
    pull_snapshot.stop(timeout)
