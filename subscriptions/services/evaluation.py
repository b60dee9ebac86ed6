"""Evaluating subscriptions: which results changed since they were last pushed (steps 2 and 3
of the push path, subscriptions/services/__init__.py). The changes in the feed since the last
round flag the subscriptions of the consumers they concern (`changes_process`); the flagged
ones are evaluated in batches (`subscriptions_evaluate`, which the admin's "push now" calls
too), previewed from one view of the pull snapshot, and the changed results pushed in bulk."""
import datetime as dt
import enum
import json
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from api.operations import FLEXIBLE_STORE
from clients.serviceregistry import ServiceRegistryUnavailable
from conventions.exceptions import ExternalServerError
from database.bulk_insert import new_ids, rows_insert
from database.expressions import AnyOf
from database.statements import prepared_rows, seconds_since
from database.transaction_retry import is_conflict, retry_on_conflict
from orchestration.models import OrchestrationJob
from orchestration.pull.normalization import parse_orchestration_request
from orchestration.pull.services import PreviewSharing, orchestrate_preview
from orchestration.pull.types import OrchestrationRequest
from orchestration.snapshot.changes import (
    NEWEST_WRITTEN,
    SETTLE_TOLERANCE_SECONDS,
    TRUSTED_SECONDS,
    FeedPosition,
    changes_first_written,
    changes_since,
    feed_start,
)
from orchestration.snapshot.state import snapshot_in_transaction
from serviceregistry.polling import instances_refresh
from store.models import Rule
from subscriptions.models import EvaluationFlag, FeedCursor, Subscription
from subscriptions.services.flagging import flags_clear, flags_set
from subscriptions.services.pushing import (
    Rendering,
    pushes_record,
    subscription_push_queue,
)

logger = logging.getLogger(__name__)

# How many changes one round reads from the feed; more flag every live subscription.
FEED_READ_LIMIT = 20_000
# How many flagged subscriptions one transaction evaluates: at most EVALUATION_BATCH. A round
# that other worker processes help (`_helpers_ask`) makes its first batch FIRST_BATCH long
# and each next one twice the last: a helper evaluates the second while the first is being
# sent, so that the first subscribers of a change (a failover) are notified sooner. In one
# process alone, short batches only added their fixed cost (docs/performance.md).
EVALUATION_BATCH = 500
FIRST_BATCH = 50


class Flagged(enum.Enum):
    """What a round's flagging (`changes_flag`) found in the feed."""
    NOTHING = "nothing new"
    CHANGES = "new changes"  # their subscriptions flagged
    EVERYTHING = "everything"  # every live subscription flagged: a position to catch up


@dataclass(frozen=True)
class Settling:
    """How the flagged subscriptions stand against the burst of changes (`flags_settling`)."""
    wait: float  # seconds before evaluating them; 0: now
    pending_since: dt.datetime | None  # when the burst waiting to be taken began
    flagged: bool  # some subscription is flagged


def changes_process() -> int:
    """Turn the changes in the feed since the subscriptions' cursor into evaluation flags
    (models.py `EvaluationFlag`, one transaction), then evaluate every flagged subscription
    once. Returns how many pushes were queued. Never waits: the task flags at once and
    waits for a burst to end before it evaluates (subscriptions/tasks.py, `flags_settling`)."""
    flagged = changes_flag()
    FeedCursor.objects.filter(pk=1).update(pending_since=None)  # whatever waited is taken
    return subscriptions_evaluate_flagged(helpers=flagged is not Flagged.NOTHING)


def flags_settling() -> Settling:
    """Whether the flagged subscriptions wait for a burst of changes to end: until the newest
    change is SUBSCRIPTION_QUIET_SECONDS old, but no longer than SUBSCRIPTION_MAX_DELAY_SECONDS
    after the burst began (the cursor's `pending_since`, the oldest change flagged and not
    yet taken); ages by the database's clock, in one statement. A timer that fires up to
    SETTLE_TOLERANCE_SECONDS early still finds them settled. Flags outside a burst (a
    subscribe's, an expired subscription's) do not make a burst wait, nor start one."""
    cursor, flags = FeedCursor._meta.db_table, EvaluationFlag._meta.db_table
    since = f"SELECT pending_since FROM {cursor} WHERE id = 1"
    [(pending, newest, flagged)] = prepared_rows(
        f"SELECT {seconds_since(since)}, {seconds_since(NEWEST_WRITTEN)}, "
        f"EXISTS (SELECT 1 FROM {flags})", [])
    wait = 0.0 if newest is None else settings.SUBSCRIPTION_QUIET_SECONDS - newest
    pending_since = None
    if pending is not None:
        wait = min(wait, settings.SUBSCRIPTION_MAX_DELAY_SECONDS - pending)
        pending_since = FeedCursor.objects.filter(pk=1).values_list(
            "pending_since", flat=True).first()
    return Settling(wait if wait > SETTLE_TOLERANCE_SECONDS else 0.0, pending_since,
                    bool(flagged))


def burst_take(pending_since: dt.datetime) -> bool:
    """Mark the burst that began at `pending_since` as taken (evaluated now): whether this
    round took it (of rounds deciding at once, one does, and asks for helpers). A burst
    begun since, or taken by another round, is left as it is. A change that continues a
    burst just taken begins a new one."""
    return FeedCursor.objects.filter(pk=1, pending_since=pending_since).update(
        pending_since=None) > 0


def changes_flag() -> Flagged:
    """Flag the subscriptions concerned by the changes after the cursor (_changes_flag_locked).
    A round that finds nothing new, with a cursor read recently, ends without a transaction:
    its reads of the cursor and of the feed hold no lock past their statement, so that the
    rounds nudged by every write do not hold one table while waiting for another."""
    cursor = FeedCursor.objects.filter(pk=1).first()
    if (cursor is not None and _trusted(cursor, TRUSTED_SECONDS / 2)
            and not _read(cursor, 1)[0]):
        return Flagged.NOTHING
    return Flagged.EVERYTHING if _changes_flag_locked() else Flagged.CHANGES


@retry_on_conflict
@transaction.atomic
def _changes_flag_locked() -> bool:
    """Read the feed from the cursor (locked: concurrent rounds take turns, and each reads
    from where the last committed one left off) and flag the subscriptions of the consumers
    concerned: those whose rules changed and those whose rules point at a changed instance.
    A cursor never read, or not for TRUSTED_SECONDS (the feed may have been pruned since),
    more than FEED_READ_LIMIT changes, or a TRUNCATE flag every live subscription instead
    (returns True then)."""
    FeedCursor.objects.get_or_create(pk=1)
    cursor = FeedCursor.objects.select_for_update().get(pk=1)
    now = timezone.now()
    changes, after = _read(cursor, FEED_READ_LIMIT) if _trusted(cursor) else ([], None)
    everything = after is None or any(change.everything for change in changes)
    if everything:
        after = feed_start()  # everything committed before it is evaluated now
        due = Subscription.objects.filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
    else:
        due = Subscription.objects.filter(_concerned(changes))
    # One statement, which locks the rows in id order before inserting their flags: the
    # lock is what makes a round wait for an evaluation holding them (flagging.py).
    flags_set(due)
    if everything:  # evaluated at once: no burst waits
        cursor.pending_since = None
    elif cursor.pending_since is None:  # the burst begins with these changes
        cursor.pending_since = changes_first_written(changes)
    cursor.last_id, cursor.running, cursor.read_at = after.last_id, list(after.running), now
    cursor.save()
    return everything


def _concerned(changes) -> Q:
    """The subscriptions the changes may concern: those of the consumers whose rules changed,
    and of the instances that changed: under the simple store the consumers whose rules name
    them; under the flexible store, whose rules select instances by their attributes, every
    subscription of their service definitions (or of all definitions). A flexible rule that
    selects consumers by metadata is a change of the pseudo instance `*|<definition>|*`
    (orchestration/migrations/sql/0007_feed_flexible_rules.postgresql.sql)."""
    consumers = {change.consumer for change in changes if change.consumer}
    instance_ids = {change.service_instance_id for change in changes
                    if change.service_instance_id}
    if not instance_ids:
        return Q(target__in=consumers)
    if settings.ORCHESTRATION_STRATEGY == FLEXIBLE_STORE:
        definitions = {instance_id.split("|")[1] for instance_id in instance_ids
                       if instance_id.count("|") == 2}
        return (Q(target__in=consumers) | Q(service_definition__in=definitions)
                | Q(service_definition__isnull=True))
    # The rules' consumers as a subquery: read into a list, a fan-out's 100 000 consumers
    # came back as one statement with 100 000 parameters.
    of_instances = Q(target__in=Rule.objects.filter(service_instance_id__in=instance_ids)
                     .values("consumer"))
    return of_instances | Q(target__in=consumers) if consumers else of_instances


def _trusted(cursor: FeedCursor, seconds: float = TRUSTED_SECONDS) -> bool:
    return (cursor.read_at is not None
            and (timezone.now() - cursor.read_at).total_seconds() < seconds)


def _read(cursor: FeedCursor, limit: int):
    return changes_since(FeedPosition(cursor.last_id, tuple(cursor.running)), limit)


def subscriptions_evaluate_flagged(*, share: tuple[int, int] | None = None,
                                   helpers: bool = False) -> int:
    """Evaluate the flagged subscriptions in batches (`evaluation_batches`,
    `subscriptions_evaluate`).
    With a ServiceRegistry, the instances behind them are looked up again first (one call),
    so the evaluations read what it holds now. When the ServiceRegistry fails, the round ends
    there: the rest would wait for it too, and all stay flagged for the next round.

    With a broker, a round that has just flagged (`helpers`) more than one batch asks for
    helpers first (a round that found no new change joins the others as one more): the task
    `subscriptions.evaluate_flagged` in SUBSCRIPTION_EVALUATION_PROCESSES - 1 other worker
    processes, each with its `share` (index, of): it walks the same batches from its own
    starting point, and a batch goes to whoever locks it first (`subscriptions_evaluate`
    skips rows another holds, and rows no longer flagged), so each is evaluated once (one
    whose evaluation fails stays flagged, and the next participant to reach it tries it
    again). Each looks the instances up again in the ServiceRegistry (its answers are cached
    per process); a helper asks for no helpers itself."""
    pushed = 0
    flagged = list(EvaluationFlag.objects.order_by("pk")
                   .values_list("subscription_id", "subscription__target"))
    try:
        if flagged and settings.SERVICE_REGISTRY_URL:  # helpers too: the cache is per process
            instances_refresh({target for _, target in flagged})
    except ServiceRegistryUnavailable as error:
        logger.warning("Evaluating subscriptions needs the ServiceRegistry, which failed "
                       "(retried next round): %s", error.message)
        return 0
    ids = [subscription_id for subscription_id, _ in flagged]
    batches = evaluation_batches(len(ids))
    if share is None:
        if not (helpers and _helpers_ask(len(batches))):
            batches = evaluation_batches(len(ids), first=EVALUATION_BATCH)
    else:
        index, of = share
        first = index * len(batches) // max(of, 1)
        batches = batches[first:] + batches[:first]
    for start, end in batches:
        evaluation = subscriptions_evaluate(ids[start:end], send_here=True)
        pushed += evaluation.pushed
        if any(isinstance(error, ServiceRegistryUnavailable)
               for error in evaluation.failed.values()):
            break
    return pushed


def evaluation_batches(count: int, first: int | None = None) -> list[tuple[int, int]]:
    """The (start, end) of each batch of `count` flagged subscriptions, in order: the first
    `first` (FIRST_BATCH) long, each next one twice the last, none longer than
    EVALUATION_BATCH."""
    batches, start = [], 0
    size = min(FIRST_BATCH if first is None else first, EVALUATION_BATCH)
    while start < count:
        batches.append((start, min(start + size, count)))
        start, size = start + size, min(size * 2, EVALUATION_BATCH)
    return batches


EVALUATE_FLAGGED_TASK = "subscriptions.evaluate_flagged"
# A helper not started this soon is dropped: the round and beat's have taken the batches.
HELPER_EXPIRES_SECONDS = 10


def _helpers_ask(batches: int) -> bool:
    """With a broker, ask SUBSCRIPTION_EVALUATION_PROCESSES - 1 worker processes to share
    the evaluation of more than one batch (`subscriptions_evaluate_flagged`); whether it
    asked. Only an ask: what no helper takes, the round evaluates itself."""
    helpers = min(settings.SUBSCRIPTION_EVALUATION_PROCESSES, batches) - 1
    if (helpers < 1 or current_app.conf.task_always_eager
            or transaction.get_connection().vendor != "postgresql"):  # SQLite: one writer
        return False
    asked = 0
    try:
        for index in range(1, helpers + 1):
            current_app.send_task(EVALUATE_FLAGGED_TASK, args=[index, helpers + 1],
                                  expires=HELPER_EXPIRES_SECONDS)
            asked += 1
    except Exception:  # noqa: BLE001 - the round evaluates every batch itself then
        logger.warning("Could not ask for help evaluating subscriptions", exc_info=True)
    return asked > 0


@dataclass
class Evaluation:
    """What `subscriptions_evaluate` did: pushes queued, and why each subscription that
    failed was not (it stays flagged for the next round)."""
    pushed: int = 0
    failed: dict[uuid.UUID, Exception] = field(default_factory=dict)


@retry_on_conflict
def subscriptions_evaluate(ids: Sequence[uuid.UUID], *, force: bool = False,
                           send_here: bool = False) -> Evaluation:
    """Evaluate the subscriptions of `ids` in one transaction, with a few statements for all
    of them: lock them, preview each, and for the results that changed since they were last
    pushed (every result, when forced) write the PUSH jobs, the notifications and what was
    pushed in bulk. Expired or removed subscriptions are never notified. Unless forced, only
    flagged ones are evaluated, and a row another round holds is left to it. The flags of
    those evaluated are cleared at the end, but for those that failed or expired.

    Each flagged subscription is evaluated once by concurrent participants: the batch locks
    the subscriptions with their flags, skipping the rows another holds; a flag that another
    participant's committed evaluation deleted after this statement's snapshot can no longer
    be locked, so its subscription is left out (as the flag column's new value was).

    A preview whose committed run would differ (reservations, tokens) is pushed from that
    run (pushing.py `subscription_push_queue`), each in a savepoint, so that one failing
    (ConsumerAuthorization's tokens, the ServiceRegistry) does not stop the others.

    Outside a caller's transaction the previews read the pull snapshot: this transaction
    has written nothing it holds when they run, and it has locked the subscriptions first,
    so a change flagged after the previews waits for the commit and flags them again
    (flagging.py).

    `send_here` (the rounds of `subscriptions_evaluate_flagged`, which run in workers or in
    the in-process scheduler): a batch's few MQTT notifications are sent by this process
    right after the commit (notifications/outbox.py `deliveries_create`)."""
    now = timezone.now()
    from_snapshot = not transaction.get_connection().in_atomic_block
    evaluation, changed, unchanged, committed = Evaluation(), [], [], []
    rendering, requests, sharing = Rendering(), _Requests(), PreviewSharing()
    with transaction.atomic():
        subscriptions = _locked(ids, force)
        with snapshot_in_transaction(from_snapshot):
            for subscription in subscriptions:
                if subscription.expires_at is not None and subscription.expires_at <= now:
                    continue  # never notified; removed by the expiry task
                try:
                    preview = orchestrate_preview(
                        consumer=subscription.target, now=now, sharing=sharing,
                        request=requests(subscription.orchestration_request))
                except Exception as error:  # noqa: BLE001 - one must not stop the others
                    _failed(evaluation, subscription.id, error)
                    continue
                printed, response = rendering(preview)
                if printed == subscription.last_fingerprint and not force:
                    unchanged.append(subscription.pk)
                elif preview.commit_differs:
                    committed.append(subscription)
                else:
                    subscription.last_fingerprint = printed
                    changed.append(_Push(subscription, len(preview.results), response))
        if changed:
            _pushes_queue(changed, now=now, send_here=send_here)
        for subscription in committed:
            try:
                with transaction.atomic():
                    subscription_push_queue(subscription, now=now)
            except Exception as error:  # noqa: BLE001 - one must not stop the others
                if is_conflict(error):
                    raise  # the whole transaction is retried
                _failed(evaluation, subscription.id, error)
        # One DELETE for the batch (the committed ones' pushes cleared their own).
        flags_clear(unchanged + [push.subscription.pk for push in changed])
    evaluation.pushed = len(changed) + len([s for s in committed
                                            if s.id not in evaluation.failed])
    return evaluation


def _locked(ids: Sequence[uuid.UUID], force: bool) -> list[Subscription]:
    """The subscriptions of `ids` this transaction locks, in id order: unless forced, those
    flagged and not held by another, their flags locked too (see `subscriptions_evaluate`)."""
    rows = Subscription.objects.filter(AnyOf("id", ids)).order_by("pk")
    if force:
        return list(rows.select_for_update().only(*_EVALUATED_FIELDS))
    return list(rows.filter(evaluation_flag__isnull=False).select_related("evaluation_flag")
                .select_for_update(skip_locked=True, of=("self", "evaluation_flag"))
                .only(*_EVALUATED_FIELDS, "evaluation_flag__subscription"))  # not its time


class _Requests:
    """The parsed orchestration requests of one evaluation batch, each distinct request
    parsed once: the subscriptions of a fan-out usually ask alike, and parsing was a tenth
    of an evaluation in its profile. Parsed requests are immutable; one that does not parse
    raises each time."""

    def __init__(self) -> None:
        self._parsed: dict[str, OrchestrationRequest] = {}

    def __call__(self, data: dict | None) -> OrchestrationRequest:
        key = json.dumps(data, sort_keys=True)
        parsed = self._parsed.get(key)
        if parsed is None:
            parsed = self._parsed[key] = parse_orchestration_request(data)
        return parsed


def _failed(evaluation: Evaluation, subscription_id: uuid.UUID, error: Exception) -> None:
    if isinstance(error, ServiceRegistryUnavailable):
        logger.warning("Evaluating subscription %s needs the ServiceRegistry, which failed "
                       "(retried next round): %s", subscription_id, error.message)
    elif isinstance(error, ExternalServerError):
        # Another system the push needs (ConsumerAuthorization's tokens): the push is
        # rolled back and the subscription stays flagged; the others may not need it.
        logger.warning("Pushing subscription %s failed (retried next round): %s",
                       subscription_id, error.message)
    else:
        # One broken subscription must not stop the others; it stays flagged for the next
        # round (the error is in the log and in the job history).
        logger.exception("Evaluating subscription %s failed", subscription_id,
                         exc_info=error)
    evaluation.failed[subscription_id] = error


# What a batch evaluation reads of a subscription (the driver's parsing of the instants left
# out was a tenth of an evaluation in the fan-out's profile).
_EVALUATED_FIELDS = ("id", "owner", "target", "service_definition", "orchestration_request",
                     "notify_protocol", "notify_properties", "expires_at", "last_fingerprint")


@dataclass(frozen=True)
class _Push:
    """A result to push that committing would not change (the preview is the result)."""
    subscription: Subscription  # its `last_fingerprint` set to the result's
    result_count: int
    response: dict  # the result's response data, JSON-decoded


def _pushes_queue(pushes: list[_Push], *, now: dt.datetime, send_here: bool) -> None:
    """`subscription_push_queue` for a batch, written in bulk: the DONE PUSH jobs (rows as
    they are, no model instances), the notifications and what was pushed."""
    finished = timezone.now()
    push, done = OrchestrationJob.Type.PUSH.value, OrchestrationJob.Status.DONE.value
    rows_insert(OrchestrationJob, _JOB_COLUMNS, [
        (job_id, push, done, p.subscription.owner, p.subscription.target,
         p.subscription.service_definition, p.subscription.id, p.result_count,
         f"{p.result_count} local result(s)", now, now, finished)
        for job_id, p in zip(new_ids(len(pushes)), pushes, strict=True)])
    pushes_record([(p.subscription, p.response) for p in pushes], now=now,
                  send_here=send_here)


_JOB_COLUMNS = ("id", "type", "status", "requester", "target", "service_definition",
                "subscription_id", "result_count", "message", "created_at", "started_at",
                "finished_at")
