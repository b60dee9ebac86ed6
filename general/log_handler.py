"""Log records at LOG_DB_LEVEL and above, also stored in the database (`general.models.LogEntry`)
for the logs query; what it guarantees: docs/general-management.md, "Logs in the database".

The code that logs must never fail or wait because of this: `emit` only formats the record
and queues it; one daemon thread per process (started on the first record, so after a fork)
writes with its own connection, outside any request transaction. Losses are counted
(`dropped`) and reported once on stderr, directly (logging them would loop).

This module is imported when logging is configured, before the apps are ready: it imports
models only inside the writer thread.
"""
import contextlib
import datetime as dt
import logging
import os
import queue
import sys
import threading
import time
import traceback
import weakref

from general.log_columns import MAX_LOGGER_LENGTH
from general.severities import RANKS, severity_of

MAX_MESSAGE_LENGTH = 10_000  # longer messages (and tracebacks) are cut, ending in "…"
QUEUE_CAPACITY = 10_000
BATCH_SIZE = 100
# The logger (and its children) whose records the writing itself causes (SQL and its errors).
IGNORED_LOGGER = "django.db.backends"

_all_handlers: "weakref.WeakSet[DatabaseLogHandler]" = weakref.WeakSet()
_writer_thread = threading.local()  # `active` in every writer thread, of any handler


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def pending_entry(record: logging.LogRecord) -> dict:
    """The LogEntry fields of a record: its message with the request id in front (when it was
    logged while serving a request), its traceback, both cut to MAX_MESSAGE_LENGTH."""
    message = record.getMessage()
    request_id = getattr(record, "request_id", "-")
    if request_id and request_id != "-":
        message = f"[{request_id}] {message}"
    exception = None
    if record.exc_info and record.exc_info[0] is not None:
        exception = "".join(traceback.format_exception(*record.exc_info))
    elif record.exc_text:
        exception = record.exc_text
    if record.stack_info:
        exception = "\n".join(filter(None, [exception, record.stack_info]))
    severity = severity_of(record.levelno)
    return {"entry_date": dt.datetime.fromtimestamp(record.created, tz=dt.timezone.utc),
            "logger": _cut(record.name, MAX_LOGGER_LENGTH), "severity": severity,
            "level": RANKS[severity], "message": _cut(message, MAX_MESSAGE_LENGTH),
            "exception": None if exception is None else _cut(exception, MAX_MESSAGE_LENGTH)}


class DatabaseLogHandler(logging.Handler):
    """See the module docstring. `dropped` and `written` count records of this process."""

    def __init__(self, level: int | str = logging.NOTSET, capacity: int = QUEUE_CAPACITY,
                 batch_size: int = BATCH_SIZE) -> None:
        super().__init__(level)
        self.capacity = capacity
        self.batch_size = batch_size
        self._reset()
        _all_handlers.add(self)

    def _reset(self) -> None:
        """A fresh queue, counters and no writer: at start and in a forked child, where the
        parent's thread does not exist and its queue's locks may be held forever."""
        self._queue: queue.Queue[dict] = queue.Queue(self.capacity)
        self._start_lock = threading.Lock()
        self._counter_lock = threading.Lock()
        self._writer: threading.Thread | None = None
        self._pid = os.getpid()
        self.dropped = 0
        self.written = 0
        self.reported = False

    # --- in the thread that logs -----------------------------------------------------------

    def emit(self, record: logging.LogRecord) -> None:
        if (record.name + ".").startswith(IGNORED_LOGGER + ".") \
                or getattr(_writer_thread, "active", False):
            return
        try:
            entry = pending_entry(record)
        except Exception as error:  # a record whose message cannot be formatted
            self._drop(1, "the record could not be formatted", error)
            return
        try:
            self._ensure_writer()
            self._queue.put_nowait(entry)
        except queue.Full:
            self._drop(1, f"the queue of {self.capacity} records is full")
        except RuntimeError as error:  # no new thread at interpreter shutdown
            self._drop(1, "the writer thread could not be started", error)

    def _ensure_writer(self) -> None:
        if self._pid != os.getpid():  # forked by a way that bypassed os.register_at_fork
            self._reset()
        writer = self._writer
        if writer is not None and writer.is_alive():
            return
        with self._start_lock:
            if self._writer is None or not self._writer.is_alive():
                self._writer = threading.Thread(target=self._run, name="log-db-writer",
                                                daemon=True)
                self._writer.start()

    def _drop(self, count: int, reason: str, error: BaseException | None = None) -> None:
        with self._counter_lock:
            self.dropped += count
            first, self.reported = not self.reported, True
        if not first:
            return
        cause = f" ({type(error).__name__}: {' '.join(str(error).split())})" if error else ""
        with contextlib.suppress(Exception):  # else nowhere left to report to
            sys.stderr.write(
                f"general.log_handler: {count} log record(s) not stored in the database: "
                f"{reason}{cause}. Further losses are counted, not reported.\n")
            sys.stderr.flush()

    def flush(self, timeout: float = 2.0) -> bool:
        """Wait (at most `timeout` seconds) until every queued record is written or dropped;
        True when the queue is done. Also called by `logging.shutdown` at exit."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks:
            writer = self._writer
            if writer is None or not writer.is_alive() or time.monotonic() > deadline:
                return False
            time.sleep(0.005)
        return True

    # --- in the writer thread --------------------------------------------------------------

    def _run(self) -> None:
        _writer_thread.active = True
        while True:
            batch = [self._queue.get()]
            while len(batch) < self.batch_size:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            try:
                self._write(batch)
                with self._counter_lock:
                    self.written += len(batch)
            except Exception as error:
                self._drop(len(batch), "writing them failed", error)
                _close_connection()  # a broken connection is replaced by the next write
            finally:
                for _ in batch:
                    self._queue.task_done()
            if self._queue.empty():
                _close_connection()  # hold no connection while idle

    def _write(self, batch: list[dict]) -> None:
        from general.models import LogEntry

        LogEntry.objects.bulk_create([LogEntry(**entry) for entry in batch])


def _close_connection() -> None:
    from django.db import connection

    with contextlib.suppress(Exception):  # it is gone either way
        connection.close()


def _after_fork_in_child() -> None:
    for handler in list(_all_handlers):
        handler._reset()


os.register_at_fork(after_in_child=_after_fork_in_child)


def database_handlers() -> list[DatabaseLogHandler]:
    """The handlers of this process (e.g. to read their `dropped` counters)."""
    return list(_all_handlers)
