"""Inserting many rows of one model in one statement, cheaper than `bulk_create`.

On PostgreSQL Django 5.2's `bulk_create` sends each column as an array that the client-side
binding quotes value by value in Python; with JSON payloads that was most of the time a push
fan-out spent writing its notifications (docs/performance.md). COPY takes the rows as they
are. Elsewhere (SQLite) it is one INSERT run for each row, in one transaction.

Values are prepared by their model fields as the ORM prepares them; nothing of `save()` runs
(no signals, no field defaults: give every column a value).
"""
from collections.abc import Iterable, Sequence
from typing import Any

from django.db import models, transaction


def rows_insert(model: type[models.Model], columns: Sequence[str],
                rows: Iterable[Sequence[Any]]) -> None:
    """Insert `rows` (each the values of `columns`, in order) into `model`'s table."""
    connection = transaction.get_connection()
    by_column = {field.column: field for field in model._meta.concrete_fields}
    fields = [by_column[column] for column in columns]
    prepared = [[field.get_db_prep_save(value, connection)
                 for field, value in zip(fields, row)] for row in rows]
    if not prepared:
        return
    table = connection.ops.quote_name(model._meta.db_table)
    names = ", ".join(connection.ops.quote_name(column) for column in columns)
    if connection.vendor != "postgresql":
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.executemany(f"INSERT INTO {table} ({names}) "
                               f"VALUES ({', '.join(['%s'] * len(columns))})", prepared)
        return
    with connection.cursor() as cursor, cursor.cursor.copy(
            f"COPY {table} ({names}) FROM STDIN") as copy:
        for row in prepared:
            copy.write_row(row)


def model_rows_insert(instances: Sequence[models.Model]) -> None:
    """Insert model instances (of one model, every field set, the primary key included);
    afterwards they are saved instances, as after `bulk_create`."""
    if not instances:
        return
    model = type(instances[0])
    fields = model._meta.concrete_fields
    rows_insert(model, [field.column for field in fields],
                ([getattr(instance, field.attname) for field in fields]
                 for instance in instances))
    alias = transaction.get_connection().alias
    for instance in instances:  # saved, as bulk_create leaves them
        instance._state.adding = False
        instance._state.db = alias
