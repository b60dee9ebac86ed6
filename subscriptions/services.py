"""Subscriptions (SPEC §5): subscribe (upsert), unsubscribe, expiry, and pushing the result of
a subscription when it changed.

The push path, from a change to the subscriber, step by step:

1. A write that may alter results (rules, instances, interfaces, reservations ending) records
   a `CatalogChange` row in the same transaction (`store/changes.py` `change_record`); after
   the commit it asks for the task `subscriptions.process_changes` by name, a moment later so
   that a burst is handled once. Beat runs the task every 2 s as well, and without a broker
   the in-process scheduler (`config/scheduler.py`) does.
2. `changes_process()` (here) takes the pending change rows and, in one transaction, flags
   the subscriptions of the consumers they concern (`needs_evaluation`) and deletes the rows.
3. `subscriptions_evaluate_flagged()` evaluates the flagged subscriptions 500 per transaction
   (`_evaluate_batch`): locks them (skipping those another round holds), previews each
   orchestration from one view of the pull snapshot, and for each result that differs from
   the last one pushed writes, in bulk, the PUSH job, the notification
   (`notifications.outbox` `deliveries_create`, which supersedes the subscription's older
   pending one) and the new result. A subscription whose committed orchestration would
   differ from its preview (reservations, tokens) is evaluated alone
   (`subscription_evaluate`, `subscription_push_queue`).
4. After that commit the notifications are handed over: MQTT ones to one
   `notifications.deliver_batch` task per 100 (without a broker: the process's MQTT pool),
   HTTP ones to a `notifications.deliver` task each, on the queue of their transport.
5. The task claims its rows (PENDING → SENDING, fenced by the claim time), leaves out those
   with a newer notification or an older one still in flight, publishes on the process's
   broker connection (`notifications/batch_sending.py`, `notifications/transports.py`) while
   a heartbeat keeps the claims alive, and records each outcome: DELIVERED, FAILED for good,
   or PENDING again with backoff (those of a batch are retried together, by one task).
6. The sweeper (`notifications.sweep`, periodic, `notifications/sweeping.py`) hands over what
   is due and not taken: retries, lost tasks, and the claims of workers that died (their
   heartbeat stopped).
"""
import datetime as dt
import hashlib
import json
import logging
import uuid
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from rest_framework.utils.encoders import JSONEncoder

from clients.errors import PeerRefused
from clients.serviceregistry import ServiceRegistryUnavailable
from conventions.exceptions import ExternalServerError, Forbidden, InvalidParameter
from database.advisory_locks import advisory_locks
from database.bulk_insert import rows_insert
from database.transaction_retry import retry_on_conflict
from notifications.outbox import (
    Notification,
    deliveries_cancel,
    deliveries_create,
    delivery_create,
)
from orchestration.models import OrchestrationJob
from orchestration.pull.normalization import parse_orchestration_request
from orchestration.pull.response_data import orchestration_response_data
from orchestration.pull.services import orchestrate_preview, orchestrate_recorded
from orchestration.pull.types import OrchestrationResult
from orchestration.snapshot.state import snapshot_in_transaction
from serviceregistry.polling import instances_refresh
from store.models import CatalogChange, Rule
from subscriptions.models import LOCK_NAMESPACE, Subscription, identity_key
from subscriptions.notify_topics import notify_topics_claim
from subscriptions.requests import SubscribeRequest
from subscriptions.selectors import subscription_counts
from subscriptions.subscribe_statement import subscription_write_at_once

logger = logging.getLogger(__name__)

# How many outbox rows one processing round takes (the rest wait for the next round).
CHANGE_BATCH = 500
# How many flagged subscriptions one transaction evaluates.
EVALUATION_BATCH = 500


def _expiry(duration: int | None, now: dt.datetime) -> dt.datetime | None:
    return now + dt.timedelta(seconds=duration) if duration else None


def _apply(subscription: Subscription, subscribe: SubscribeRequest, now: dt.datetime,
           baseline: str) -> None:
    if (subscription.notify_protocol, subscription.notify_properties) != (
            subscribe.protocol, subscribe.properties) and not subscription._state.adding:
        deliveries_cancel(subscription_ids=[subscription.id],
                          reason="The subscription's notify interface changed")
    subscription.orchestration_request = json.loads(json.dumps(subscribe.raw_request,
                                                               cls=JSONEncoder))
    subscription.notify_protocol = subscribe.protocol
    subscription.notify_properties = subscribe.properties
    subscription.duration = subscribe.duration
    subscription.expires_at = _expiry(subscribe.duration, now)
    subscription.last_fingerprint = baseline
    subscription.needs_evaluation = True  # see subscription_baseline
    subscription.updated_at = now


def subscription_baseline(subscribe: SubscribeRequest, now: dt.datetime) -> str:
    """What a result of the subscription must differ from to be pushed, when it is made
    without `trigger`: the fingerprint of the subscriber's result at that moment, previewed
    before anything is written (outside a transaction, from the pull snapshot, brought up to
    date by the preview). The subscription is written flagged for evaluation, so that a
    change committed between this read and the write, which the change's own round may not
    have seen the subscription for, is compared with it in the next round (at most a beat
    period later) and pushed if it changed the result. "" (any result is news) when another
    system the preview needs failed: the subscribe does not depend on it."""
    try:
        preview = orchestrate_preview(consumer=subscribe.target, request=subscribe.request,
                                      now=now)
    except (ExternalServerError, PeerRefused) as error:
        logger.warning("Subscribing %s: its current result could not be previewed, so the "
                       "next evaluated result is pushed: %s", subscribe.target, error.message)
        return ""
    return fingerprint(preview)


def _ensure_room(new_by_target: Counter[str]) -> None:
    """Each subscription for a consumer (whoever owns it) is re-evaluated on every change of
    the consumer's rules or instances, so their number per target is bounded
    (docs/limits.md). Concurrent subscribes for one target may overshoot by their number; the
    bound is on work, not an exact quota."""
    limit = settings.MAX_SUBSCRIPTIONS_PER_SYSTEM
    if not new_by_target:
        return
    counts = subscription_counts(sorted(new_by_target))
    for target, adding in sorted(new_by_target.items()):
        count = counts.get(target, 0)
        if count + adding > limit:
            raise InvalidParameter(f"Too many subscriptions: {target} already has {count} "
                                   f"(at most {limit})")


def subscriptions_lock(identity_keys: list[str]) -> None:
    """Lock subscriptions by their identity key (owner, target and service definition) until
    the transaction ends (database.advisory_locks takes them in one sorted order)."""
    advisory_locks(LOCK_NAMESPACE, identity_keys)


def subscription_upsert(*, requester: str, subscribe: SubscribeRequest,
                        trigger: bool) -> tuple[uuid.UUID, bool]:
    """Create the requester's subscription, or overwrite its subscription for the same target
    and service definition in place (same id). Returns (its id, created). With `trigger`,
    the result is pushed now. The usual call is one statement
    (`subscriptions/subscribe_statement.py`); the rest takes the general path."""
    baselines = None
    if not trigger:
        now = timezone.now()
        baselines = [subscription_baseline(subscribe, now)]
        written = subscription_write_at_once(
            owner=requester, subscribe=subscribe,
            key=identity_key(requester, subscribe.target, subscribe.service_definition),
            expires_at=_expiry(subscribe.duration, now), now=now, baseline=baselines[0])
        if written is not None:
            return written
    subscription, created = subscriptions_upsert(owner=requester, subscribes=[subscribe],
                                                 trigger=trigger, baselines=baselines)[0]
    return subscription.id, created


@retry_on_conflict
def subscriptions_upsert(*, owner: str, subscribes: Sequence[SubscribeRequest],
                         trigger: bool = False, baselines: Sequence[str] | None = None,
                         ) -> list[tuple[Subscription, bool]]:
    """Create or overwrite (in place, same id) `owner`'s subscriptions, all or nothing: the
    same owner, target and service definition is the same subscription. Returns
    (subscription, created) per request, in order. Without `trigger`, each starts from
    its `subscription_baseline` (`baselines`, when the caller has read them already)."""
    keys = [identity_key(owner, s.target, s.service_definition) for s in subscribes]
    now = timezone.now()
    if trigger:
        baselines = [""] * len(subscribes)  # the push below records what was pushed
    elif baselines is None:
        baselines = [subscription_baseline(subscribe, now) for subscribe in subscribes]
    with transaction.atomic():
        # The keys' locks first: a subscription that does not exist yet cannot be
        # row-locked, and concurrent subscribes (and an unsubscribe between them) would race
        # to insert it.
        subscriptions_lock(keys)
        notify_topics_claim(subscribes)
        rows = Subscription.objects.select_for_update()
        # One key (a subscribe call): the plainer query, cheaper to compile on the hot path.
        rows = rows.filter(identity_key=keys[0]) if len(keys) == 1 else \
            rows.filter(identity_key__in=keys).order_by("pk")  # one lock order
        existing = {s.identity_key: s for s in rows}
        _ensure_room(Counter(s.target for s, key in zip(subscribes, keys)
                             if key not in existing))
        upserted = []
        for subscribe, key, baseline in zip(subscribes, keys, baselines, strict=True):
            subscription = existing.get(key)
            created = subscription is None
            if created:
                subscription = Subscription(owner=owner, target=subscribe.target,
                                            service_definition=subscribe.service_definition,
                                            identity_key=key, created_at=now)
            _apply(subscription, subscribe, now, baseline)
            subscription.save(force_insert=created)
            if trigger:
                subscription_push_queue(subscription, now=now)
            upserted.append((subscription, created))
    return upserted


@retry_on_conflict
def subscription_delete(*, requester: str, subscription_id: uuid.UUID) -> bool:
    """Remove the requester's subscription. False when there is none; Forbidden when it is
    another system's."""
    with transaction.atomic():
        subscription = Subscription.objects.select_for_update().filter(
            id=subscription_id).first()
        if subscription is None:
            return False
        if subscription.owner != requester:
            raise Forbidden(f"{requester} is not the subscription owner")
        _remove([subscription], reason="Unsubscribed")
    return True


@retry_on_conflict
def subscriptions_delete(*, requester: str, is_operator: bool,
                         ids: Sequence[uuid.UUID]) -> int:
    """Push management's unsubscribe: remove the subscriptions, all or nothing. Forbidden
    when one of them belongs to another system, unless the requester is an operator (who
    owns everything). Unknown ids are ignored. Returns how many were removed."""
    with transaction.atomic():
        found = list(Subscription.objects.select_for_update().filter(id__in=ids)
                     .order_by("pk"))  # one lock order for every multi-row writer
        for subscription in found:
            if not is_operator and subscription.owner != requester:
                raise Forbidden(f"{subscription.id} is not owned by the requester")
        _remove(found, reason="Unsubscribed")
    return len(found)


def _remove(subscriptions: Sequence[Subscription], *, reason: str) -> None:
    deliveries_cancel(subscription_ids=[s.id for s in subscriptions], reason=reason)
    Subscription.objects.filter(pk__in=[s.pk for s in subscriptions]).delete()


@retry_on_conflict
def subscriptions_remove_expired(*, now: dt.datetime | None = None) -> int:
    now = now or timezone.now()
    with transaction.atomic():
        expired = list(Subscription.objects.select_for_update().filter(expires_at__lte=now)
                       .order_by("pk"))  # one lock order for every multi-row writer
        _remove(expired, reason="Subscription expired")
    return len(expired)


def fingerprint(result: OrchestrationResult) -> str:
    """What makes two results the same for the subscriber: the results and warnings without
    the parts that differ at every run (token values, reservation end)."""
    return _fingerprint(orchestration_response_data(result))


def _fingerprint(data: dict) -> str:
    """`fingerprint` of a result's response data (which it changes: pass a copy you keep no
    use for)."""
    for entry in data["results"] or ():
        tokens = entry.pop("authorizationTokens", None)
        if tokens:
            entry["tokenScopes"] = {policy: sorted(scopes) for policy, scopes in tokens.items()}
        entry["exclusive"] = entry.pop("exclusiveUntil", None) is not None
    text = json.dumps(data, cls=JSONEncoder, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


class _Rendering:
    """The fingerprint and the response data (as JSON decodes it) of the results of one
    evaluation batch, computed once for all results that render alike: a change usually
    gives many subscribers the same answer."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[str, dict]] = {}

    def __call__(self, result: OrchestrationResult) -> tuple[str, dict]:
        text = json.dumps(orchestration_response_data(result), cls=JSONEncoder)
        rendered = self._seen.get(text)
        if rendered is None:
            rendered = self._seen[text] = (_fingerprint(json.loads(text)), json.loads(text))
        return rendered


def _message(subscription: Subscription, response: dict) -> dict:
    """The notification of `response` (a result's response data, JSON-decoded): MQTT
    subscribers get it in the reference's envelope."""
    if subscription.notify_protocol.startswith("MQTT"):
        return {"receiver": subscription.target, "sender": settings.SYSTEM_NAME,
                "payload": response}
    return response


def subscription_push_queue(subscription: Subscription, *, now: dt.datetime,
                            job: OrchestrationJob | None = None) -> None:
    """Orchestrate for real (reservations, tokens), record the PUSH job (a new one, or the
    queued `job` of push management's trigger), queue the notification and remember what
    was pushed. Runs inside the caller's transaction."""
    request = parse_orchestration_request(subscription.orchestration_request)
    if job is None:
        job = OrchestrationJob(type=OrchestrationJob.Type.PUSH, requester=subscription.owner,
                               target=subscription.target,
                               service_definition=subscription.service_definition,
                               subscription_id=subscription.id, created_at=now, started_at=now)
    result = orchestrate_recorded(job, request)
    printed, response = _Rendering()(result)
    delivery_create(subscription_id=subscription.id, protocol=subscription.notify_protocol,
                    properties=subscription.notify_properties, receiver=subscription.target,
                    payload=_message(subscription, response), expires_at=subscription.expires_at)
    subscription.last_fingerprint = printed
    subscription.last_pushed_at = now
    subscription.needs_evaluation = False
    subscription.save(update_fields=["last_fingerprint", "last_pushed_at", "needs_evaluation"])


@retry_on_conflict
def subscription_evaluate(*, subscription_id: uuid.UUID, force: bool = False) -> bool:
    """Re-run the subscription's orchestration as a preview; push when the result differs
    from the last pushed one (or when forced). Returns whether a push was queued. Expired or
    removed subscriptions are never notified."""
    now = timezone.now()
    with transaction.atomic():
        subscription = Subscription.objects.select_for_update().filter(
            id=subscription_id).first()
        if subscription is None:
            return False
        if subscription.expires_at is not None and subscription.expires_at <= now:
            return False
        request = parse_orchestration_request(subscription.orchestration_request)
        preview = orchestrate_preview(consumer=subscription.target, request=request, now=now)
        if not force and fingerprint(preview) == subscription.last_fingerprint:
            if subscription.needs_evaluation:
                subscription.needs_evaluation = False
                subscription.save(update_fields=["needs_evaluation"])
            return False
        subscription_push_queue(subscription, now=now)
    return True


def changes_process() -> int:
    """Turn pending catalog changes into `needs_evaluation` flags (one transaction), then
    evaluate every flagged subscription once. Returns how many pushes were queued."""
    _changes_flag()
    return subscriptions_evaluate_flagged()


@retry_on_conflict
@transaction.atomic
def _changes_flag() -> None:
    changes = list(CatalogChange.objects.select_for_update(skip_locked=True)
                   .order_by("id")[:CHANGE_BATCH])
    consumers = {c for change in changes for c in change.consumers}
    instance_ids = {i for change in changes for i in change.instance_ids}
    if instance_ids:
        consumers.update(Rule.objects.filter(service_instance_id__in=instance_ids)
                         .values_list("consumer", flat=True).distinct())
    if consumers:
        # Lock the rows in id order first: a bulk UPDATE locks them in whatever order
        # its plan reads them, which two concurrent rounds need not share.
        flagged = list(Subscription.objects.select_for_update().filter(target__in=consumers)
                       .order_by("pk").values_list("pk", flat=True))
        for start in range(0, len(flagged), CHANGE_BATCH):  # short IN lists
            Subscription.objects.filter(pk__in=flagged[start:start + CHANGE_BATCH]).update(
                needs_evaluation=True)
    CatalogChange.objects.filter(pk__in=[change.pk for change in changes]).delete()


def subscriptions_evaluate_flagged() -> int:
    """Evaluate the flagged subscriptions, EVALUATION_BATCH at a time (_evaluate_batch); the
    ones a batch leaves (a preview that committing would change: reservations, tokens; or
    one that failed) are evaluated one by one, each in its own transaction. With a
    ServiceRegistry, the instances behind them are looked up again first (one call), so the
    evaluations read what it holds now. When the ServiceRegistry fails, the round ends
    there: the rest would wait for it too, and all stay flagged for the next round."""
    pushed = 0
    flagged = list(Subscription.objects.filter(needs_evaluation=True).order_by("pk")
                   .values_list("id", "target"))
    try:
        if flagged and settings.SERVICE_REGISTRY_URL:
            instances_refresh({target for _, target in flagged})
    except ServiceRegistryUnavailable as error:
        logger.warning("Evaluating subscriptions needs the ServiceRegistry, which failed "
                       "(retried next round): %s", error.message)
        return 0
    ids = [subscription_id for subscription_id, _ in flagged]
    for start in range(0, len(ids), EVALUATION_BATCH):
        batch_pushed, one_by_one = _evaluate_batch(ids[start:start + EVALUATION_BATCH])
        pushed += batch_pushed
        for subscription_id in one_by_one:
            outcome = _evaluate_one(subscription_id)
            if outcome is None:
                return pushed
            pushed += outcome
    return pushed


def _evaluate_one(subscription_id: uuid.UUID) -> int | None:
    """subscription_evaluate, with one failing subscription not stopping the others; None
    when the ServiceRegistry failed (the round ends)."""
    try:
        return int(subscription_evaluate(subscription_id=subscription_id))
    except ServiceRegistryUnavailable as error:
        logger.warning("Evaluating subscription %s needs the ServiceRegistry, which failed "
                       "(retried next round): %s", subscription_id, error.message)
        return None
    except ExternalServerError as error:
        # Another system the push needs (ConsumerAuthorization's tokens): the push is
        # rolled back and the subscription stays flagged; the others may not need it.
        logger.warning("Pushing subscription %s failed (retried next round): %s",
                       subscription_id, error.message)
    except Exception:
        # One broken subscription must not stop the others; it stays flagged for the next
        # round (the error is in the log and in the job history).
        logger.exception("Evaluating subscription %s failed", subscription_id)
    return 0


@retry_on_conflict
def _evaluate_batch(ids: Sequence[uuid.UUID]) -> tuple[int, list[uuid.UUID]]:
    """Evaluate the flagged ones of `ids` in one transaction, with a few statements for all
    of them: lock them (a row another round holds is left to it), preview each, and for the
    results that changed write the PUSH jobs, the notifications and what was pushed in bulk.
    A preview whose committed run would differ (reservations, tokens) or that failed is not
    pushed here: its id is returned, for subscription_evaluate. Returns (pushes queued, those
    ids).

    Outside a caller's transaction the previews read the pull snapshot: this transaction
    has written nothing it holds when they run, and it has locked the subscriptions first,
    so a change flagged after the previews waits for the commit and flags them again."""
    now = timezone.now()
    from_snapshot = not transaction.get_connection().in_atomic_block
    one_by_one, changed, unchanged = [], [], []
    rendering = _Rendering()
    with transaction.atomic():
        subscriptions = list(Subscription.objects.select_for_update(skip_locked=True)
                             .filter(id__in=list(ids), needs_evaluation=True).order_by("pk")
                             .only(*_EVALUATED_FIELDS))
        with snapshot_in_transaction(from_snapshot):
            for subscription in subscriptions:
                if subscription.expires_at is not None and subscription.expires_at <= now:
                    continue  # never notified; removed by the expiry task
                try:
                    preview = orchestrate_preview(
                        consumer=subscription.target, now=now,
                        request=parse_orchestration_request(subscription.orchestration_request))
                except Exception:  # noqa: BLE001 - evaluated alone, with its own handling
                    one_by_one.append(subscription.id)
                    continue
                if preview.commit_differs:
                    one_by_one.append(subscription.id)
                    continue
                printed, response = rendering(preview)
                if printed == subscription.last_fingerprint:
                    unchanged.append(subscription.pk)
                else:
                    subscription.last_fingerprint = printed
                    changed.append(_Push(subscription, len(preview.results), response))
        Subscription.objects.filter(pk__in=unchanged).update(needs_evaluation=False)
        if changed:
            _pushes_queue(changed, now=now)
    return len(changed), one_by_one


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


def _pushes_queue(pushes: list[_Push], *, now: dt.datetime) -> None:
    """`subscription_push_queue` for a batch, written in bulk: the DONE PUSH jobs (rows as
    they are, no model instances), the notifications and what was pushed."""
    finished = timezone.now()
    push, done = OrchestrationJob.Type.PUSH.value, OrchestrationJob.Status.DONE.value
    rows_insert(OrchestrationJob, _JOB_COLUMNS, [
        (uuid.uuid4(), push, done, p.subscription.owner, p.subscription.target,
         p.subscription.service_definition, p.subscription.id, p.result_count,
         f"{p.result_count} local result(s)", now, now, finished) for p in pushes])
    deliveries_create([
        Notification(p.subscription.id, p.subscription.notify_protocol,
                     p.subscription.notify_properties, _message(p.subscription, p.response),
                     p.subscription.expires_at, p.subscription.target)
        for p in pushes])
    _pushed_record([p.subscription for p in pushes], now=now)


_JOB_COLUMNS = ("id", "type", "status", "requester", "target", "service_definition",
                "subscription_id", "result_count", "message", "created_at", "started_at",
                "finished_at")


def _pushed_record(subscriptions: list[Subscription], *, now: dt.datetime) -> None:
    """What was pushed (`last_fingerprint`, and `now`), for every subscription of a batch,
    which is no longer flagged: one UPDATE per distinct result (a change usually gives many
    subscribers the same one). Django's bulk_update builds a CASE per row in Python, which
    cost a quarter of a worker's time in the fan-out's profile (docs/performance.md)."""
    by_fingerprint: dict[str, list[uuid.UUID]] = defaultdict(list)
    for subscription in subscriptions:
        by_fingerprint[subscription.last_fingerprint].append(subscription.pk)
    for printed, ids in by_fingerprint.items():
        Subscription.objects.filter(pk__in=ids).update(
            last_fingerprint=printed, last_pushed_at=now, needs_evaluation=False)
