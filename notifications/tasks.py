"""Celery tasks of the notifications app (discovered by config.celery's autodiscover_tasks)."""
import logging

from celery import Task, shared_task

from notifications.batch_sending import deliveries_send
from notifications.handover import deliveries_enqueue, delivery_enqueue
from notifications.retention import deliveries_remove_old
from notifications.selectors import (
    deliveries_seconds_until_due,
    delivery_protocol,
    delivery_seconds_until_due,
)
from notifications.services import delivery_send
from notifications.sweeping import deliveries_sweep

logger = logging.getLogger(__name__)


@shared_task(name="notifications.deliver", bind=True, acks_late=True,
             reject_on_worker_lost=True)
def deliver_task(self: Task, delivery_id: str, protocol: str = "") -> str:
    """Send one delivery (enqueued after the commit that created it, on the queue of its
    `protocol`). Acknowledged only after it ran, and requeued if the worker dies:
    delivery_send claims the row, so a duplicate run sends nothing. When the delivery is still
    PENDING afterwards (a transient failure, or deferred because its destination is busy or
    its circuit open) it schedules itself for the next attempt; run eagerly it does not (that
    would retry at once, in the caller) and leaves it to the sweeper. Returns the status."""
    status = delivery_send(delivery_id)
    if status == "PENDING" and not self.request.is_eager:
        _schedule_next_attempt(delivery_id, protocol)
    return status


@shared_task(name="notifications.deliver_batch", bind=True, acks_late=True,
             reject_on_worker_lost=True)
def deliver_batch_task(self: Task, delivery_ids: list[str]) -> dict[str, str]:
    """Send MQTT deliveries together (enqueued after the commit that created them; see
    notifications/batch_sending.py). Acknowledged only after it ran, and requeued if the
    worker dies: each row is claimed, so a duplicate run sends nothing twice per claim.
    Those still PENDING afterwards (a broker outage fails them together) are sent again
    together, by one task run when the last of them is due. Returns the status of each
    delivery this run claimed."""
    statuses = deliveries_send(delivery_ids)
    pending = [delivery_id for delivery_id, status in statuses.items() if status == "PENDING"]
    if pending and not self.request.is_eager:
        countdown = deliveries_seconds_until_due(delivery_ids=pending)
        if countdown is not None:
            deliveries_enqueue(delivery_ids=pending, countdown=countdown)
    return {str(delivery_id): status for delivery_id, status in statuses.items()}


def _schedule_next_attempt(delivery_id: str, protocol: str) -> None:
    countdown = delivery_seconds_until_due(delivery_id=delivery_id)
    if countdown is None:
        return
    # A task enqueued before the queues were split carries no protocol.
    protocol = protocol or delivery_protocol(delivery_id=delivery_id) or ""
    delivery_enqueue(delivery_id=delivery_id, protocol=protocol, countdown=countdown)


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
