"""Handing committed deliveries to whatever sends them: the queue of their transport
(`make worker`'s workers), or without a broker this process's pools (notifications/inprocess.py).

Tasks are looked up by name in Celery's registry, so the outbox (notifications/outbox.py) and
the tasks that send from it (notifications/tasks.py) do not import each other. Handing over
never raises: the rows are committed, and when the broker is down (or an eager run fails) the
sweeper sends them later.
"""
import logging
import uuid
from collections.abc import Iterable, Sequence

from celery import current_app
from django.conf import settings

logger = logging.getLogger(__name__)

# The send task (notifications/tasks.py), for one delivery or a batch of one transport.
DELIVER_BATCH_TASK = "notifications.deliver_batch"
# MQTT deliveries handed over together are sent by one task per this many.
DELIVERY_BATCH = 100


def is_http(protocol: str) -> bool:
    return protocol.upper() in ("HTTP", "HTTPS")


def deliveries_enqueue(*, delivery_ids: Sequence[uuid.UUID], protocol: str,
                       countdown: float | None = None) -> bool:
    """Hand deliveries of one transport to one send task on the queue of `protocol`, run
    after `countdown` seconds when given, or to this process's pool for the transport.
    Returns whether they were handed over."""
    from notifications.inprocess import in_process_submit

    try:
        if settings.CELERY_TASK_ALWAYS_EAGER:
            in_process_submit([uuid.UUID(str(i)) for i in delivery_ids], http=is_http(protocol))
        else:
            # `<default queue>.http` or `.mqtt`, consumed by separate workers (`make worker`),
            # so that a slow HTTP endpoint cannot take the MQTT senders' slots.
            transport = "http" if is_http(protocol) else "mqtt"
            current_app.tasks[DELIVER_BATCH_TASK].apply_async(
                args=[[str(i) for i in delivery_ids]], countdown=countdown,
                queue=f"{current_app.conf.task_default_queue}.{transport}")
    except Exception:  # noqa: BLE001 - broker down, or an eager run raising
        if len(delivery_ids) == 1:
            logger.warning("Could not enqueue notification delivery %s; the sweeper will "
                           "send it", delivery_ids[0], exc_info=True)
        else:
            logger.warning("Could not enqueue %d notification deliveries; the sweeper will "
                           "send them", len(delivery_ids), exc_info=True)
        return False
    return True


def handover_groups(rows: Iterable[tuple[uuid.UUID, str]]
                    ) -> list[tuple[list[uuid.UUID], str]]:
    """(delivery ids, protocol) per send task for (id, protocol) rows: MQTT ones together,
    DELIVERY_BATCH a task; HTTP ones alone, each destination admitting its sends one by one
    (notifications/destinations.py)."""
    rows = list(rows)
    mqtt = [delivery_id for delivery_id, protocol in rows if not is_http(protocol)]
    groups = [(mqtt[start:start + DELIVERY_BATCH], "MQTT")
              for start in range(0, len(mqtt), DELIVERY_BATCH)]
    return groups + [([delivery_id], protocol) for delivery_id, protocol in rows
                     if is_http(protocol)]
