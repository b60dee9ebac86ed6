"""Writing subscriptions (SPEC §5): subscribe as an upsert, unsubscribe (the consumer's and
push management's) and removing the expired ones. Each subscription is locked by its identity
key first, its MQTT notify topic claimed, and its pending notifications cancelled when it
goes or its notify interface changes."""
import datetime as dt
import json
import logging
import uuid
from collections import Counter
from collections.abc import Sequence

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from rest_framework.utils.encoders import JSONEncoder

from conventions.exceptions import ExternalServerError, Forbidden, InvalidParameter
from database.advisory_locks import advisory_locks_statement
from database.bulk_insert import model_rows_upsert, saved
from database.statements import statements_rows
from database.transaction_retry import retry_on_conflict
from notifications.outbox import deliveries_cancel
from orchestration.pull.services import orchestrate_preview
from clients.errors import PeerRefused
from subscriptions.models import LOCK_NAMESPACE, Subscription, identity_key
from subscriptions.notify_topics import (
    TOPIC_LOCK_NAMESPACE,
    notify_topics_check,
    notify_topics_wanted,
)
from subscriptions.requests import SubscribeRequest
from subscriptions.selectors import (
    subscriptions_locked,
    subscriptions_locked_statement,
    topic_users_read,
    topic_users_statement,
)
from subscriptions.services.flagging import flags_set_statement
from subscriptions.services.pushing import fingerprint, subscription_push_queue

logger = logging.getLogger(__name__)


def _apply(subscription: Subscription, subscribe: SubscribeRequest, now: dt.datetime,
           baseline: str) -> None:
    """Set what a subscribe writes (`_OVERWRITTEN`) from the request."""
    subscription.orchestration_request = json.loads(json.dumps(subscribe.raw_request,
                                                               cls=JSONEncoder))
    subscription.notify_protocol = subscribe.protocol
    subscription.notify_properties = subscribe.properties
    subscription.duration = subscribe.duration
    subscription.expires_at = (now + dt.timedelta(seconds=subscribe.duration)
                               if subscribe.duration else None)
    subscription.last_fingerprint = baseline
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


def _ensure_room(new_by_target: Counter[str], counts: dict[str, int]) -> None:
    """Each subscription for a consumer (whoever owns it) is re-evaluated on every change of
    the consumer's rules or instances, so their number per target is bounded
    (docs/limits.md). Concurrent subscribes for one target may overshoot by their number; the
    bound is on work, not an exact quota."""
    limit = settings.MAX_SUBSCRIPTIONS_PER_SYSTEM
    for target, adding in sorted(new_by_target.items()):
        count = counts.get(target, 0)
        if count + adding > limit:
            raise InvalidParameter(f"Too many subscriptions: {target} already has {count} "
                                   f"(at most {limit})")


def subscription_upsert(*, requester: str, subscribe: SubscribeRequest,
                        trigger: bool) -> tuple[uuid.UUID, bool]:
    """Create the requester's subscription, or overwrite its subscription for the same target
    and service definition in place (same id). Returns (its id, created). With `trigger`,
    the result is pushed now."""
    [(subscription, created)] = subscriptions_upsert(owner=requester, subscribes=[subscribe],
                                                     trigger=trigger)
    return subscription.id, created


# What overwriting a subscription changes (`_apply`); its identity, creation and last push stay.
_OVERWRITTEN = ("orchestration_request", "notify_protocol", "notify_properties", "duration",
                "expires_at", "last_fingerprint", "updated_at")


@retry_on_conflict
def subscriptions_upsert(*, owner: str, subscribes: Sequence[SubscribeRequest],
                         trigger: bool = False) -> list[tuple[Subscription, bool]]:
    """Create or overwrite (in place, same id) `owner`'s subscriptions, all or nothing: the
    same owner, target and service definition is the same subscription. Returns
    (subscription, created) per request, in order. Without `trigger`, each starts from
    its `subscription_baseline`.

    The write does not depend on what is read (an overwrite sets the request's fields, an
    insert the rest too), so the locks, the reads and the write go in one round trip
    (database.statements.statements_rows; docs/performance.md, "Subscribe in one round
    trip"); a refusal found in the reads then rolls the write back with the transaction."""
    keys = [identity_key(owner, s.target, s.service_definition) for s in subscribes]
    topics = notify_topics_wanted(subscribes)
    now = timezone.now()
    if trigger:
        baselines = [""] * len(subscribes)  # the push below records what was pushed
    else:
        baselines = [subscription_baseline(subscribe, now) for subscribe in subscribes]
    written = []
    for subscribe, key, baseline in zip(subscribes, keys, baselines, strict=True):
        subscription = Subscription(owner=owner, target=subscribe.target,
                                    service_definition=subscribe.service_definition,
                                    identity_key=key, created_at=now)
        _apply(subscription, subscribe, now, baseline)
        written.append(subscription)
    # The keys' and topics' locks first (until the transaction ends): a subscription that
    # does not exist yet cannot be row-locked, and concurrent subscribes (and an unsubscribe
    # between them) would race to insert it or to claim one free topic. Each statement
    # after them reads with a snapshot of its own, taken once they are held.
    locks = advisory_locks_statement(LOCK_NAMESPACE, keys, (TOPIC_LOCK_NAMESPACE, topics))
    statements = [subscriptions_locked_statement(keys),
                  topic_users_statement(topics, [s.target for s in subscribes]),
                  model_rows_upsert(written, unique="identity_key", update=_OVERWRITTEN)]
    if not trigger:  # written flagged (see subscription_baseline); a push clears the flag
        statements.append(flags_set_statement(keys))
    with transaction.atomic():
        rows = statements_rows([locks, *statements] if locks else statements)
        locked_rows, user_rows = rows[1:3] if locks else rows[:2]
        existing = {s.identity_key: s for s in subscriptions_locked(locked_rows)}
        users, counts = topic_users_read(user_rows)
        notify_topics_check(topics, users)
        _ensure_room(Counter(s.target for s, key in zip(subscribes, keys, strict=True)
                             if key not in existing), counts)
        upserted = []
        for subscribe, key, subscription in zip(subscribes, keys, written, strict=True):
            if (before := existing.get(key)) is not None:
                if (before.notify_protocol, before.notify_properties) != (
                        subscribe.protocol, subscribe.properties):
                    deliveries_cancel(subscription_ids=[before.id],
                                      reason="The subscription's notify interface changed")
                _apply(before, subscribe, now, subscription.last_fingerprint)
                subscription = before
            upserted.append((subscription, before is None))
        saved([subscription for subscription, created in upserted if created])
        if trigger:
            for subscription, _ in upserted:
                subscription_push_queue(subscription, now=now)
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

