"""Sending many MQTT deliveries at once: what delivery_send does for one, with a few
statements for the whole batch (issue 15).

One statement claims the due ones (PENDING → SENDING, stamped with one claim time: each row's
fencing token, as for a single send), one query finds for all of them whether a newer
notification of the same subscription exists or an older one is still in flight, one
heartbeat thread keeps every claim alive, the publishes go out on the process's broker
connection before any acknowledgement is awaited, and the delivered ones are recorded by one
conditional update. Expired, superseded, waiting and failed ones are recorded as delivery_send
records them. Rows another caller claimed, not due, or cancelled are left alone, so a batch
and single sends, the sweeper and the admin can act on the same rows.

HTTP deliveries are not sent here: their destinations admit sends one at a time
(notifications/destinations.py).
"""
import uuid
from collections.abc import Sequence
from datetime import timedelta

from django.db.models import F
from django.utils import timezone

from notifications.heartbeat import ClaimHeartbeat
from notifications.models import NotificationDelivery
from notifications.mqtt_publishing import mqtt_publish_many
from notifications.selectors import deliveries_neighbours
from notifications.services import (
    EXPIRED,
    SUPERSEDED,
    WAITING,
    Status,
    _record,
    attempts_failed,
)
from notifications.transport_errors import TransportError
from observability.metrics import deliveries_recorded


def deliveries_send(delivery_ids: Sequence[uuid.UUID | str]) -> dict[uuid.UUID, str]:
    """Make one attempt at each due MQTT delivery of `delivery_ids` that this call claims.
    Returns the status after the call of each claimed one (the others are not included)."""
    claimed = _claim(delivery_ids)
    if not claimed:
        return {}
    now = timezone.now()
    statuses: dict[uuid.UUID, str] = {}
    newer, older_in_flight = _neighbours(claimed)
    sendable = []
    for delivery in claimed:
        if delivery.expires_at is not None and delivery.expires_at <= now:
            statuses[delivery.id] = _record(delivery, status=Status.FAILED, error=EXPIRED,
                                            attempted=False)
        elif delivery.id in newer:
            statuses[delivery.id] = _record(delivery, status=Status.CANCELLED,
                                            error=SUPERSEDED, attempted=False)
        elif delivery.id in older_in_flight:
            statuses[delivery.id] = _record(delivery, status=Status.PENDING, error=WAITING,
                                            attempted=False,
                                            next_attempt_at=now + timedelta(seconds=1))
        else:
            sendable.append(delivery)
    if sendable:
        statuses.update(_send(sendable))
    return statuses


def _claim(delivery_ids: Sequence[uuid.UUID | str]) -> list[NotificationDelivery]:
    ids = [parsed for parsed in map(_parse_id, delivery_ids) if parsed is not None]
    now = timezone.now()
    claimed = NotificationDelivery.objects.filter(
        id__in=ids, status=Status.PENDING, next_attempt_at__lte=now, destination="",
        protocol__in=(NotificationDelivery.Protocol.MQTT, NotificationDelivery.Protocol.MQTTS),
    ).update(status=Status.SENDING, claimed_at=now, heartbeat_at=now, updated_at=now)
    if not claimed:
        return []
    return list(NotificationDelivery.objects.filter(id__in=ids, status=Status.SENDING,
                                                    claimed_at=now).order_by("created_at"))


def _neighbours(claimed: list[NotificationDelivery]) -> tuple[set[uuid.UUID], set[uuid.UUID]]:
    """The claimed deliveries that have a newer one of their subscription, and those with an
    older one still being sent (one query for all)."""
    newer, older_in_flight = set(), set()
    for delivery_id, has_newer, waits in deliveries_neighbours([d.id for d in claimed]):
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
    return newer, older_in_flight


def _send(deliveries: list[NotificationDelivery]) -> dict[uuid.UUID, str]:
    claimed_at = deliveries[0].claimed_at
    with ClaimHeartbeat([delivery.id for delivery in deliveries], claimed_at):
        outcomes = mqtt_publish_many(
            [(delivery.properties.get("topic"), delivery.payload) for delivery in deliveries])
    statuses: dict[uuid.UUID, str] = {}
    delivered = [delivery.id for delivery, error in zip(deliveries, outcomes) if error is None]
    if delivered:
        now = timezone.now()
        written = NotificationDelivery.objects.filter(
            id__in=delivered, status=Status.SENDING, claimed_at=claimed_at
        ).update(status=Status.DELIVERED, last_error="", attempts=F("attempts") + 1,
                 delivered_at=now, updated_at=now)
        if written == len(delivered):
            statuses.update(dict.fromkeys(delivered, Status.DELIVERED))
            deliveries_recorded([d for d, error in zip(deliveries, outcomes) if error is None],
                                Status.DELIVERED, now)
        else:  # cancelled or taken over meanwhile: their record is the one that counts
            statuses.update(NotificationDelivery.objects.filter(id__in=delivered)
                            .values_list("id", "status"))
    failed: dict[tuple[str, bool],
                 tuple[TransportError, list[NotificationDelivery]]] = {}
    for delivery, error in zip(deliveries, outcomes):
        if error is not None:  # one warning per distinct error (a lost broker: one for all)
            failed.setdefault((str(error), error.transient), (error, []))[1].append(delivery)
    for error, together in failed.values():
        statuses.update(attempts_failed(together, error))
    return statuses


def _parse_id(delivery_id: uuid.UUID | str) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(delivery_id))
    except ValueError:
        return None
