"""Plain statements on the hot paths, run where the ORM's building of a query costs more than
the query: a pull's feed read, a subscribe's locks, reads and write (docs/performance.md).

`prepared_rows`, for a statement run on its own, again and again
(PostgreSQL): Django's cursor binds parameters on the client, so psycopg never prepares its
statements; psycopg's own cursor on Django's connection binds on the server and prepares the
statement (`prepare=True`; settings.py turns psycopg's prepared statements on), in the
transaction Django has open, if any. `statements_rows`, for a writer's steps that need no
answer in between (locks, reads, write): one round trip on PostgreSQL, where a round trip
costs more CPU than a short statement. SQLite: Django's cursor, a statement at a time. Errors
come as Django's, as from the ORM. Parameters are `%s` on both.
"""
from collections.abc import Sequence
from typing import Any

import psycopg
from django.db import connection, models


def prepared_rows(sql: str, params: Sequence[Any]) -> list[tuple]:
    """The rows of `sql` (prepared on PostgreSQL)."""
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(sql, list(params))
            return cursor.fetchall()
    connection.ensure_connection()
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(sql, params, prepare=True)
        return cursor.fetchall()


# A statement and its parameters.
Statement = tuple[str, Sequence[Any]]


def statements_rows(statements: Sequence[Statement]) -> list[list[tuple]]:
    """The rows of each statement (none for one that returns none), run in order: on
    PostgreSQL in one round trip, as one query string whose parameters are bound on the
    client. Each statement starts when the one before it has ended, with a snapshot of its
    own (READ COMMITTED), so a statement after a lock sees what the lock's previous holder
    committed. Inside `transaction.atomic()` for them to be one transaction."""
    results: list[list[tuple]] = []
    with connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            for sql, params in statements:
                cursor.execute(sql, list(params))
                results.append(cursor.fetchall() if cursor.description else [])
            return results
        cursor.execute("; ".join(sql for sql, _ in statements),
                       [value for _, params in statements for value in params])
        results_read = cursor.cursor  # psycopg's own, for the results (no wrapper per call)
        while True:
            returned = results_read.pgresult.status == psycopg.pq.ExecStatus.TUPLES_OK
            results.append(results_read.fetchall() if returned else [])
            if not results_read.nextset():
                return results


def model_instances(model: type[models.Model], columns: Sequence[str],
                    rows: Sequence[Sequence[Any]]) -> list[models.Model]:
    """Saved instances of `model` from plain rows of its `columns` (field names), each value
    converted as the ORM converts what it reads (JSON decoded, SQLite's instants made aware,
    …), the other fields deferred."""
    if not rows:
        return []
    meta = model._meta
    fields = [meta.get_field(name) for name in columns]
    converted = []  # (column expression, its converters) per field
    for field in fields:
        column = field.get_col(meta.db_table)
        converted.append((column, [*connection.ops.get_db_converters(column),
                                   *field.get_db_converters(connection)]))
    attnames = [field.attname for field in fields]
    instances = []
    for row in rows:
        values = []
        for value, (column, converters) in zip(row, converted, strict=True):
            for convert in converters:
                value = convert(value, column, connection)
            values.append(value)
        instances.append(model.from_db(connection.alias, attnames, values))
    return instances


def seconds_since(instant: str) -> str:
    """SQL for the seconds from the instant `instant` (an SQL expression: a column, a
    subquery) until now, by the database's clock; NULL when it is NULL."""
    if connection.vendor == "postgresql":
        return f"EXTRACT(EPOCH FROM clock_timestamp() - ({instant}))::float"
    return f"(julianday('now') - julianday(({instant}))) * 86400.0"


def placeholders(count: int) -> str:
    """`%s, %s, …`: one per value of an IN list (a statement is prepared per list length)."""
    return ", ".join(["%s"] * count)
