"""Strict DRF fields: JSON values of the wrong type are 400s, never coerced (SPEC §1: `"2"`,
`true` or `1.5` is not a priority; `5` is not a name)."""
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers


class StrictIntegerField(serializers.IntegerField):
    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictCharField(serializers.CharField):
    """Only JSON strings; blanks are kept so that services can answer them with the
    reference's messages."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("allow_blank", True)
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


def documented(field_class: type[serializers.Field], schema: dict[str, Any]) -> type:
    """A subclass of `field_class` whose OpenAPI schema is `schema`. A subclass, because DRF
    copies a serializer's fields by re-instantiating their class."""
    return extend_schema_field(schema)(type(field_class.__name__, (field_class,), {}))


def optional_positive_integer(*, maximum: int | None = None,
                              **kwargs: Any) -> StrictIntegerField:
    """An optional positive integer (null = absent). Zero and negative values are refused by the
    service with the reference's message; the schema says so with `minimum`."""
    schema: dict[str, Any] = {"type": "integer", "minimum": 1, "nullable": True}
    if maximum is not None:
        schema["maximum"] = maximum
        kwargs["max_value"] = maximum
    return documented(StrictIntegerField, schema)(required=False, allow_null=True, **kwargs)


class NullPassedOn:
    """For a field whose `null` the service refuses with the reference's message: DRF passes
    it on instead of answering "This field may not be null.", and the field stays documented
    as not nullable."""

    def validate_empty_values(self, data: Any) -> tuple[bool, Any]:
        if data is None:
            return True, None
        return super().validate_empty_values(data)


@extend_schema_field({
    "type": "object", "additionalProperties": {},
    "description": "Key (path) → required value, or `{\"op\": <operator>, \"value\": ...}`; "
    "all conditions must hold."})
class RequirementField(NullPassedOn, serializers.JSONField):
    """One metadata/property requirement object; checked by store.metadata_requirements."""


@extend_schema_field({"type": "string", "pattern": "[^\\x00-\\x20]",
                      "description": "Not blank (a null or blank element is a 400)."})
class ListElementField(NullPassedOn, StrictCharField):
    """A string element of a request list; the service refuses null and blank elements
    (`... list contains null or empty element`)."""


def optional_string_list(**kwargs: Any) -> serializers.ListField:
    """An optional list of strings; null or blank elements are refused by the service."""
    return serializers.ListField(child=ListElementField(), required=False, allow_null=True,
                                 **kwargs)


def _blank_or(pattern: str) -> str:
    """A pattern for a text that is trimmed and whose blank means "absent"."""
    return rf"^\s*(?:{pattern})?\s*$"


def pagination_schema(*, sort_fields: Sequence[str], default_sort_field: str,
                      default_direction: str) -> dict[str, Any]:
    """The paging object as `config.conventions.pagination.parse_pagination` accepts it for an
    endpoint: null members are absent; `direction` and `sortField` are trimmed and a blank one is
    absent (the reference's PageService); `direction` in any case; sort fields case-sensitive."""
    return {
        "type": "object",
        "nullable": True,
        "description": "Absent or null: the first page of MAX_PAGE_SIZE entries in the default "
        "order. `page` and `size` come together (one without the other is a 400); "
        "(page + 1) × size must stay below 2^62.",
        "properties": {
            "page": {"type": "integer", "minimum": 0, "nullable": True,
                     "description": "From 0."},
            "size": {"type": "integer", "minimum": 1, "maximum": settings.MAX_PAGE_SIZE,
                     "nullable": True, "description": "1..MAX_PAGE_SIZE."},
            "direction": {"type": "string", "nullable": True,
                          "pattern": _blank_or("[Aa][Ss][Cc]|[Dd][Ee][Ss][Cc]"),
                          "description": f"ASC or DESC in any case; blank: {default_direction}."},
            "sortField": {"type": "string", "nullable": True,
                          "pattern": _blank_or("|".join(sort_fields)),
                          "description": f"One of {', '.join(sort_fields)} (case-sensitive, "
                          f"surrounding blanks ignored); blank: {default_sort_field}. Any "
                          "other value is a 400 listing these."},
        },
    }


class PaginationField(serializers.JSONField):
    """Passes the raw paging object on to `parse_pagination`, which answers with the
    reference's messages."""


def pagination_field(*, sort_fields: Sequence[str], default_sort_field: str,
                     default_direction: str = "ASC") -> PaginationField:
    """The optional paging object of one query endpoint, documented with that endpoint's sort
    fields."""
    schema = pagination_schema(sort_fields=sort_fields, default_sort_field=default_sort_field,
                               default_direction=default_direction)
    return documented(PaginationField, schema)(required=False, allow_null=True)
