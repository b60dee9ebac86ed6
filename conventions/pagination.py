"""The paging object `{page, size, direction, sortField}` of query requests (SPEC §1,
reference-simple §5).

Absent object: the first page of MAX_PAGE_SIZE entries in the endpoint's default order. `page`
and `size` come together; `size` ≤ MAX_PAGE_SIZE; then, as the Java PageService normalizes them,
`page` < 0 is page 0 and `size` < 1 is MAX_PAGE_SIZE (not refused); direction ASC/DESC in any
case; sort fields are case-sensitive and endpoint-specific.
"""
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models import QuerySet

from conventions.exceptions import InvalidParameter

ASC = "ASC"
DESC = "DESC"
MAX_OFFSET = 2**62  # what a database OFFSET can hold, with room to spare


@dataclass(frozen=True)
class PageRequest:
    page: int
    size: int
    direction: str
    sort_field: str

    @property
    def offset(self) -> int:
        return self.page * self.size


def _optional_int(data: dict[str, Any], key: str) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidParameter(f"pagination.{key}: A valid integer is required.")
    return value


def _optional_text(data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidParameter(f"pagination.{key}: Not a valid string.")
    return value.strip()


def parse_pagination(
    data: object,
    *,
    sort_fields: Sequence[str],
    default_sort_field: str,
    default_direction: str = ASC,
) -> PageRequest:
    max_size = settings.MAX_PAGE_SIZE
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InvalidParameter("pagination: Expected an object.")
    page = _optional_int(data, "page")
    size = _optional_int(data, "size")
    if size is not None and page is None:
        raise InvalidParameter("If size parameter is defined then page parameter cannot be undefined")
    if page is not None and size is None:
        raise InvalidParameter("If page parameter is defined then size parameter cannot be undefined")
    if size is not None and size > max_size:
        raise InvalidParameter(f"The page size cannot be larger than {max_size}")
    page = max(page or 0, 0)
    size = size if size is not None and size >= 1 else max_size
    if (page + 1) * size > MAX_OFFSET:
        raise InvalidParameter("The page number is too large")

    direction = _optional_text(data, "direction").upper() or default_direction
    if direction not in (ASC, DESC):
        raise InvalidParameter("Direction is invalid. Only ASC or DESC are allowed")
    sort_field = _optional_text(data, "sortField") or default_sort_field
    if sort_field not in sort_fields:
        raise InvalidParameter(
            f"Sort field is invalid. Only the following are allowed: [{', '.join(sort_fields)}]"
        )
    return PageRequest(page, size, direction, sort_field)


def filter_given(queryset: QuerySet, **lookups: Any) -> QuerySet:
    """`queryset` filtered by each lookup whose value is given (neither None nor an empty
    list)."""
    return queryset.filter(**{lookup: value for lookup, value in lookups.items()
                              if value is not None and value not in ((), [])})


def order(queryset: QuerySet, page: PageRequest, *, columns: dict[str, str],
          tie_breaker: str = "pk") -> QuerySet:
    """Order by the requested field (mapped to its column), ties broken by `tie_breaker` in
    the same direction."""
    sign = "-" if page.direction == DESC else ""
    column = columns[page.sort_field]
    ordering = [f"{sign}{column}"]
    if column != tie_breaker:
        ordering.append(f"{sign}{tie_breaker}")
    return queryset.order_by(*ordering)


def paginate(
    queryset: QuerySet, page: PageRequest, *, columns: dict[str, str], tie_breaker: str = "pk"
) -> tuple[QuerySet, int]:
    """The requested page, ordered and sliced in SQL, and the total number of matches."""
    ordered = order(queryset, page, columns=columns, tie_breaker=tie_breaker)
    return ordered[page.offset:page.offset + page.size], queryset.count()
