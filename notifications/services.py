"""Write side of notification delivery: sending deliveries exactly once per claim and
recording their outcomes (docs/subscriptions.md, "Delivery"; the outbox that queues, cancels
and retries them: notifications/outbox.py; the sweeper: notifications/sweeping.py).

Lifecycle: PENDING --claim--> SENDING --> DELIVERED | FAILED | PENDING (transient failure, with
backoff). PENDING/SENDING --> CANCELLED when superseded or when the subscription goes away.
Every write of the status is a conditional update (fenced by the claim time), so concurrent
workers, the sweeper and the admin can act on the same row without locks and without sending
twice per claim. One send covers one delivery or a batch (issue 15).
"""
import logging
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from database.expressions import AnyOf
from notifications.destinations import destination_admit, destination_record
from notifications.heartbeat import claim_heartbeat
from notifications.http_delivery import http_send
from notifications.models import NotificationDelivery
from notifications.mqtt_publishing import mqtt_publish_many
from notifications.selectors import deliveries_neighbours, deliveries_newer
from notifications.transport_errors import TransportError
from observability.metrics import deliveries_recorded

logger = logging.getLogger(__name__)

Status = NotificationDelivery.Status
SUPERSEDED = "Superseded by a newer notification"
WAITING = "Waiting for an older notification of the subscription being sent"
EXPIRED = "Subscription expired"
LEASE_EXPIRED = "Attempt interrupted: its worker stopped renewing the sending lease"
# delivery_send's answer for an id that names no delivery (not one of the statuses).
MISSING = "MISSING"
_HTTP = (NotificationDelivery.Protocol.HTTP, NotificationDelivery.Protocol.HTTPS)


def delivery_send(delivery_id: uuid.UUID | str) -> str:
    """`deliveries_send` of one delivery. Returns its status after the call (for a delivery
    this call did not claim: its current status, MISSING when none)."""
    status = deliveries_send([delivery_id]).get(_parse_id(delivery_id))
    return status or _current_status(delivery_id)


def deliveries_send(delivery_ids: Sequence[uuid.UUID | str]) -> dict[uuid.UUID, str]:
    """Make one attempt at each due delivery of `delivery_ids` that this call claims, and
    record its outcome. Returns the status after the call of each claimed one, and PENDING
    for each deferred by its HTTP destination (the others are not included).

    Safe to call any number of times, from any process: only the caller whose conditional
    update moves a row from PENDING to SENDING sends it."""
    claimed, statuses = _claim(delivery_ids)
    if claimed:
        statuses.update(_send_claimed(claimed))
    return statuses


def deliveries_send_claimed(deliveries: Sequence[NotificationDelivery]) -> dict[uuid.UUID, str]:
    """Send deliveries that were written already claimed (outbox.py `deliveries_create` with
    `send_here`: SENDING, `claimed_at` their fencing token) as `deliveries_send` sends those it
    claims. A claim more than a fifth of NOTIFICATION_SENDING_LEASE_SECONDS old (the pool
    had others to send first) is renewed first, so that the heartbeat's first renewal, a
    third of a lease later, still comes at most 8/15 of a lease after the claim
    (CLAIM_FRESH). Those no longer held (cancelled: an unsubscribe; or taken
    over by the sweeper) are not sent. Returns the status after the call of each one this
    call sent or recorded."""
    deliveries = list(deliveries)
    if not deliveries:
        return {}
    now = timezone.now()
    claimed_at = deliveries[0].claimed_at
    if ((now - claimed_at).total_seconds()
            > settings.NOTIFICATION_SENDING_LEASE_SECONDS * CLAIM_FRESH):
        with transaction.atomic():
            held = set(NotificationDelivery.objects.select_for_update().filter(
                AnyOf("id", [delivery.id for delivery in deliveries]), status=Status.SENDING,
                claimed_at=claimed_at).values_list("id", flat=True))
            NotificationDelivery.objects.filter(AnyOf("id", held)).update(heartbeat_at=now)
        deliveries = [delivery for delivery in deliveries if delivery.id in held]
    return _send_claimed(deliveries) if deliveries else {}


# deliveries_send_claimed: a claim younger than this fraction of the lease is sent without
# renewing it first. At a second (before), a backlogged pool renewed a quarter of a 10 000
# fan-out's batches: a locking read and an UPDATE of each row (docs/performance.md).
CLAIM_FRESH = 0.2


def _send_claimed(claimed: list[NotificationDelivery]) -> dict[uuid.UUID, str]:
    """One attempt at each claimed delivery still held (all claimed at one instant, by
    creation), and its outcome recorded; the status of each attempted or recorded."""
    statuses: dict[uuid.UUID, str] = {}
    now = timezone.now()
    held, newer, older_in_flight = _neighbours(claimed)
    mqtt, http = [], []
    for delivery in claimed:
        if delivery.id not in held:
            continue  # cancelled meanwhile (an unsubscribe), or taken over: not ours to send
        if delivery.expires_at is not None and delivery.expires_at <= now:
            statuses[delivery.id] = _record(delivery, status=Status.FAILED, error=EXPIRED,
                                            attempted=False)
        # A subscriber must end with the newest result: never send an outdated one, and let
        # an older send still in flight finish first.
        elif delivery.id in newer:
            statuses[delivery.id] = _record(delivery, status=Status.CANCELLED,
                                            error=SUPERSEDED, attempted=False)
        elif delivery.id in older_in_flight:
            statuses[delivery.id] = _record(delivery, status=Status.PENDING, error=WAITING,
                                            attempted=False,
                                            next_attempt_at=now + timedelta(seconds=1))
        else:
            (http if delivery.protocol in _HTTP else mqtt).append(delivery)
    if mqtt:
        statuses.update(_publish(mqtt))
    for delivery in http:
        statuses[delivery.id] = _post(delivery)
    return statuses


def _claim(delivery_ids: Sequence[uuid.UUID | str]
           ) -> tuple[list[NotificationDelivery], dict[uuid.UUID, str]]:
    """PENDING and due → SENDING, stamped with the claim time (the fencing token of every
    later write) and a first heartbeat: those without a destination (MQTT) in one statement,
    each HTTP one when its destination may take another send now (else it is deferred: still
    PENDING, due later, without an attempt counted). Returns the claimed rows by creation,
    and PENDING for each deferred one."""
    ids = [parsed for parsed in map(_parse_id, delivery_ids) if parsed is not None]
    now = timezone.now()
    due = NotificationDelivery.objects.filter(AnyOf("id", ids), status=Status.PENDING,
                                              next_attempt_at__lte=now)
    claim = {"status": Status.SENDING, "claimed_at": now, "heartbeat_at": now,
             "updated_at": now}
    claimed = due.filter(destination="").update(**claim)
    deferred: dict[uuid.UUID, str] = {}
    for delivery_id, destination in due.exclude(destination="").values_list("id",
                                                                            "destination"):
        with transaction.atomic():
            one = due.filter(id=delivery_id)
            deferral = destination_admit(key=destination, now=now)
            if deferral is not None:
                one.update(next_attempt_at=deferral.until, last_error=deferral.reason,
                           updated_at=now)
                deferred[delivery_id] = Status.PENDING
            else:
                claimed += one.update(**claim)
    if not claimed:
        return [], deferred
    return list(NotificationDelivery.objects.filter(AnyOf("id", ids), status=Status.SENDING,
                                                    claimed_at=now).order_by("created_at")), \
        deferred


def _neighbours(claimed: list[NotificationDelivery]
                ) -> tuple[set[uuid.UUID], set[uuid.UUID], set[uuid.UUID]]:
    """The claimed deliveries still held by their claim, those that have a newer one of their
    subscription, and those with an older one still being sent (one query for all)."""
    held, newer, older_in_flight = set(), set(), set()
    for delivery_id, has_newer, waits in deliveries_neighbours([d.id for d in claimed],
                                                               claimed[0].claimed_at):
        held.add(delivery_id)
        if has_newer:
            newer.add(delivery_id)
        elif waits:
            older_in_flight.add(delivery_id)
    by_subscription: dict[uuid.UUID, list[NotificationDelivery]] = {}
    for delivery in claimed:  # `claimed` is by created_at
        by_subscription.setdefault(delivery.subscription_id, []).append(delivery)
    for deliveries in by_subscription.values():  # two of one subscription in this batch,
        for delivery in deliveries[:-1]:  # even created at the same instant: the last goes
            newer.add(delivery.id)
    return held, newer, older_in_flight


def _publish(deliveries: list[NotificationDelivery]) -> dict[uuid.UUID, str]:
    """Publish the claimed MQTT deliveries together and record their outcomes."""
    claimed_at = deliveries[0].claimed_at
    # The claims are kept alive until the outcomes are written: recording a failed batch
    # writes its rows one by one.
    with claim_heartbeat([delivery.id for delivery in deliveries], claimed_at):
        outcomes = mqtt_publish_many(
            [(delivery.properties.get("topic"), delivery.payload) for delivery in deliveries])
        return _published(deliveries, outcomes, claimed_at)


def _published(deliveries: list[NotificationDelivery], outcomes: list,
               claimed_at: datetime) -> dict[uuid.UUID, str]:
    """Record the outcomes of `_publish`: the DELIVERED ones in one statement, the failed
    ones per distinct error."""
    statuses: dict[uuid.UUID, str] = {}
    sent = [d for d, error in zip(deliveries, outcomes, strict=True) if error is None]
    delivered = [delivery.id for delivery in sent]
    if delivered:
        now = timezone.now()
        written = NotificationDelivery.objects.filter(
            AnyOf("id", delivered), status=Status.SENDING, claimed_at=claimed_at
        ).update(status=Status.DELIVERED, last_error="", attempts=F("attempts") + 1,
                 delivered_at=now, updated_at=now)
        if written == len(delivered):
            statuses.update(dict.fromkeys(delivered, Status.DELIVERED))
            deliveries_recorded(sent, Status.DELIVERED, now)
        else:  # cancelled or taken over meanwhile: their record is the one that counts
            statuses.update(NotificationDelivery.objects.filter(AnyOf("id", delivered))
                            .values_list("id", "status"))
    failed: dict[tuple[str, bool], tuple[TransportError, list[NotificationDelivery]]] = {}
    for delivery, error in zip(deliveries, outcomes, strict=True):
        if error is not None:  # one warning per distinct error (a lost broker: one for all)
            failed.setdefault((str(error), error.transient), (error, []))[1].append(delivery)
    for error, together in failed.values():
        statuses.update(attempts_failed(together, error))
    return statuses


def _post(delivery: NotificationDelivery) -> str:
    """Send one claimed HTTP(S) delivery, feed its destination's breaker, record it."""
    try:
        with claim_heartbeat([delivery.id], delivery.claimed_at):
            http_send(protocol=delivery.protocol, properties=delivery.properties,
                      payload=delivery.payload)
    except TransportError as exc:
        exc = _not_http_bounded(delivery, exc)
        # What retrying may cure (silence, refused connections, 5xx, 408/429) counts against
        # the destination; a permanent refusal shows it up and answering.
        destination_record(key=delivery.destination, reachable=not exc.transient,
                           now=timezone.now())
        return attempts_failed([delivery], exc)[delivery.id]
    except Exception as exc:  # noqa: BLE001 - a bug must not drop the notification
        logger.exception("Unexpected error sending notification delivery %s", delivery.id)
        return _record_transient_failure(delivery, error=f"Unexpected error: {exc!r}")
    destination_record(key=delivery.destination, reachable=True, now=timezone.now())
    return _record(delivery, status=Status.DELIVERED)


def _parse_id(delivery_id: uuid.UUID | str) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(delivery_id))
    except ValueError:
        return None


# A destination that answers HTTP requests with something else (garbage, or by closing the
# connection: a database's, Redis's or a broker's port) is tried this many times in all, then
# the delivery fails for good (docs/subscriptions.md, Delivery).
NOT_HTTP_MAX_ATTEMPTS = 3


def _not_http_bounded(delivery: NotificationDelivery, error: TransportError) -> TransportError:
    """`error`, made permanent when it is a non-HTTP answer at the delivery's
    NOT_HTTP_MAX_ATTEMPTS-th attempt or a later one."""
    attempt = delivery.attempts + 1
    if not (error.not_http and error.transient and attempt >= NOT_HTTP_MAX_ATTEMPTS):
        return error
    return TransportError(f"{error}; given up at attempt {attempt} (at most "
                          f"{NOT_HTTP_MAX_ATTEMPTS} for an answer that is not HTTP)",
                          transient=False, not_http=True)


MAX_NAMED_IN_LOG = 10  # subscriptions named in one warning about a batch's failed attempts


def attempts_failed(deliveries: Sequence[NotificationDelivery],
                    error: TransportError) -> dict[uuid.UUID, str]:
    """Record the attempts of `deliveries` (claimed by the caller) that failed with `error`,
    after one WARNING naming their subscriptions and consumers: a transient error is retried
    later (unless a newer result supersedes it), a permanent one fails the delivery. Returns
    each one's status afterwards."""
    named = ", ".join(f"subscription {delivery.subscription_id} (consumer "
                      f"{delivery.receiver or '?'}, attempt {delivery.attempts + 1})"
                      for delivery in deliveries[:MAX_NAMED_IN_LOG])
    more = len(deliveries) - MAX_NAMED_IN_LOG
    outcome = "will be retried" if error.transient else "given up"
    if len(deliveries) == 1:
        logger.warning("Notification delivery %s to %s failed, %s: %s", deliveries[0].id,
                       named, outcome, error)
    else:
        logger.warning("%d notification deliveries failed, %s: %s; to %s%s", len(deliveries),
                       outcome, error, named, f" and {more} more" if more > 0 else "")
    if error.transient:
        return {delivery.id: _record_transient_failure(delivery, error=str(error))
                for delivery in deliveries}
    return {delivery.id: _record(delivery, status=Status.FAILED, error=str(error))
            for delivery in deliveries}


def _current_status(delivery_id: uuid.UUID | str) -> str:
    parsed = _parse_id(delivery_id)
    status = parsed and NotificationDelivery.objects.filter(id=parsed).values_list(
        "status", flat=True).first()
    if status is None:
        logger.info("Notification delivery %s does not exist; nothing to send", delivery_id)
        return MISSING
    return status


def _record(delivery: NotificationDelivery, *, status: str, error: str = "",
            attempted: bool = True, next_attempt_at: datetime | None = None) -> str:
    """Write the outcome of our claim, unless the row was meanwhile cancelled or re-claimed
    after our lease ran out (then theirs is the record that counts). Returns the status
    the row has afterwards."""
    now = timezone.now()
    # A destination's answer may end up in the error: PostgreSQL text cannot hold NUL.
    changes: dict[str, Any] = {"status": status, "last_error": error.replace("\x00", "\\x00"),
                               "updated_at": now}
    if attempted:
        changes["attempts"] = F("attempts") + 1
    if status == Status.DELIVERED:
        changes["delivered_at"] = now
    if next_attempt_at is not None:
        changes["next_attempt_at"] = next_attempt_at
    written = NotificationDelivery.objects.filter(
        id=delivery.id, status=Status.SENDING, claimed_at=delivery.claimed_at
    ).update(**changes)
    if written:
        deliveries_recorded([delivery], status, now, attempted=attempted)
        return status
    logger.info("Notification delivery %s changed while being sent; outcome %s not recorded",
                delivery.id, status)
    return _current_status(delivery.id)


def _record_transient_failure(delivery: NotificationDelivery, *, error: str) -> str:
    """Back to PENDING with exponential backoff, unless a newer notification for the same
    subscription exists: retrying this one could then deliver an outdated result last."""
    if deliveries_newer(delivery).exists():
        return _record(delivery, status=Status.CANCELLED, error=f"{SUPERSEDED} ({error})")
    delay = retry_delay_seconds(attempts=delivery.attempts + 1)
    return _record(delivery, status=Status.PENDING, error=error,
                   next_attempt_at=timezone.now() + timedelta(seconds=delay))


def retry_delay_seconds(*, attempts: int) -> int:
    """Backoff after the `attempts`-th failed attempt: base, 2×base, 4×base, … up to the max."""
    base = settings.NOTIFICATION_RETRY_BASE_SECONDS
    return min(base * 2 ** max(attempts - 1, 0), settings.NOTIFICATION_RETRY_MAX_SECONDS)
