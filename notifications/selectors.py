"""Read side of notification delivery."""
import uuid
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, Exists, Min, OuterRef, Q, QuerySet
from django.utils import timezone

from database.expressions import AnyOf
from notifications.models import NotificationDelivery

Status = NotificationDelivery.Status


def deliveries_next_attempt(*, delivery_ids: list[uuid.UUID]) -> tuple[float, str] | None:
    """Seconds until the last of the deliveries' next attempts (0 when all are due now) and
    its protocol, None when none of them is waiting for one."""
    latest = max(NotificationDelivery.objects.filter(
        id__in=delivery_ids, status=Status.PENDING
    ).values_list("next_attempt_at", "protocol"), default=None)
    if latest is None:
        return None
    return max(0.0, (latest[0] - timezone.now()).total_seconds()), latest[1]


@dataclass(frozen=True)
class BacklogGroup:
    """The unfinished deliveries of one status (PENDING or SENDING) and protocol."""

    count: int
    due: int                            # PENDING and due now: waiting for a sender only
    oldest_created_at: datetime | None


def delivery_backlog(now: datetime) -> dict[tuple[str, str], BacklogGroup]:
    """The outbox's unfinished deliveries per (status, protocol), every unfinished status and
    protocol in their order, empty groups included: the metrics show every series
    (observability/metrics_state.py NOTIFICATION_BACKLOG, registered in notifications/apps.py).
    One grouped query over the status index: it reads the backlog only, however many finished
    deliveries the outbox keeps."""
    unfinished = (Status.PENDING, Status.SENDING)
    rows = (NotificationDelivery.objects.filter(status__in=unfinished)
            .order_by().values("status", "protocol")
            .annotate(count=Count("id"),
                      due=Count("id", filter=Q(status=Status.PENDING, next_attempt_at__lte=now)),
                      oldest=Min("created_at"))
            .values_list("status", "protocol", "count", "due", "oldest"))
    found = {(status, protocol): BacklogGroup(count, due, oldest)
             for status, protocol, count, due, oldest in rows}
    return {(status, protocol): found.get((status, protocol), BacklogGroup(0, 0, None))
            for status in unfinished for protocol in NotificationDelivery.Protocol.values}


# --- a subscription's own deliveries, as every push and send asks for them ---------------------
# Each is read through the subscription indexes (models.py: delivery_subscription,
# delivery_unfinished), never through the subscription's history nor the whole backlog:
# tests/notifications/test_delivery_retention.py reads their plans.


def deliveries_pending(*, subscription_ids: list[uuid.UUID]) -> QuerySet[NotificationDelivery]:
    """The subscriptions' PENDING deliveries (a new push supersedes them)."""
    return NotificationDelivery.objects.filter(AnyOf("subscription_id", subscription_ids),
                                               status=Status.PENDING)


def deliveries_newer(delivery: NotificationDelivery) -> QuerySet[NotificationDelivery]:
    """Its subscription's deliveries created after it (it would deliver an outdated result)."""
    return _newer(delivery.subscription_id, delivery.created_at)


def deliveries_neighbours(claimed_ids: list[uuid.UUID], claimed_at) -> QuerySet:
    """For a batch of deliveries claimed at `claimed_at`, (id, has a newer one, has an older
    one being sent) of each still held by that claim (not cancelled or taken over since):
    the two questions above as EXISTS of each row, which PostgreSQL
    answers through the subscription indexes whatever it thinks of the backlog. (Asked as
    one condition on the batch's subscriptions, "created after the batch's oldest" could be
    read through the created_at index: a fan-out's whole backlog at every batch.) The other
    claimed ones, being sent by this very batch, are not in flight before it."""
    subscription_id, created_at = OuterRef("subscription_id"), OuterRef("created_at")
    return (NotificationDelivery.objects.filter(AnyOf("id", claimed_ids), status=Status.SENDING,
                                                claimed_at=claimed_at).order_by()
            .annotate(has_newer=Exists(_newer(subscription_id, created_at)),
                      older_in_flight=Exists(_older_in_flight(subscription_id, created_at)
                                             .exclude(AnyOf("id", claimed_ids))))
            .values_list("id", "has_newer", "older_in_flight"))


def _newer(subscription_id, created_at) -> QuerySet[NotificationDelivery]:
    return NotificationDelivery.objects.filter(subscription_id=subscription_id,
                                               created_at__gt=created_at).order_by()


def _older_in_flight(subscription_id, created_at) -> QuerySet[NotificationDelivery]:
    return NotificationDelivery.objects.filter(
        subscription_id=subscription_id, created_at__lt=created_at,
        status=Status.SENDING).order_by()
