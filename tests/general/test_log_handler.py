"""The database log handler (general.log_handler) for real: a request logs, the writer thread
stores the record with its own connection; a locked or missing table neither fails nor slows
the code that logs. Transactional tests: the writer commits, and so do the table changes."""
import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest
from django.db import connection, transaction
from django.utils import timezone

from general.log_handler import MAX_MESSAGE_LENGTH, DatabaseLogHandler
from general.models import LogEntry
from general.severities import severity_of
from tests.general.helpers import (
    attached,
    configured_handlers,
    configured_handlers_detached,
    post_logs,
)
from tests.general.log_urls import LOGGING_PROBE
from tests.helpers import SYSOP
from tests.startup import started

pytestmark = [pytest.mark.django_db(transaction=True),
              pytest.mark.urls("tests.general.log_urls")]

PROBE_LOGGER = "serviceorchestration.probe"
REPORT = "general.log_handler:"
# generous: the writer thread competes with the whole suite for two cores; a flush returns
# as soon as the queue is written, so a healthy run never waits this long
WRITTEN_WITHIN = 30.0


@pytest.fixture
def handler() -> DatabaseLogHandler:
    """The handler LOGGING configured (LOG_DB_LEVEL=WARNING by default)."""
    handlers = configured_handlers()
    assert len(handlers) == 1
    assert handlers[0].level == logging.WARNING
    return handlers[0]


@pytest.fixture
def fresh_handler() -> Iterator[DatabaseLogHandler]:
    """A handler of the test's own on the root logger (counters and report of its own), the
    configured one taken off meanwhile."""
    handler = DatabaseLogHandler(level=logging.WARNING)
    with configured_handlers_detached(), attached(handler):
        yield handler


def _connect() -> psycopg.Connection:
    db = connection.settings_dict
    return psycopg.connect(host=db["HOST"] or "127.0.0.1", port=db["PORT"] or 5432,
                           user=db["USER"], password=db["PASSWORD"] or None, dbname=db["NAME"])


@contextmanager
def locked_log_table() -> Iterator[None]:
    """Another session holds the log table exclusively: every write to it waits."""
    with _connect() as other:
        other.execute("LOCK TABLE general_logentry IN ACCESS EXCLUSIVE MODE")
        yield
        other.rollback()


@contextmanager
def log_table_missing() -> Iterator[None]:
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE general_logentry RENAME TO general_logentry_away")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("ALTER TABLE general_logentry_away RENAME TO general_logentry")


def log_probe(api, query: str = "", **headers):
    response = api.get(f"{LOGGING_PROBE}{query}", **{**SYSOP, **headers})
    assert response.status_code == 200, response.content
    return response


class DatabaseLogHandlerTests:
    def test_it_stores_a_warning_logged_while_serving_a_request(self, api, handler):
        before = timezone.now()
        log_probe(api, HTTP_X_REQUEST_ID="req-7")
        assert handler.flush(timeout=WRITTEN_WITHIN)
        entry = LogEntry.objects.get(logger=PROBE_LOGGER)
        assert (entry.severity, entry.level) == ("WARN", logging.WARNING)
        assert entry.message == "[req-7] probe record 0 of Sysop"
        assert entry.exception is None
        assert before <= entry.entry_date <= timezone.now()

    def test_it_makes_the_record_readable_through_the_logs_query(self, api, handler):
        log_probe(api, "?level=ERROR", HTTP_X_REQUEST_ID="req-8")
        assert handler.flush(timeout=WRITTEN_WITHIN)
        body = post_logs(api, {"logger": "PROBE", "severity": "error"}).json()
        assert body["count"] == 1
        assert (body["entries"][0]["severity"], body["entries"][0]["message"]) == (
            "ERROR", "[req-8] probe record 0 of Sysop")

    def test_it_does_not_store_records_below_log_db_level(self, api, handler):
        log_probe(api, "?level=INFO&times=3")
        log_probe(api, "?level=DEBUG")
        assert handler.flush(timeout=WRITTEN_WITHIN)
        assert not LogEntry.objects.filter(logger=PROBE_LOGGER).exists()

    def test_it_keeps_the_record_when_the_transaction_that_logged_rolls_back(self, handler):
        with pytest.raises(RuntimeError), transaction.atomic():
            logging.getLogger("tests.general.rollback").error("kept")
            raise RuntimeError("rolled back")
        assert handler.flush(timeout=WRITTEN_WITHIN)
        assert LogEntry.objects.get(logger="tests.general.rollback").message == "kept"

    def test_it_stores_the_traceback(self, handler):
        try:
            raise ValueError("bad value")
        except ValueError:
            logging.getLogger("tests.general.trace").exception("failed")
        assert handler.flush(timeout=WRITTEN_WITHIN)
        entry = LogEntry.objects.get(logger="tests.general.trace")
        assert (entry.severity, entry.message) == ("ERROR", "failed")
        assert entry.exception.startswith("Traceback (most recent call last):")
        assert entry.exception.rstrip().endswith("ValueError: bad value")

    def test_it_maps_python_levels_to_the_reference_severities(self, fresh_handler):
        fresh_handler.setLevel(1)
        logger = logging.getLogger("tests.general.levels")
        logger.setLevel(1)  # below the root logger's LOG_LEVEL
        levels = [logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR,
                  logging.CRITICAL, 25, 5]
        try:
            for level in levels:
                logger.log(level, "at %d", level)
        finally:
            logger.setLevel(logging.NOTSET)
        assert fresh_handler.flush(timeout=WRITTEN_WITHIN)
        stored = LogEntry.objects.filter(logger="tests.general.levels").order_by("id")
        assert [(entry.severity, entry.level) for entry in stored] == [
            ("DEBUG", 10), ("INFO", 20), ("WARN", 30), ("ERROR", 40), ("FATAL", 50),
            ("INFO", 20), ("TRACE", 5)]
        assert severity_of(35) == "WARN" and severity_of(0) == "TRACE"

    def test_it_cuts_huge_messages(self, handler):
        logging.getLogger("tests.general.huge").warning("x" * (10 * MAX_MESSAGE_LENGTH))
        assert handler.flush(timeout=WRITTEN_WITHIN)
        message = LogEntry.objects.get(logger="tests.general.huge").message
        assert len(message) == MAX_MESSAGE_LENGTH
        assert message.endswith("x…")

    def test_it_ignores_the_database_backend_loggers(self, handler):
        written = handler.written
        logging.getLogger("django.db.backends").error("statement failed")
        logging.getLogger("django.db.backends.schema").error("statement failed")
        assert handler.flush(timeout=WRITTEN_WITHIN)
        assert handler.written == written
        assert not LogEntry.objects.filter(logger__startswith="django.db").exists()

    def test_it_ignores_records_logged_while_writing(self, fresh_handler, monkeypatch):
        write = DatabaseLogHandler._write

        def write_and_log(handler, batch):
            logging.getLogger("psycopg").warning("logged by the driver while writing")
            write(handler, batch)

        monkeypatch.setattr(DatabaseLogHandler, "_write", write_and_log)
        logging.getLogger("tests.general.loop").warning("the record")
        assert fresh_handler.flush(timeout=WRITTEN_WITHIN)
        assert (fresh_handler.written, fresh_handler.dropped) == (1, 0)
        assert not LogEntry.objects.filter(logger="psycopg").exists()

    def test_it_starts_a_writer_of_its_own_in_a_forked_child(self, handler):
        logger = logging.getLogger("tests.general.fork")
        logger.warning("from the parent")
        assert handler.flush(timeout=WRITTEN_WITHIN)
        pid = os.fork()
        if pid == 0:  # the child: the parent's writer thread does not exist here
            code = 1
            try:
                logger.warning("from the child")
                code = 0 if handler.flush(timeout=WRITTEN_WITHIN) and handler.written == 1 else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert sorted(LogEntry.objects.filter(logger="tests.general.fork")
                      .values_list("message", flat=True)) == ["from the child",
                                                              "from the parent"]

    def test_it_stays_on_the_root_logger_of_a_celery_worker(self):
        """A worker sets up its logging (as `celery worker` does) and keeps LOGGING's handlers,
        the database handler among them (CELERY_WORKER_HIJACK_ROOT_LOGGER=False)."""
        result = started(
            "import django, logging; django.setup(); from config.celery import app; "
            "from general.log_handler import DatabaseLogHandler; "
            "app.log.setup_logging_subsystem(loglevel='INFO'); "
            "print([type(h).__name__ for h in logging.getLogger().handlers "
            "if isinstance(h, DatabaseLogHandler)])")
        assert result.stdout.strip() == "['DatabaseLogHandler']", result.stderr


class DatabaseLogHandlerFailureTests:
    def test_a_locked_table_neither_fails_nor_slows_the_request(self, api, fresh_handler):
        with locked_log_table():
            started = time.monotonic()
            log_probe(api, "?times=3")
            assert time.monotonic() - started < 1.0
            assert not fresh_handler.flush(timeout=0.3)  # the writer waits for the lock
        assert fresh_handler.flush(timeout=WRITTEN_WITHIN)
        assert (fresh_handler.written, fresh_handler.dropped) == (3, 0)
        assert LogEntry.objects.filter(logger=PROBE_LOGGER).count() == 3

    def test_it_drops_and_counts_records_beyond_the_queue_capacity(self, capfd):
        handler = DatabaseLogHandler(capacity=5, batch_size=10)
        logger = logging.getLogger("tests.general.full")
        with configured_handlers_detached(), attached(handler, logger), locked_log_table():
            started = time.monotonic()
            for n in range(50):
                logger.warning("record %d", n)
            assert time.monotonic() - started < 0.5
            assert handler.dropped >= 50 - 5 - 10
        assert handler.flush(timeout=WRITTEN_WITHIN)
        assert handler.written + handler.dropped == 50
        assert LogEntry.objects.filter(logger="tests.general.full").count() == handler.written
        errors = capfd.readouterr().err
        assert errors.count(REPORT) == 1
        assert "the queue of 5 records is full" in errors

    def test_a_failing_write_neither_fails_the_request_nor_reports_twice(self, api,
                                                                          fresh_handler,
                                                                          capfd):
        with log_table_missing():
            log_probe(api, "?times=2")
            assert fresh_handler.flush(timeout=WRITTEN_WITHIN)
            log_probe(api)
            assert fresh_handler.flush(timeout=WRITTEN_WITHIN)
            assert (fresh_handler.written, fresh_handler.dropped) == (0, 3)
        errors = capfd.readouterr().err
        assert errors.count(REPORT) == 1
        assert 'relation "general_logentry" does not exist' in errors
        # The writer goes on once the table is back.
        log_probe(api)
        assert fresh_handler.flush(timeout=WRITTEN_WITHIN)
        assert (fresh_handler.written, fresh_handler.dropped) == (1, 3)
        assert LogEntry.objects.filter(logger=PROBE_LOGGER).count() == 1
        assert REPORT not in capfd.readouterr().err
