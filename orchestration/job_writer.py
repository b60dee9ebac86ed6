"""Pull jobs written behind the answer, in batches (issue 14, docs/history.md).

Each pull is recorded as an orchestration job. Writing that row before answering cost a
round trip and a commit per pull; instead the pull hands the finished job to this process's
writer and answers at once. One thread per process inserts whatever has been handed over in
one statement and then lets the next batch gather for LINGER_SECONDS (under load, tens of
rows a statement), so a job is written within some 50 ms of its answer.

What this changes, and what it does not:
- A job appears in the history shortly after its pull was answered, not before.
- A clean stop (gunicorn's graceful shutdown, SIGTERM) writes every handed-over job first
  (`job_writer_flush`, called by the worker's exit hook, and at interpreter exit).
- A crash of the process (SIGKILL, out of memory) loses the jobs not yet written: those of
  the pulls answered in the last moments, at most MAX_PENDING.
- While the database refuses the writes, jobs wait and are written once it is back; beyond
  MAX_PENDING waiting jobs a pull writes its own job before answering (and fails as a pull
  that cannot reach its database does).
- Inside a transaction (a test, a caller that has one open) the job is written at once, in
  that transaction, as before.
"""
import atexit
import logging
import threading
import time
from collections import deque

from django.db import connection

from orchestration.models import OrchestrationJob

logger = logging.getLogger(__name__)

MAX_PENDING = 10_000
BATCH = 500
RETRY_SECONDS = 1.0
IDLE_SECONDS = 2.0
LINGER_SECONDS = 0.05


class JobWriter:
    def __init__(self) -> None:
        self._pending: deque[OrchestrationJob] = deque()
        lock = threading.Lock()
        self._wake = threading.Condition(lock)  # the writer waits for jobs
        self._written = threading.Condition(lock)  # flush waits for the writer
        self._in_flight = 0  # taken from _pending, not yet written
        self._thread: threading.Thread | None = None

    def submit(self, job: OrchestrationJob) -> None:
        if connection.in_atomic_block or len(self._pending) >= MAX_PENDING:
            job.save(force_insert=True)
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


def _insert(jobs: list[OrchestrationJob]) -> None:
    """One statement for the batch: PostgreSQL's COPY (the cheapest way in; the job count
    triggers see it as one insert), elsewhere a bulk insert."""
    if connection.vendor != "postgresql":
        OrchestrationJob.objects.bulk_create(jobs)
        return
    columns = ", ".join(_COLUMNS)
    with connection.cursor() as cursor, cursor.cursor.copy(
            f"COPY {OrchestrationJob._meta.db_table} ({columns}) FROM STDIN") as copy:
        for job in jobs:
            copy.write_row([getattr(job, column) for column in _COLUMNS])


_writer = JobWriter()
job_write_behind = _writer.submit


def job_writer_flush(timeout: float = 10.0) -> bool:
    return _writer.flush(timeout)


atexit.register(job_writer_flush)
