"""Celery tasks of the notifications app (discovered by config.celery's autodiscover_tasks)."""
import logging

from celery import Task, shared_task

logger = logging.getLogger(__name__)


@shared_task(name="notifications.deliver", bind=True, acks_late=True,
             reject_on_worker_lost=True)
def deliver_task(self: Task, delivery_id: str) -> str:
    """Send one delivery (enqueued after the commit that created it). Acknowledged only after
    it ran, and requeued if the worker dies: delivery_send claims the row, so a duplicate run
    sends nothing. After a transient failure it schedules itself for the next attempt; run
    eagerly it does not (that would retry at once, in the caller) and leaves it to the sweeper.
    Returns the delivery's status."""
    from notifications.services import delivery_send

    status = delivery_send(delivery_id)
    if status == "PENDING" and not self.request.is_eager:
        _schedule_next_attempt(delivery_id)
    return status


def _schedule_next_attempt(delivery_id: str) -> None:
    from notifications.selectors import delivery_seconds_until_due

    countdown = delivery_seconds_until_due(delivery_id=delivery_id)
    if countdown is None:
        return
    try:
        deliver_task.apply_async(args=[delivery_id], countdown=countdown)
    except Exception:  # noqa: BLE001 - the broker is down: the sweeper retries it
        logger.warning("Could not schedule the next attempt of notification delivery %s; "
                       "the sweeper will retry it", delivery_id, exc_info=True)


@shared_task(name="notifications.sweep")
def sweep_task() -> int:
    """Periodic (Celery beat, NOTIFICATION_SWEEP_INTERVAL_SECONDS): resend what the send tasks
    did not finish (lost tasks, dead workers, due retries). Returns how many were tried."""
    from notifications.services import deliveries_sweep

    return deliveries_sweep()
