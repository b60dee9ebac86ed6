"""Sending without a broker (`make run` without CELERY_BROKER_URL). Celery then runs tasks in
the thread that enqueues them (a request, the in-process scheduler), which one silent HTTP
endpoint could hold for its timeouts; deliveries go to two small thread pools of the process
instead, one per transport, like the per-transport queues of `make worker`."""
import logging
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings
from django.db import connection

logger = logging.getLogger(__name__)

# Threads sending MQTT (one broker; a publish is short).
MQTT_THREADS = 2

_lock = threading.Lock()
_pools: dict[str, ThreadPoolExecutor] = {}
_queued: set[uuid.UUID] = set()


def in_process_submit(delivery_ids: list[uuid.UUID], *, http: bool) -> None:
    """Send the deliveries together soon on the pool of their transport. Those already
    waiting or being sent in this process are not queued twice (the sweeper offers due rows
    again)."""
    with _lock:
        batch = [delivery_id for delivery_id in delivery_ids if delivery_id not in _queued]
        _queued.update(batch)
        pool = _pool("http" if http else "mqtt")
    if not batch:
        return
    try:
        pool.submit(_sending, batch)
    except RuntimeError:
        # The process is exiting (a gunicorn worker's interpreter shutdown stops the pools):
        # the rows stay due in the outbox, and the sweeper of a live process sends them.
        with _lock:
            _queued.difference_update(batch)
        logger.info("Not sending notification deliveries %s here: this process is shutting "
                    "down; the sweeper sends them", ", ".join(map(str, batch)))


def _pool(transport: str) -> ThreadPoolExecutor:
    if transport not in _pools:
        threads = settings.NOTIFY_HTTP_CONCURRENCY if transport == "http" else MQTT_THREADS
        _pools[transport] = ThreadPoolExecutor(threads, thread_name_prefix=f"notify-{transport}")
    return _pools[transport]


def _sending(delivery_ids: list[uuid.UUID]) -> None:
    from notifications.services import deliveries_send

    try:
        deliveries_send(delivery_ids)
    except Exception:  # noqa: BLE001 - the rows stay due; the sweeper offers them again
        logger.exception("Sending notification deliveries %s failed",
                         ", ".join(map(str, delivery_ids)))
    finally:
        with _lock:
            _queued.difference_update(delivery_ids)
        connection.close()  # this pool thread's own connection
