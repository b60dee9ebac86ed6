"""Pull jobs written behind the answer, in batches: a pull hands its finished job to this
process's writer thread and answers at once; the thread inserts what has gathered in one
statement, then lets the next batch gather for LINGER_SECONDS. What this means for the
history (a crash loses the last moments' jobs, at most MAX_PENDING; a graceful stop writes
them all; inside a transaction a job is written at once) is in docs/history.md, "When a pull
appears"."""
import atexit
import datetime as dt
import logging
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass

from django.db import connection

from database.bulk_insert import rows_insert
from orchestration.models import OrchestrationJob

logger = logging.getLogger(__name__)

MAX_PENDING = 10_000
BATCH = 500
RETRY_SECONDS = 1.0
IDLE_SECONDS = 2.0
LINGER_SECONDS = 0.05


@dataclass(slots=True)
class PullJob:
    """A pull's job as it is handed over: a plain record (a model instance per pull costs
    more than writing the row); the writer gives it its id."""

    requester: str
    service_definition: str | None
    started_at: dt.datetime
    status: str = ""
    result_count: int = 0
    message: str = ""
    finished_at: dt.datetime | None = None

    @property
    def target(self) -> str:
        return self.requester

    def model(self) -> OrchestrationJob:
        return OrchestrationJob(**dict(zip(_COLUMNS, self.row(), strict=True)))

    def row(self) -> tuple:
        """The values of _COLUMNS."""
        return (uuid.uuid4(), OrchestrationJob.Type.PULL.value, self.status, self.requester,
                self.requester, self.service_definition, None, self.result_count, self.message,
                self.started_at, self.started_at, self.finished_at)


class JobWriter:
    def __init__(self) -> None:
        self._pending: deque[PullJob] = deque()
        lock = threading.Lock()
        self._wake = threading.Condition(lock)  # the writer waits for jobs
        self._written = threading.Condition(lock)  # flush waits for the writer
        self._in_flight = 0  # taken from _pending, not yet written
        self._thread: threading.Thread | None = None

    def submit(self, job: PullJob) -> None:
        if connection.in_atomic_block or len(self._pending) >= MAX_PENDING:
            job.model().save(force_insert=True)
            return
        self._start()
        with self._wake:
            self._pending.append(job)
            self._wake.notify()

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every job handed over so far is written (or `timeout` passed); True when
        nothing is left."""
        deadline = time.monotonic() + timeout
        with self._wake:
            while self._pending or self._in_flight:
                if self._thread is None or not self._thread.is_alive():
                    self._write_pending_here()
                    return not self._pending
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._written.wait(min(remaining, 0.05))
        return True

    def _write_pending_here(self) -> None:
        """No writer thread (after a fork, at exit): write in the calling thread."""
        while self._pending:
            batch = [self._pending.popleft() for _ in range(min(BATCH, len(self._pending)))]
            _insert(batch)

    def _start(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        with self._wake:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, daemon=True,
                                                name="pull-job-writer")
                self._thread.start()

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._pending:
                    if not self._wake.wait(IDLE_SECONDS):
                        connection.close()  # idle: hold no database connection
                batch = [self._pending.popleft() for _ in range(min(BATCH, len(self._pending)))]
                self._in_flight = len(batch)
            try:
                _insert(batch)
            except Exception:
                logger.warning("%d pull job(s) not written yet; retrying in %s s", len(batch),
                               RETRY_SECONDS, exc_info=True)
                connection.close()
                with self._wake:
                    self._pending.extendleft(reversed(batch))
                    self._in_flight = 0
                    self._written.notify_all()
                time.sleep(RETRY_SECONDS)
                continue
            with self._wake:
                self._in_flight = 0
                self._written.notify_all()
            time.sleep(LINGER_SECONDS)  # let the next batch gather: one statement for many


_COLUMNS = ("id", "type", "status", "requester", "target", "service_definition",
            "subscription_id", "result_count", "message", "created_at", "started_at",
            "finished_at")


def _insert(jobs: list[PullJob]) -> None:
    """One statement for the batch (database/bulk_insert.py: COPY on PostgreSQL; the job count
    triggers see it as one insert)."""
    rows_insert(OrchestrationJob, _COLUMNS, [job.row() for job in jobs])


_writer = JobWriter()
job_write_behind = _writer.submit


def job_writer_flush(timeout: float = 10.0) -> bool:
    return _writer.flush(timeout)


atexit.register(job_writer_flush)
