"""One prepared statement run on this thread's PostgreSQL connection through libpq directly,
for the statements of the hot paths: the feed read of every pull
(orchestration/snapshot/changes.py) and the usual subscribe (subscriptions/subscribe_statement.py).

The driver's cursor costs several of its own Python steps per query and gives the interpreter
lock up and takes it back at each of them; under load, with the web threads of a process
contending for that lock, a feed read cost the process several times the query's own CPU.
libpq's exec call runs the whole round trip with the lock released once. Values come back as
PostgreSQL's text (bytes, or None for NULL); parameters go as text.

Inside a transaction (`transaction.atomic()`) the statement is part of it: the driver opens
its transaction lazily, at its first query, so when this is the first one the transaction
is begun here, as the driver would (a plain BEGIN: no isolation level is configured).
Outside one (autocommit) the statement commits alone.

The statement is prepared on a connection the first time it runs there. A `DEALLOCATE ALL`
(the driver sends one after some schema changes) or a new connection loses it: a statement
the server no longer knows is prepared again and run once more. Errors are raised as the
driver's exceptions under Django's error wrapping, as the ORM raises them.
"""
import weakref

import psycopg
from django.db import connection
from psycopg import pq

_UNDEFINED_STATEMENT = b"26000"  # invalid_sql_statement_name
# The statements prepared on each libpq connection (a reconnect starts with none).
_prepared: "weakref.WeakKeyDictionary[object, set[bytes]]" = weakref.WeakKeyDictionary()


def run_prepared(name: bytes, sql: bytes, params: list[bytes | None]) -> list[list]:
    """The rows of the prepared statement `name` (`sql`, placeholders $1…) with `params`."""
    connection.ensure_connection()
    driver = connection.connection
    with connection.wrap_database_errors, driver.lock:
        pgconn = driver.pgconn
        if not driver.autocommit and pgconn.transaction_status == pq.TransactionStatus.IDLE:
            _check(pgconn, pgconn.exec_(b"BEGIN"))
        for attempt in range(2):
            known = _prepared.setdefault(pgconn, set())
            if name not in known:
                _check(pgconn, pgconn.prepare(name, sql))
                known.add(name)
            result = pgconn.exec_prepared(name, params)
            if (result.status == pq.ExecStatus.TUPLES_OK or attempt
                    or result.error_field(pq.DiagnosticField.SQLSTATE) != _UNDEFINED_STATEMENT):
                break
            known.discard(name)
        _check(pgconn, result)
        columns, count = result.nfields, result.ntuples
        return [[result.get_value(row, column) for column in range(columns)]
                for row in range(count)]


def _check(pgconn, result) -> None:
    if result.status in (pq.ExecStatus.TUPLES_OK, pq.ExecStatus.COMMAND_OK):
        return
    message = (result.error_message or pgconn.error_message or b"no result").decode(
        "utf-8", "replace").strip()
    if pgconn.status == pq.ConnStatus.BAD:
        raise psycopg.OperationalError(message)
    try:
        error = psycopg.errors.lookup(result.error_field(pq.DiagnosticField.SQLSTATE).decode())
    except (AttributeError, KeyError):  # no SQLSTATE, or one the driver does not know
        error = psycopg.DatabaseError
    raise error(message)
