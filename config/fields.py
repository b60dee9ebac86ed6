"""Strict DRF fields: JSON values of the wrong type are 400s, never coerced (SPEC §1: `"2"`,
`true` or `1.5` is not a priority; `5` is not a name)."""
from typing import Any

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


def optional_string_list(**kwargs: Any) -> serializers.ListField:
    """An optional list of strings whose elements may be null or blank (checked later)."""
    return serializers.ListField(
        child=StrictCharField(allow_null=True), required=False, allow_null=True, **kwargs
    )


class PaginationShape(serializers.Serializer):
    """The paging object as documented; values are checked by config.conventions.pagination."""

    page = serializers.IntegerField(required=False, min_value=0)
    size = serializers.IntegerField(required=False, min_value=1)
    direction = serializers.ChoiceField(choices=["ASC", "DESC"], required=False)
    sortField = serializers.CharField(required=False)

    class Meta:
        ref_name = "Pagination"


@extend_schema_field(PaginationShape)
class PaginationField(serializers.JSONField):
    """Passes the raw paging object on to `parse_pagination`, which answers with the
    reference's messages."""
