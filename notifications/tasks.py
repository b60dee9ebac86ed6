"""Celery tasks of the notifications app (discovered by config.celery's autodiscover_tasks)."""
import logging

from celery import Task, shared_task

from notifications.handover import deliveries_enqueue_retry
from notifications.retention import deliveries_remove_old
from notifications.services import deliveries_send, delivery_send
from notifications.sweeping import deliveries_sweep

logger = logging.getLogger(__name__)


@shared_task(name="notifications.deliver_batch", bind=True, acks_late=True,
             reject_on_worker_lost=True)
def deliver_batch_task(self: Task, delivery_ids: list[str]) -> dict[str, str]:
    """Send deliveries of one transport (notifications/services.py `deliveries_send`).
    Acknowledged only after it ran, and requeued if the worker dies: each row is claimed, so
    a duplicate run sends nothing twice per claim. Those still PENDING afterwards (failed
    transiently or deferred) are sent again together, by one task run when the last of them
    is due; run eagerly it leaves them to the sweeper (it would retry at once, in the caller).
    Returns the status of each delivery this run claimed or deferred."""
    statuses = deliveries_send(delivery_ids)
    pending = [delivery_id for delivery_id, status in statuses.items() if status == "PENDING"]
    if pending and not self.request.is_eager:
        deliveries_enqueue_retry(pending)
    return {str(delivery_id): status for delivery_id, status in statuses.items()}


@shared_task(name="notifications.deliver", bind=True, acks_late=True,
             reject_on_worker_lost=True)
def deliver_task(self: Task, delivery_id: str, protocol: str = "") -> str:
    """One delivery, as `deliver_batch_task` sends it: the name a previous version enqueued
    each HTTP delivery under, kept so that those tasks still run after an upgrade (its
    `protocol` is no longer needed). Returns the delivery's status."""
    status = delivery_send(delivery_id)
    if status == "PENDING" and not self.request.is_eager:
        deliveries_enqueue_retry([delivery_id])
    return status


@shared_task(name="notifications.sweep")
def sweep_task() -> int:
    """Periodic (Celery beat, NOTIFICATION_SWEEP_INTERVAL_SECONDS): resend what the send tasks
    did not finish (lost tasks, dead workers, due retries). Returns how many were tried."""
    return deliveries_sweep()


@shared_task(name="notifications.remove_old_deliveries")
def remove_old_deliveries_task() -> int:
    """Periodic (Celery beat, every 5 minutes): outbox retention, NOTIFICATION_MAX_AGE_DAYS.
    Returns how many finished deliveries were deleted."""
    return deliveries_remove_old()
