"""Write side of notification delivery: sending one delivery exactly-once-per-claim and
recording its outcome (the outbox that queues, cancels and retries deliveries:
notifications/outbox.py; many MQTT ones at once: notifications/batch_sending.py; the sweeper
that makes delivery at least once: notifications/sweeping.py).

Lifecycle: PENDING --claim--> SENDING --> DELIVERED | FAILED | PENDING (transient failure, with
backoff). PENDING/SENDING --> CANCELLED when superseded or when the subscription goes away.
Every write of the status is a conditional update, so concurrent workers, the sweeper and the
admin can act on the same row without locks and without sending twice per claim.
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

from notifications import transports
from notifications.destinations import destination_admit, destination_record
from notifications.heartbeat import ClaimHeartbeat
from notifications.models import NotificationDelivery
from notifications.selectors import deliveries_newer, deliveries_older_in_flight
from observability.metrics import deliveries_recorded

logger = logging.getLogger(__name__)

Status = NotificationDelivery.Status
SUPERSEDED = "Superseded by a newer notification"
WAITING = "Waiting for an older notification of the subscription being sent"
EXPIRED = "Subscription expired"
LEASE_EXPIRED = "Attempt interrupted: its worker stopped renewing the sending lease"
# delivery_send's answer for an id that names no delivery (not one of the statuses).
MISSING = "MISSING"


def delivery_send(delivery_id: uuid.UUID | str) -> str:
    """Make one attempt at a due delivery and record its outcome. Returns the status after the
    call (for a delivery this call did not claim: its current status, MISSING when none).

    Safe to call any number of times, from any process: only the caller whose conditional
    update moves the row from PENDING to SENDING sends it."""
    delivery = _claim(delivery_id)
    if delivery is None:
        return _current_status(delivery_id)
    if delivery.expires_at is not None and delivery.expires_at <= timezone.now():
        return _record(delivery, status=Status.FAILED, error=EXPIRED, attempted=False)
    # A subscriber must end with the newest result: never send an outdated one, and let an
    # older send still in flight finish first.
    if deliveries_newer(delivery).exists():
        return _record(delivery, status=Status.CANCELLED, error=SUPERSEDED, attempted=False)
    if deliveries_older_in_flight(delivery).exists():
        return _record(delivery, status=Status.PENDING, error=WAITING, attempted=False,
                       next_attempt_at=timezone.now() + timedelta(seconds=1))
    try:
        with ClaimHeartbeat(delivery.id, delivery.claimed_at):
            transports.send(delivery.protocol, delivery.properties, delivery.payload)
    except transports.TransportError as exc:
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


# A destination that answers HTTP requests with something else (garbage, or by closing the
# connection: a database's, Redis's or a broker's port) is tried this many times in all, then
# the delivery fails for good (docs/subscriptions.md, Delivery).
NOT_HTTP_MAX_ATTEMPTS = 3


def _not_http_bounded(delivery: NotificationDelivery,
                      error: transports.TransportError) -> transports.TransportError:
    """`error`, made permanent when it is a non-HTTP answer at the delivery's
    NOT_HTTP_MAX_ATTEMPTS-th attempt or a later one."""
    attempt = delivery.attempts + 1
    if not (error.not_http and error.transient and attempt >= NOT_HTTP_MAX_ATTEMPTS):
        return error
    return transports.TransportError(f"{error}; given up at attempt {attempt} (at most "
                                     f"{NOT_HTTP_MAX_ATTEMPTS} for an answer that is not HTTP)",
                                     transient=False, not_http=True)


MAX_NAMED_IN_LOG = 10  # subscriptions named in one warning about a batch's failed attempts


def attempts_failed(deliveries: Sequence[NotificationDelivery],
                    error: transports.TransportError) -> dict[uuid.UUID, str]:
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


def _parse_id(delivery_id: uuid.UUID | str) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(delivery_id))
    except ValueError:
        return None


def _claim(delivery_id: uuid.UUID | str) -> NotificationDelivery | None:
    """PENDING and due → SENDING, stamped with the claim time (the fencing token of every
    later write) and a first heartbeat. None when another caller has it, it is not
    due/pending, or its HTTP destination may not take another send now (then it is deferred:
    still PENDING, due later, without an attempt counted)."""
    parsed = _parse_id(delivery_id)
    if parsed is None:
        return None
    now = timezone.now()
    due = NotificationDelivery.objects.filter(
        id=parsed, status=Status.PENDING, next_attempt_at__lte=now)
    destination = due.values_list("destination", flat=True).first()
    if destination is None:
        return None
    with transaction.atomic():
        deferral = destination_admit(key=destination, now=now) if destination else None
        if deferral is not None:
            due.update(next_attempt_at=deferral.until, last_error=deferral.reason,
                       updated_at=now)
            return None
        claimed = due.update(status=Status.SENDING, claimed_at=now, heartbeat_at=now,
                             updated_at=now)
    if claimed != 1:
        return None
    return NotificationDelivery.objects.get(id=parsed)


def _current_status(delivery_id: uuid.UUID | str) -> str:
    parsed = _parse_id(delivery_id)
    rows = NotificationDelivery.objects.filter(id=parsed) if parsed else None
    status = rows.values_list("status", flat=True).first() if rows is not None else None
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
