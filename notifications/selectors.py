"""Read side of notification delivery."""
import uuid

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
