"""Read side of notification delivery."""
import uuid
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, Min, Q
from django.utils import timezone

from notifications.models import NotificationDelivery


def delivery_seconds_until_due(*, delivery_id: uuid.UUID | str) -> float | None:
    """Seconds until the delivery's next attempt (0 when due now), None when it is not
    waiting for one (missing, or no longer PENDING)."""
    next_attempt_at = (
        NotificationDelivery.objects.filter(
            id=delivery_id, status=NotificationDelivery.Status.PENDING
        )
        .values_list("next_attempt_at", flat=True)
        .first()
    )
    if next_attempt_at is None:
        return None
    return max(0.0, (next_attempt_at - timezone.now()).total_seconds())


def deliveries_seconds_until_due(*, delivery_ids: list[uuid.UUID]) -> float | None:
    """Seconds until the last of the deliveries' next attempts (0 when all are due now), None
    when none of them is waiting for one."""
    latest = max(NotificationDelivery.objects.filter(
        id__in=delivery_ids, status=NotificationDelivery.Status.PENDING
    ).values_list("next_attempt_at", flat=True), default=None)
    if latest is None:
        return None
    return max(0.0, (latest - timezone.now()).total_seconds())


def delivery_protocol(*, delivery_id: uuid.UUID | str) -> str | None:
    return (NotificationDelivery.objects.filter(id=delivery_id)
            .values_list("protocol", flat=True).first())


@dataclass(frozen=True)
class BacklogGroup:
    """The unfinished deliveries of one status (PENDING or SENDING) and protocol."""

    count: int
    due: int                            # PENDING and due now: waiting for a sender only
    oldest_created_at: datetime | None


def delivery_backlog(*, now: datetime) -> dict[tuple[str, str], BacklogGroup]:
    """The outbox's unfinished deliveries per (status, protocol), those with none left out
    (the metrics, config/metrics_state.py). One grouped query over the status index: it
    reads the backlog only, however many finished deliveries the outbox keeps."""
    pending = NotificationDelivery.Status.PENDING
    rows = (NotificationDelivery.objects
            .filter(status__in=(pending, NotificationDelivery.Status.SENDING))
            .order_by().values("status", "protocol")
            .annotate(count=Count("id"),
                      due=Count("id", filter=Q(status=pending, next_attempt_at__lte=now)),
                      oldest=Min("created_at"))
            .values_list("status", "protocol", "count", "due", "oldest"))
    return {(status, protocol): BacklogGroup(count, due, oldest)
            for status, protocol, count, due, oldest in rows}
