"""database.transaction_retry: a write transaction aborted for a concurrent one runs again, a
bounded number of times; a conflict that remains is a 423 LOCKED, never a 500."""
import sqlite3

import psycopg.errors
import pytest
from django.db import IntegrityError, OperationalError, transaction
from rest_framework.test import APIClient

from conventions.exceptions import Locked
from database.transaction_retry import CONFLICT_MESSAGE, is_conflict, retry_on_conflict
from store.models import Rule
from tests.factories import make_rules
from tests.helpers import SYSOP, assert_error
from tests.store.helpers import MODIFY


def wrapped(cause: Exception, error_class=OperationalError) -> Exception:
    """A driver error as Django raises it (wrapped, the driver's error as the cause)."""
    error = error_class(str(cause))
    error.__cause__ = cause
    return error


def deadlock() -> Exception:
    return wrapped(psycopg.errors.DeadlockDetected("deadlock detected"))


@pytest.fixture(autouse=True)
def fast_retries(settings):
    settings.DATABASE_CONFLICT_RETRIES = 3
    settings.DATABASE_CONFLICT_BACKOFF_SECONDS = 0.001


def failing(times: int, error_factory):
    calls = []

    @retry_on_conflict
    def write():
        calls.append(1)
        if len(calls) <= times:
            raise error_factory()
        return "done"

    return write, calls


@pytest.mark.parametrize("error_factory", [
    deadlock,
    lambda: wrapped(psycopg.errors.SerializationFailure("could not serialize access")),
    lambda: wrapped(sqlite3.OperationalError("database is locked")),
], ids=["deadlock", "serialization failure", "sqlite busy"])
def test_a_conflict_is_retried_until_the_transaction_goes_through(error_factory):
    write, calls = failing(2, error_factory)
    assert write() == "done"
    assert len(calls) == 3


def test_a_conflict_that_remains_is_locked_after_the_configured_retries():
    write, calls = failing(100, deadlock)
    with pytest.raises(Locked) as raised:
        write()
    assert len(calls) == 1 + 3
    assert raised.value.status_code == 423 and raised.value.message == CONFLICT_MESSAGE


@pytest.mark.parametrize("error_factory", [
    lambda: wrapped(psycopg.errors.UniqueViolation("duplicate key"), IntegrityError),
    lambda: wrapped(psycopg.errors.UndefinedTable("no such table")),
    lambda: ValueError("not a database error"),
], ids=["integrity", "other database error", "other error"])
def test_other_errors_are_not_retried(error_factory):
    write, calls = failing(1, error_factory)
    with pytest.raises(type(error_factory())):
        write()
    assert len(calls) == 1
    assert not is_conflict(error_factory())


@pytest.mark.django_db
def test_inside_a_callers_transaction_it_does_not_retry():
    """The caller's transaction is lost with the conflict: running only the inner part again
    would be wrong."""
    write, calls = failing(1, deadlock)
    with pytest.raises(Locked), transaction.atomic():
        write()
    assert len(calls) == 1


@pytest.mark.django_db(transaction=True)  # as in production: the service opens the transaction
def test_a_remaining_conflict_is_a_423_envelope_and_nothing_is_written(monkeypatch):
    (rule,) = make_rules(("Consumer1", "P1|svc|1.0.0", 1))
    calls = []

    def store_priorities(rules):
        calls.append(1)
        raise deadlock()

    monkeypatch.setattr("store.services.rules._store_priorities", store_priorities)
    response = APIClient().put(MODIFY, {str(rule.id): 2}, format="json", **SYSOP)
    assert_error(response, 423, "LOCKED", CONFLICT_MESSAGE, f"PUT {MODIFY}")
    assert len(calls) == 4
    assert Rule.objects.get().priority == 1
