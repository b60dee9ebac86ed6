"""Retrying a whole write transaction that the database aborted for a conflict with a
concurrent one (deadlock, serialization failure, SQLite "database is locked"): it did nothing,
so running it again is correct; a remaining conflict is a 423 LOCKED, never a 500 (SPEC §1;
docs/rule-store.md, "Concurrent writers").

Use `@retry_on_conflict` on every service entry point that opens a write transaction. It
retries only when it owns the outermost transaction: inside a caller's `atomic()` block the
caller's transaction is already lost, so the conflict goes straight up as `Locked`.
"""
import functools
import logging
import random
import time
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from django.conf import settings
from django.db import DatabaseError, connection

from conventions.exceptions import Locked

logger = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

# SQLSTATEs of a transaction aborted only because of a concurrent one.
_CONFLICT_SQLSTATES = {"40P01", "40001"}  # deadlock_detected, serialization_failure
_SQLITE_BUSY = ("database is locked", "database table is locked")

CONFLICT_MESSAGE = ("The data is being changed by concurrent requests; "
                    "the request was not applied, please retry")


def is_conflict(error: BaseException) -> bool:
    """Whether a database error means "aborted for a concurrent transaction, try again"
    (Django wraps the driver's error; its cause carries the SQLSTATE)."""
    if not isinstance(error, DatabaseError):
        return False
    cause = error.__cause__
    if getattr(cause, "sqlstate", None) in _CONFLICT_SQLSTATES:
        return True
    return any(text in str(error) for text in _SQLITE_BUSY)


def _backoff_seconds(attempt: int) -> float:
    """Jittered exponential backoff: concurrent losers do not all come back at once."""
    base = settings.DATABASE_CONFLICT_BACKOFF_SECONDS * (2 ** attempt)
    return random.uniform(base / 2, base)


def retry_on_conflict(function: Callable[P, R]) -> Callable[P, R]:
    """Run `function` (which opens its own transaction) again when the database aborted it
    for a conflict, at most DATABASE_CONFLICT_RETRIES more times; then raise `Locked`."""

    @functools.wraps(function)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        retries = 0 if connection.in_atomic_block else settings.DATABASE_CONFLICT_RETRIES
        for attempt in range(retries + 1):
            try:
                return function(*args, **kwargs)
            except DatabaseError as error:
                if not is_conflict(error):
                    raise
                if attempt == retries:
                    logger.warning("%s: still conflicting after %d attempt(s): %s",
                                   function.__qualname__, attempt + 1, error)
                    raise Locked(CONFLICT_MESSAGE) from error
                logger.info("%s: conflict with a concurrent transaction, retrying: %s",
                            function.__qualname__, error)
            time.sleep(_backoff_seconds(attempt))
        raise AssertionError("unreachable")

    return wrapper
