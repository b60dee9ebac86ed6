"""Inserting many rows of one model in one statement, cheaper than `bulk_create`: on PostgreSQL
by COPY, which takes the rows as they are (Django 5.2's `bulk_create` quotes each value in
Python; with JSON payloads that was most of a push fan-out's writing, docs/performance.md);
elsewhere (SQLite) by one INSERT run for each row, in one transaction. Writing model instances
that may exist already (`model_rows_upsert`): one INSERT … ON CONFLICT. Values are
prepared by their model fields as the ORM prepares them; nothing of `save()` runs (no
signals, no field defaults: give every column a value).
"""
import functools
import os
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from django.db import connections, models, transaction

from conventions.encoded_json import EncodedJSON
from database.statements import Statement, placeholders


def rows_insert(model: type[models.Model], columns: Sequence[str],
                rows: Iterable[Sequence[Any]]) -> None:
    """Insert `rows` (each the values of `columns`, in order) into `model`'s table."""
    connection = transaction.get_connection()
    by_column = {field.column: field for field in model._meta.concrete_fields}
    preparers = [_preparer(by_column[column], connection) for column in columns]
    prepared = [[prepare(value) for prepare, value in zip(preparers, row, strict=True)]
                for row in rows]
    if not prepared:
        return
    table = connection.ops.quote_name(model._meta.db_table)
    names = ", ".join(connection.ops.quote_name(column) for column in columns)
    if connection.vendor != "postgresql":
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.executemany(f"INSERT INTO {table} ({names}) "
                               f"VALUES ({placeholders(len(columns))})", prepared)
        return
    with connection.cursor() as cursor, cursor.cursor.copy(
            f"COPY {table} ({names}) FROM STDIN") as copy:
        for row in prepared:
            copy.write_row(row)


# Fields whose preparation gives a value of the listed types back unchanged (on PostgreSQL,
# whose driver takes UUIDs as they are): such values skip it. It was half of a push's COPY
# in the change-to-subscriber profile (docs/performance.md); a value of another type (a
# lazy string, a number for a text column) is still prepared by the field.
_UNCHANGED: tuple[tuple[type[models.Field], frozenset[type]], ...] = (
    (models.BooleanField, frozenset({bool, type(None)})),
    (models.CharField, frozenset({str, type(None)})),
    (models.TextField, frozenset({str, type(None)})),
    (models.IntegerField, frozenset({int, type(None)})),
    (models.UUIDField, frozenset({uuid.UUID, type(None)})),
)


def _preparer(field: models.Field, connection) -> Callable[[Any], Any]:
    """How `field` prepares a value. The rows written together usually share their instants
    (created, updated, next attempt), and Django's preparation of a datetime (its zone
    checks) was half of the preparing in the fan-out's profile: each distinct instant is
    prepared once per call. Values that the field's preparation would give back unchanged
    are written as they are (`_UNCHANGED`), and a JSON value that knows its encoding as
    that text (`_takes_encoded_json`)."""
    prepare_save = functools.partial(field.get_db_prep_save, connection=connection)
    if _takes_encoded_json(field, connection):
        return lambda value: value.text if type(value) is EncodedJSON else prepare_save(value)
    if not isinstance(field, models.DateTimeField):
        unchanged = _unchanged_types(field, connection)
        if not unchanged:
            return prepare_save
        return lambda value: value if type(value) in unchanged else prepare_save(value)
    known: dict[Any, Any] = {}

    def prepare(value: Any) -> Any:
        if value not in known:
            known[value] = field.get_db_prep_save(value, connection)
        return known[value]

    return prepare


def new_ids(count: int) -> list[uuid.UUID]:
    """`count` random (version 4) UUIDs, as `uuid.uuid4` makes them, from one read of the
    system's randomness: a read each was 3 % of a fan-out's evaluation (docs/performance.md)."""
    data = os.urandom(16 * count)
    return [uuid.UUID(bytes=data[start:start + 16], version=4)
            for start in range(0, len(data), 16)]


def _unchanged_types(field: models.Field, connection) -> frozenset[type]:
    """The value types `field` prepares into themselves (`_UNCHANGED`); none off PostgreSQL,
    nor for a field whose class overrides its preparation."""
    if connection.vendor != "postgresql":
        return frozenset()
    for base, types in _UNCHANGED:
        if isinstance(field, base) and _prepares_as(type(field), base):
            return types
    return frozenset()


def _takes_encoded_json(field: models.Field, connection) -> bool:
    """Whether an EncodedJSON value of `field` is written as its text (COPY's text format
    hands it to PostgreSQL's JSON input as it is): a JSON field that prepares values as
    Django's does, on PostgreSQL. Elsewhere the field encodes it as any dict."""
    return (connection.vendor == "postgresql" and isinstance(field, models.JSONField)
            and _prepares_as(type(field), models.JSONField))


def _prepares_as(cls: type[models.Field], base: type[models.Field]) -> bool:
    """Whether `cls` prepares values as its Django base class `base` does."""
    return all(getattr(cls, name) is getattr(base, name)
               for name in ("get_db_prep_save", "get_db_prep_value", "get_prep_value"))


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
    saved(instances)


def model_rows_upsert(instances: Sequence[models.Model], *, unique: str,
                      update: Sequence[str]) -> Statement:
    """The statement that writes model instances (of one model, every field set, the
    primary key included): a row whose `unique` field's value exists already gets the
    `update` fields' values (its other columns, its primary key included, stay), the others
    are inserted. For a few rows on a hot path (a subscribe: `Model.save` built its INSERT in
    Python at five times the statement's cost); the caller runs it
    (database.statements.statements_rows), then marks the instances saved (`saved`)."""
    model, connection = type(instances[0]), transaction.get_connection()
    fields = model._meta.concrete_fields
    preparers = [_preparer(field, connection) for field in fields]
    return (_upsert_sql(model, len(instances), unique, tuple(update), connection.alias),
            [prepare(getattr(instance, field.attname)) for instance in instances
             for prepare, field in zip(preparers, fields, strict=True)])


@functools.lru_cache(maxsize=64)
def _upsert_sql(model: type[models.Model], count: int, unique: str, update: tuple[str, ...],
                alias: str) -> str:
    """`model_rows_upsert`'s text for `count` rows (built once: quoting each column was a
    tenth of a subscribe's own work)."""
    meta, quote = model._meta, connections[alias].ops.quote_name
    row = f"({placeholders(len(meta.concrete_fields))})"
    updated = ", ".join(f"{quote(meta.get_field(name).column)} = "
                        f"EXCLUDED.{quote(meta.get_field(name).column)}" for name in update)
    return (f"INSERT INTO {quote(meta.db_table)} "
            f"({', '.join(quote(field.column) for field in meta.concrete_fields)}) "
            f"VALUES {', '.join([row] * count)} "
            f"ON CONFLICT ({quote(meta.get_field(unique).column)}) DO UPDATE SET {updated}")


def saved(instances: Sequence[models.Model]) -> None:
    """Mark instances written by a plain statement as saved, as `save()` leaves them."""
    alias = transaction.get_connection().alias
    for instance in instances:
        instance._state.adding = False
        instance._state.db = alias
