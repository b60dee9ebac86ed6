"""A stand-in for Celery beat when there is no broker (`make run` without CELERY_BROKER_URL).

Tasks then run eagerly and no beat process exists, so without this the periodic tasks
(the notification sweeper above all: the only retry path in eager mode) would never run. One
daemon thread per process runs every CELERY_BEAT_SCHEDULE entry at its interval. Every
periodic task is idempotent (claims, conditional deletes), so several web processes each
running one is harmless.
"""
import logging
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connections

logger = logging.getLogger(__name__)

stop_event = threading.Event()
_lock = threading.Lock()
_thread: threading.Thread | None = None


@dataclass
class _Entry:
    name: str
    task: str
    interval: float
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    due: float


def start_in_process_scheduler() -> threading.Thread | None:
    """Start the scheduler thread when Celery runs eagerly; returns it (None when Celery has a
    broker, where `celery beat` does this job). Calling it again while it runs does nothing."""
    global _thread
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        return None
    with _lock:
        if _thread is not None and _thread.is_alive():
            return _thread
        stop_event.clear()
        entries = _entries(settings.CELERY_BEAT_SCHEDULE)
        _thread = threading.Thread(target=_run, args=(entries,), name="in-process-beat",
                                   daemon=True)
        _thread.start()
        return _thread


def stop_in_process_scheduler(timeout: float = 10.0) -> None:
    """Stop the thread after its current round (tests; a daemon thread needs no stopping)."""
    global _thread
    stop_event.set()
    with _lock:
        if _thread is not None:
            _thread.join(timeout)
        _thread = None


def _entries(schedule: dict[str, dict[str, Any]]) -> list[_Entry]:
    now, entries = time.monotonic(), []
    for name, entry in schedule.items():
        interval = _interval_seconds(entry["schedule"])
        if interval is None:
            logger.warning("Beat entry %s has no fixed interval; the in-process scheduler "
                           "skips it", name)
            continue
        entries.append(_Entry(name, entry["task"], interval, tuple(entry.get("args", ())),
                              dict(entry.get("kwargs", {})), due=now + interval))
    return entries


def _interval_seconds(schedule: Any) -> float | None:
    """Seconds for a number, a timedelta or a celery `schedule`; None for crontabs."""
    schedule = getattr(schedule, "run_every", schedule)
    if isinstance(schedule, timedelta):
        return schedule.total_seconds()
    if isinstance(schedule, (int, float)) and schedule > 0:
        return float(schedule)
    return None


def _run(entries: list[_Entry]) -> None:
    from config.celery import app as celery_app

    celery_app.loader.import_default_modules()  # the web process has not imported tasks.py
    try:
        while entries and not stop_event.is_set():
            stop_event.wait(max(0.0, min(entry.due for entry in entries) - time.monotonic()))
            if stop_event.is_set():
                break
            _run_due(celery_app, entries)
            close_old_connections()
    finally:
        connections.close_all()


def _run_due(celery_app: Any, entries: list[_Entry]) -> None:
    for entry in entries:
        if entry.due > time.monotonic():
            continue
        entry.due = time.monotonic() + entry.interval
        try:
            result = celery_app.tasks[entry.task].apply(args=entry.args, kwargs=entry.kwargs)
            if result.failed():
                logger.error("Periodic task %s (%s) failed: %r", entry.name, entry.task,
                             result.result)
        except Exception:  # noqa: BLE001 - one failing task must not stop the others
            logger.exception("Periodic task %s (%s) failed", entry.name, entry.task)
