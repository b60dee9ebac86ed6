"""Paths, builders and the database log handler, for the general management tests."""
import datetime as dt
import logging
from collections.abc import Iterator
from contextlib import contextmanager

from general.log_handler import DatabaseLogHandler
from general.models import LogEntry
from general.severities import RANKS
from tests.helpers import SYSOP

BASE = "/serviceorchestration/general/mgmt"
LOGS, GET_CONFIG = f"{BASE}/logs", f"{BASE}/get-config"
T0 = dt.datetime(2025, 2, 1, 12, 0, tzinfo=dt.timezone.utc)


def make_entry(logger: str = "serviceorchestration.test", severity: str = "WARN",
               minutes: int = 0, message: str = "something happened",
               exception: str | None = None, when: dt.datetime | None = None) -> LogEntry:
    """A stored entry `minutes` after T0 (or at `when`)."""
    return LogEntry.objects.create(
        entry_date=when or T0 + dt.timedelta(minutes=minutes), logger=logger, severity=severity,
        level=RANKS[severity], message=message, exception=exception)


def post_logs(api, body, headers=SYSOP):
    return api.post(LOGS, body, format="json", **headers)


def configured_handlers() -> list[DatabaseLogHandler]:
    """The database handlers LOGGING put on the root logger."""
    return [handler for handler in logging.getLogger().handlers
            if isinstance(handler, DatabaseLogHandler)]


@contextmanager
def configured_handlers_detached() -> Iterator[None]:
    """The configured handlers flushed and taken off the root logger: nothing is written to
    the log table behind the test's back (the writer commits on its own connection)."""
    handlers = configured_handlers()
    root = logging.getLogger()
    for handler in handlers:
        handler.flush(timeout=30.0)
        root.removeHandler(handler)
    try:
        yield
    finally:
        for handler in handlers:
            root.addHandler(handler)


@contextmanager
def attached(handler: logging.Handler, logger: logging.Logger | None = None) -> Iterator[None]:
    logger = logger or logging.getLogger()
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
