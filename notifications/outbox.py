"""The outbox of notification delivery: queue notifications (create), stop them (cancel) and
send them again (the operator's retry). What sends them: notifications/services.py; the
hand-over to whatever sends them, after the commit: notifications/handover.py.
"""
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from django.db import transaction
from django.utils import timezone

from database.bulk_insert import model_rows_insert, new_ids
from notifications.handover import (
    deliveries_enqueue,
    deliveries_send_here,
    handover_groups,
    is_http,
    send_here_admits,
)
from notifications.http_delivery import http_destination
from notifications.models import NotificationDelivery
from notifications.selectors import deliveries_pending
from notifications.services import SUPERSEDED, Status

# (the enum builds a new list per call)
_PROTOCOLS = frozenset(NotificationDelivery.Protocol.values)


@dataclass(frozen=True)
class Notification:
    """What to queue for one subscriber: `payload` over the subscription's notify interface;
    `receiver` names the consumer it is for, for people reading the outbox."""

    subscription_id: uuid.UUID
    protocol: str
    properties: dict[str, Any]
    payload: Any
    expires_at: datetime | None
    receiver: str = ""


@transaction.atomic
def deliveries_create(notifications: Sequence[Notification], *,
                      send_here: bool = False) -> list[NotificationDelivery]:
    """Queue the notifications, one statement for the rows whatever their number. Call it
    inside the transaction of the change that caused them: the rows commit (or roll back)
    with that change, and the send tasks are only enqueued after the commit, so a worker
    never looks for a row that is not there yet.

    With `send_here` (a change's evaluation), the MQTT notifications are written already
    claimed by this process, which sends them itself right after the commit (handover.py
    `deliveries_send_here`): no queue, no claim to take. Unless this process holds too many
    to send already (`send_here_admits`): then they are queued like the others. Should the
    process die first, their claim expires like a dead worker's and the sweeper sends them.

    Older PENDING deliveries of the subscriptions are cancelled: a subscriber wants the
    newest result, and rapid changes then cost one push. At most one notification per
    subscription."""
    now = timezone.now()
    deliveries: list[NotificationDelivery] = []
    for delivery_id, notification in zip(new_ids(len(notifications)), notifications,
                                         strict=True):
        protocol = notification.protocol.upper()
        if protocol not in _PROTOCOLS:
            raise ValueError(f"Unsupported notify protocol: {protocol}")
        properties = {str(key).lower(): value
                      for key, value in notification.properties.items()}
        deliveries.append(NotificationDelivery(
            id=delivery_id, subscription_id=notification.subscription_id,
            receiver=notification.receiver, protocol=protocol, properties=properties,
            destination=http_destination(protocol, properties),
            payload=notification.payload, expires_at=notification.expires_at,
            next_attempt_at=now, created_at=now, updated_at=now))
    here = [d for d in deliveries if not is_http(d.protocol)] if send_here else []
    if here and not send_here_admits(len(here)):
        here = []
    for delivery in here:
        delivery.status, delivery.claimed_at, delivery.heartbeat_at = Status.SENDING, now, now
    deliveries_pending(subscription_ids=[d.subscription_id for d in deliveries]).update(
        status=Status.CANCELLED, last_error=SUPERSEDED, updated_at=now)
    model_rows_insert(deliveries)
    if here:
        transaction.on_commit(partial(deliveries_send_here, here))
    _enqueue_after_commit((delivery.id, delivery.protocol) for delivery in deliveries
                          if delivery.status == Status.PENDING)
    return deliveries


def _enqueue_after_commit(rows: Iterable[tuple[uuid.UUID, str]]) -> None:
    for delivery_ids, protocol in handover_groups(rows):
        transaction.on_commit(partial(deliveries_enqueue, delivery_ids=delivery_ids,
                                      protocol=protocol))


def deliveries_cancel(*, subscription_ids: Iterable[uuid.UUID], reason: str) -> int:
    """Stop every unfinished delivery of the subscriptions (unsubscribed, expired, notify
    interface replaced), in one statement. A send already in flight still completes, but its
    outcome is not recorded over the cancellation and it is never retried; one claimed when
    written but not yet published is not sent (services.py `deliveries_send_claimed`).
    Returns how many were cancelled."""
    return NotificationDelivery.objects.filter(
        subscription_id__in=list(subscription_ids), status__in=(Status.PENDING, Status.SENDING)
    ).update(status=Status.CANCELLED, last_error=reason, updated_at=timezone.now())


def deliveries_retry(*, delivery_ids: Iterable[uuid.UUID]) -> int:
    """Operator's "retry now": finished-but-undelivered (and waiting) deliveries become due at
    once and are enqueued after the commit. SENDING and DELIVERED rows are left alone.
    Returns how many were rescheduled."""
    now = timezone.now()
    rows = NotificationDelivery.objects.filter(
        id__in=list(delivery_ids), status__in=(Status.PENDING, Status.FAILED, Status.CANCELLED)
    )
    chosen = dict(rows.values_list("id", "protocol"))
    count = NotificationDelivery.objects.filter(id__in=chosen).update(
        status=Status.PENDING, next_attempt_at=now, claimed_at=None, updated_at=now
    )
    _enqueue_after_commit(chosen.items())
    return count
