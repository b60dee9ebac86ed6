"""A transactional test's tables are emptied (Django's `flush`: one TRUNCATE of them all) while
other processes of the run may still write: a live server's job writer inserting the pulls it
has just answered (an insert into the jobs table whose trigger then writes the job counts), a
worker recording an outcome, a pull snapshot reloading. TRUNCATE takes its tables' locks one
by one, so such a writer holding one of them and waiting for another makes PostgreSQL end one
of the two as a deadlock; when the flush is the one ended, the next test would start with this
one's rows. A deadlock rolls the whole flush back, so it is simply run again."""
from collections.abc import Callable, Iterator

import psycopg
import pytest
from django.core.management.base import CommandError
from django.core.management.commands.flush import Command as FlushCommand

ATTEMPTS = 5


def deadlocked(error: BaseException) -> bool:
    """Whether `error` was caused, at any depth, by PostgreSQL ending a deadlock."""
    cause: BaseException | None = error
    while cause is not None:
        if isinstance(cause, psycopg.errors.DeadlockDetected):
            return True
        cause = cause.__cause__
    return False


def retried_on_deadlock(handle: Callable[..., object]) -> Callable[..., object]:
    def retried(command: FlushCommand, *args: object, **options: object) -> object:
        for attempt in range(1, ATTEMPTS + 1):
            try:
                return handle(command, *args, **options)
            except CommandError as error:
                if attempt == ATTEMPTS or not deadlocked(error):
                    raise
        raise AssertionError("unreachable")

    return retried


@pytest.fixture(scope="session", autouse=True)
def flush_retried_on_deadlock() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(FlushCommand, "handle", retried_on_deadlock(FlushCommand.handle))
        yield
