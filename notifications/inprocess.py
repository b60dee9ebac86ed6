"""Sending from this process's own thread pools, one per transport.

- Without a broker (`make run` without CELERY_BROKER_URL) every delivery goes here: Celery
  then runs tasks in the thread that enqueues them (a request, the in-process scheduler),
  which one silent HTTP endpoint could hold for its timeouts; the pools are like the
  per-transport queues of `make worker`.
- With one too, the few MQTT deliveries that a change's evaluation wrote already claimed
  (`in_process_send_claimed`): sent by the process that evaluated them, right after its
  commit, without a trip through the queue."""
import logging
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings
from django.db import connection

logger = logging.getLogger(__name__)

# Threads sending MQTT (one broker; a publish is short).
MQTT_THREADS = 2

_lock = threading.Lock()
_pools: dict[str, ThreadPoolExecutor] = {}
_queued: set[uuid.UUID] = set()
# Every MQTT pool this process made: their threads keep database connections.
_mqtt_pools: list[ThreadPoolExecutor] = []


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
        pool.submit(_sending, batch, not http)
    except RuntimeError:
        # The process is exiting (a gunicorn worker's interpreter shutdown stops the pools):
        # the rows stay due in the outbox, and the sweeper of a live process sends them.
        with _lock:
            _queued.difference_update(batch)
        logger.info("Not sending notification deliveries %s here: this process is shutting "
                    "down; the sweeper sends them", ", ".join(map(str, batch)))


def in_process_backlog() -> int:
    """How many deliveries wait in this process's pools or are being sent by them."""
    with _lock:
        return len(_queued)


def in_process_send_claimed(deliveries: list, send: Callable[[list], None]) -> None:
    """`send(deliveries)` soon on this process's MQTT pool: deliveries it wrote already
    claimed (notifications/handover.py `deliveries_send_here`, which says how to send them).
    RuntimeError when the process is exiting."""
    with _lock:
        _queued.update(delivery.id for delivery in deliveries)
        pool = _pool("mqtt")
    try:
        pool.submit(_send_logged, send, deliveries, [delivery.id for delivery in deliveries],
                    True)
    except RuntimeError:
        with _lock:
            _queued.difference_update(delivery.id for delivery in deliveries)
        raise


def _pool(transport: str) -> ThreadPoolExecutor:
    if transport not in _pools:
        threads = settings.NOTIFY_HTTP_CONCURRENCY if transport == "http" else MQTT_THREADS
        _pools[transport] = ThreadPoolExecutor(threads, thread_name_prefix=f"notify-{transport}")
        if transport == "mqtt":
            _mqtt_pools.append(_pools[transport])
    return _pools[transport]


def in_process_connections_close(timeout: float = 10.0) -> None:
    """Have each thread of the MQTT pool close the database connection it keeps (before
    the database goes: the test session's end). Each thread takes one of the jobs and waits
    for the others, so that every thread gets one."""
    with _lock:
        pools = list(_mqtt_pools)
    for pool in pools:
        together = threading.Barrier(MQTT_THREADS)

        def close(together: threading.Barrier = together) -> None:
            connection.close()
            try:
                together.wait(timeout)
            except threading.BrokenBarrierError:
                pass

        try:
            jobs = [pool.submit(close) for _ in range(MQTT_THREADS)]
        except RuntimeError:  # shut down: its threads have ended
            continue
        for job in jobs:
            job.result(timeout)


def _sending(delivery_ids: list[uuid.UUID], keep_connection: bool) -> None:
    from notifications.services import deliveries_send

    _send_logged(deliveries_send, delivery_ids, delivery_ids, keep_connection)


def _send_logged(send, argument, delivery_ids: list[uuid.UUID],
                 keep_connection: bool) -> None:
    """`send(argument)`, logged when it fails. The thread's database connection is closed
    afterwards, or with `keep_connection` (the MQTT pool's two threads: a connection to
    PostgreSQL took 11.6 ms, a twelfth of a change's way to its subscribers) kept as a
    request or a task keeps one: dropped before and after a batch when it errored or is older
    than CONN_MAX_AGE (config/celery.py), health-checked before its next use."""
    try:
        if keep_connection:  # kept idle since an earlier batch, it may have grown too old
            connection.close_if_unusable_or_obsolete()
        send(argument)
    except Exception:  # noqa: BLE001 - the rows stay unsent; the sweeper offers them again
        logger.exception("Sending notification deliveries %s failed",
                         ", ".join(map(str, delivery_ids)))
    finally:
        with _lock:
            _queued.difference_update(delivery_ids)
        if keep_connection:  # this pool thread's own connection
            connection.close_if_unusable_or_obsolete()
        else:
            connection.close()
