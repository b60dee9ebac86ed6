"""Handing committed deliveries to whatever sends them: the queue of their transport
(`make worker`'s workers), or without a broker this process's pools (notifications/inprocess.py).

Tasks are looked up by name in Celery's registry, so the outbox (notifications/outbox.py) and
the tasks that send from it (notifications/tasks.py) do not import each other. Handing over
never raises: the rows are committed, and when the broker is down (or an eager run fails) the
sweeper sends them later.
"""
import logging
import uuid

from celery import current_app
from django.conf import settings

logger = logging.getLogger(__name__)

DELIVER_TASK = "notifications.deliver"
DELIVER_BATCH_TASK = "notifications.deliver_batch"


def is_http(protocol: str) -> bool:
    return protocol.upper() in ("HTTP", "HTTPS")


def delivery_queue(protocol: str) -> str:
    """The queue of a transport's deliveries: `<CELERY_TASK_DEFAULT_QUEUE>.http` for HTTP(S),
    `<CELERY_TASK_DEFAULT_QUEUE>.mqtt` for MQTT(S). Separate queues, consumed by separate
    workers (`make worker`), so a slow HTTP endpoint cannot take the MQTT senders' slots."""
    transport = "http" if is_http(protocol) else "mqtt"
    return f"{current_app.conf.task_default_queue}.{transport}"


def delivery_enqueue(*, delivery_id: uuid.UUID, protocol: str,
                     countdown: float | None = None) -> bool:
    """Hand one delivery to the queue of its transport, or to this process's pool for the
    transport. Returns whether it was handed over."""
    from notifications.inprocess import in_process_submit

    try:
        if settings.CELERY_TASK_ALWAYS_EAGER:
            in_process_submit(uuid.UUID(str(delivery_id)), http=is_http(protocol))
        else:
            current_app.tasks[DELIVER_TASK].apply_async(
                args=[str(delivery_id)], kwargs={"protocol": protocol},
                queue=delivery_queue(protocol), countdown=countdown)
    except Exception:  # noqa: BLE001 - broker down, or an eager run raising
        logger.warning("Could not enqueue notification delivery %s; the sweeper will send it",
                       delivery_id, exc_info=True)
        return False
    return True


def deliveries_enqueue(*, delivery_ids: list[uuid.UUID], countdown: float | None = None) -> bool:
    """Hand MQTT deliveries to one send task (notifications/batch_sending.py), run after
    `countdown` seconds when given, or to this process's MQTT pool. Returns whether they were
    handed over."""
    from notifications.inprocess import in_process_submit_batch

    try:
        if settings.CELERY_TASK_ALWAYS_EAGER:
            in_process_submit_batch(delivery_ids)
        else:
            current_app.tasks[DELIVER_BATCH_TASK].apply_async(
                args=[[str(i) for i in delivery_ids]], queue=delivery_queue("MQTT"),
                countdown=countdown)
    except Exception:  # noqa: BLE001 - broker down, or an eager run raising
        logger.warning("Could not enqueue %d notification deliveries; the sweeper will send "
                       "them", len(delivery_ids), exc_info=True)
        return False
    return True
