"""Outbox retention: finished deliveries (DELIVERED, FAILED, CANCELLED) created more than
NOTIFICATION_MAX_AGE_DAYS days ago are deleted, in batches (docs/subscriptions.md, "Delivery");
unfinished ones are work still to do, whatever their age."""
import datetime as dt

from django.conf import settings

from database.retention import rows_remove_old
from notifications.models import NotificationDelivery

Status = NotificationDelivery.Status
FINISHED = (Status.DELIVERED, Status.FAILED, Status.CANCELLED)
BATCH_SIZE = 2000
MAX_BATCHES = 50  # per run: at most 100 000 rows, the rest at the next run


def deliveries_remove_old(*, now: dt.datetime | None = None, batch_size: int = BATCH_SIZE,
                          max_batches: int = MAX_BATCHES) -> int:
    """Delete the finished deliveries created before the cutoff, the oldest first (read
    through the created_at index), each batch one short statement; 0 days keeps them all.
    Returns how many were deleted."""
    return rows_remove_old(NotificationDelivery.objects.filter(status__in=FINISHED),
                           age_field="created_at",
                           max_age_days=settings.NOTIFICATION_MAX_AGE_DAYS,
                           batch_size=batch_size, max_batches=max_batches, now=now)
