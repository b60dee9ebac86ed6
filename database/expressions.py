"""Query expressions of our own: `AnyOf`, a field's value among many, with one parameter."""
from collections.abc import Iterable
from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db.models import BooleanField, Expression, F


class AnyOf(Expression):
    """`filter(AnyOf("field", values))`: the field's value is one of `values`, as
    `field__in=values` says it. On PostgreSQL it is written `field = ANY(%s)` with the values
    as one array parameter: the ORM's IN puts one placeholder per value, and preparing and
    binding 500 of them was most of the cost, in Python, of a fan-out's statements that
    name a batch of rows (docs/performance.md). Elsewhere (SQLite) it is an IN, as the ORM
    writes it. Values are prepared by the field as for a lookup; no values match no row.
    For a column that may be NULL, `exclude(AnyOf(...))` leaves out its NULL rows, which
    `exclude(field__in=...)` keeps: it is meant for keys and ids."""

    conditional = True
    output_field = BooleanField()

    def __init__(self, field: str, values: Iterable[Any]) -> None:
        super().__init__()
        self.column = F(field)
        self.values = list(values)

    def get_source_expressions(self) -> list:
        return [self.column]

    def set_source_expressions(self, expressions: list) -> None:
        [self.column] = expressions

    def resolve_expression(self, query=None, allow_joins=True, reuse=None, summarize=False,
                           for_save=False):
        resolved = self.copy()
        resolved.is_summary = summarize
        resolved.column = self.column.resolve_expression(query, allow_joins, reuse, summarize,
                                                       for_save)
        return resolved

    def as_sql(self, compiler, connection):
        if not self.values:
            raise EmptyResultSet
        lhs, lhs_params = compiler.compile(self.column)
        field = self.column.output_field
        values = [field.get_db_prep_value(value, connection, prepared=False)
                  for value in self.values]
        if connection.vendor == "postgresql":
            return f"{lhs} = ANY(%s::{field.db_type(connection)}[])", [*lhs_params, values]
        return (f"{lhs} IN ({', '.join(['%s'] * len(values))})", [*lhs_params, *values])
