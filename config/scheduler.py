"""A stand-in for Celery beat when there is no broker (`make run` without CELERY_BROKER_URL).

Tasks then run eagerly and no beat process exists, so without this the periodic tasks
(the notification sweeper above all: the only retry path in eager mode) would never run. One
daemon thread per process runs every CELERY_BEAT_SCHEDULE entry at its interval. Every
periodic task is idempotent (claims, conditional deletes), so several web processes each
running one is harmless.

`run_soon` asks the thread for one task sooner than its interval, debounced (the store's
nudge after a change: store/services/nudge.py).
"""
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connections

from store.services import nudge

logger = logging.getLogger(__name__)

stop_event = threading.Event()
_wake = threading.Event()  # set by run_soon and by stopping
_lock = threading.Lock()
_thread: threading.Thread | None = None
# Task name -> (when its first unrun nudge came, when it is due): run_soon's debounce.
_soon: dict[str, tuple[float, float]] = {}
_soon_lock = threading.Lock()


@dataclass
class _Entry:
    name: str
    task: str
    interval: float  # seconds: every entry of CELERY_BEAT_SCHEDULE is a plain number
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
        now = time.monotonic()
        entries = [_Entry(name, entry["task"], float(entry["schedule"]),
                          now + float(entry["schedule"]))
                   for name, entry in settings.CELERY_BEAT_SCHEDULE.items()]
        nudge.in_process_runner = run_soon  # the store's nudges after a change
        _thread = threading.Thread(target=_run, args=(entries,), name="in-process-beat",
                                   daemon=True)
        _thread.start()
        return _thread


def run_soon(task: str, *, quiet: float, max_delay: float) -> None:
    """Run `task` in this process's scheduler thread once it has not been asked for it for
    `quiet` seconds, and no later than `max_delay` seconds after the first request not yet
    run (a trailing debounce). Nothing when the thread does not run in this process."""
    if _thread is None or not _thread.is_alive():
        return
    now = time.monotonic()
    with _soon_lock:
        first = _soon[task][0] if task in _soon else now
        _soon[task] = (first, min(now + quiet, first + max_delay))
    _wake.set()


def stop_in_process_scheduler(timeout: float = 10.0) -> None:
    """Stop the thread after its current round (tests; a daemon thread needs no stopping)."""
    global _thread
    stop_event.set()
    _wake.set()
    with _soon_lock:
        _soon.clear()
    with _lock:
        if _thread is not None:
            _thread.join(timeout)
        _thread = None


def _run(entries: list[_Entry]) -> None:
    from config.celery import app as celery_app

    celery_app.loader.import_default_modules()  # the web process has not imported tasks.py
    try:
        while entries and not stop_event.is_set():
            _wake.wait(max(0.0, _next_due(entries) - time.monotonic()))
            _wake.clear()
            if stop_event.is_set():
                break
            _run_soon_due(celery_app)
            _run_due(celery_app, entries)
            close_old_connections()
    finally:
        connections.close_all()


def _next_due(entries: list[_Entry]) -> float:
    with _soon_lock:
        return min([entry.due for entry in entries] + [due for _, due in _soon.values()])


def _run_soon_due(celery_app: Any) -> None:
    now = time.monotonic()
    with _soon_lock:
        due = [task for task, (_, at) in _soon.items() if at <= now]
        for task in due:
            del _soon[task]
    for task in due:
        _apply(celery_app, task, task)


def _run_due(celery_app: Any, entries: list[_Entry]) -> None:
    for entry in entries:
        if entry.due > time.monotonic():
            continue
        entry.due = time.monotonic() + entry.interval
        _apply(celery_app, entry.name, entry.task)


def _apply(celery_app: Any, name: str, task: str) -> None:
    try:
        result = celery_app.tasks[task].apply()
        if result.failed():
            logger.error("Periodic task %s (%s) failed: %r", name, task, result.result)
    except Exception:  # noqa: BLE001 - one failing task must not stop the others
        logger.exception("Periodic task %s (%s) failed", name, task)
