"""tests/flush_retry.py: a flush ended by a deadlock is run again, anything else is not."""
import psycopg
import pytest
from django.core.management.base import CommandError
from django.db.utils import OperationalError

from tests.flush_retry import ATTEMPTS, retried_on_deadlock


def failing(times: int, cause: BaseException):
    calls = []

    def handle(command, **options):
        calls.append(options)
        if len(calls) <= times:
            try:
                raise OperationalError("wrapped") from cause
            except OperationalError as error:
                raise CommandError("couldn't be flushed") from error
        return "flushed"

    return handle, calls


def test_a_flush_ended_by_a_deadlock_is_run_again_with_the_same_options() -> None:
    handle, calls = failing(2, psycopg.errors.DeadlockDetected("deadlock detected"))

    assert retried_on_deadlock(handle)(None, database="default") == "flushed"
    assert calls == [{"database": "default"}] * 3


def test_other_failures_are_not_retried() -> None:
    handle, calls = failing(1, psycopg.errors.UndefinedTable("no such table"))

    with pytest.raises(CommandError):
        retried_on_deadlock(handle)(None)
    assert len(calls) == 1


def test_it_gives_up_after_its_attempts() -> None:
    handle, calls = failing(ATTEMPTS, psycopg.errors.DeadlockDetected("deadlock detected"))

    with pytest.raises(CommandError):
        retried_on_deadlock(handle)(None)
    assert len(calls) == ATTEMPTS
