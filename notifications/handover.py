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
DELIVERY_BATCH = 500
# At most this many deliveries wait in a process's own pools (notifications/inprocess.py)
# before those a change's evaluation writes go to the queue instead (`send_here_admits`):
# what waits longer than the sending lease would be taken over by the sweeper. A process
# sends 1 000-2 000 a second to a local broker, about 400 to one 50 ms away (paho keeps 20
# unacknowledged): 4 000 wait at most 10 s of the 15 s lease. Sent from the queue, a
# delivery costs twice the CPU (claimed and read back); at 2 000, most of a 100 000
# fan-out went that way (docs/performance.md).
SEND_HERE_MAX = 4_000


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


def deliveries_enqueue_retry(delivery_ids: list) -> None:
    """One send task for deliveries of one transport still PENDING after an attempt (failed
    transiently, or deferred), run when the last of them is due; nothing when none waits."""
    from notifications.selectors import deliveries_next_attempt

    next_attempt = deliveries_next_attempt(delivery_ids=delivery_ids)
    if next_attempt is not None:
        countdown, protocol = next_attempt
        deliveries_enqueue(delivery_ids=delivery_ids, protocol=protocol, countdown=countdown)


def send_here_admits(count: int) -> bool:
    """Whether this process may take `count` more MQTT deliveries to send itself
    (`deliveries_send_here`): while it holds fewer than SEND_HERE_MAX in all. Beyond, the
    queue's workers share them."""
    from notifications.inprocess import in_process_backlog

    return in_process_backlog() + count <= SEND_HERE_MAX


def deliveries_send_here(deliveries: Sequence) -> None:
    """Send deliveries written already claimed by this process (outbox.py
    `deliveries_create` with `send_here`) on its own MQTT pool (notifications/inprocess.py),
    DELIVERY_BATCH together: the caller goes on at once. Never raises: should the pool refuse
    them (the process is exiting), their claim expires and the sweeper sends them."""
    from notifications.inprocess import in_process_send_claimed

    deliveries = list(deliveries)
    try:
        for start in range(0, len(deliveries), DELIVERY_BATCH):
            in_process_send_claimed(deliveries[start:start + DELIVERY_BATCH], _send_claimed)
    except Exception:  # noqa: BLE001 - the rows are committed; the sweeper has them
        logger.warning("Could not send %d notification deliveries here; the sweeper will "
                       "send them once their claim expires", len(deliveries), exc_info=True)


def _send_claimed(deliveries: list) -> None:
    """On the pool's thread: send them; with a broker, those still PENDING afterwards (a
    broker outage) are sent again by one task when the last is due, as a send task does
    (notifications/tasks.py). Without one, the sweeper retries them, as every delivery."""
    from notifications.services import deliveries_send_claimed

    statuses = deliveries_send_claimed(deliveries)
    pending = [key for key, status in statuses.items() if status == "PENDING"]
    if pending and not settings.CELERY_TASK_ALWAYS_EAGER:
        deliveries_enqueue_retry(pending)


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
