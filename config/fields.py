"""Strict DRF fields: JSON values of the wrong type are 400s, never coerced (SPEC §1: `"2"`,
`true` or `1.5` is not a priority; `5` is not a name).

Bounded fields: every list, object and string of a request body has a size limit taken from
the settings `MAX_LIST_LENGTH`, `MAX_STRING_LENGTH`, `MAX_JSON_DEPTH` (or a more specific one),
checked before the elements are looked at, so that the work one request causes is bounded
(docs/limits.md). Limits are read when checked, so that a changed setting applies at once; the
MaxLengthValidator each field carries only puts the limit into the OpenAPI schema
(maxLength / maxItems / maxProperties).
"""
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.validators import MaxLengthValidator
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers


class StrictIntegerField(serializers.IntegerField):
    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


def limit(setting: str) -> Callable[[], int]:
    """The current value of a limit setting (a callable, as Django validators accept)."""
    return lambda: getattr(settings, setting)


class _Bounded:
    """Mixin: a size limit named by a setting, shown in the schema through a validator."""

    def __init__(self, *, limit_setting: str, **kwargs: Any) -> None:
        self.limit_setting = limit_setting
        super().__init__(**kwargs)
        self.validators.append(MaxLengthValidator(limit(limit_setting)))

    @property
    def limit(self) -> int:
        return getattr(settings, self.limit_setting)


class StrictCharField(_Bounded, serializers.CharField):
    """Only JSON strings of at most MAX_STRING_LENGTH characters; blanks are kept so that
    services can answer them with the reference's messages."""

    def __init__(self, *, limit_setting: str = "MAX_STRING_LENGTH", **kwargs: Any) -> None:
        kwargs.setdefault("allow_blank", True)
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(limit_setting=limit_setting, **kwargs)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        if len(data) > self.limit:
            self.fail("max_length", max_length=self.limit)
        return super().to_internal_value(data)


class BoundedListField(_Bounded, serializers.ListField):
    """A list of at most `limit_setting` (default MAX_LIST_LENGTH) elements, counted before
    any element is validated."""

    def __init__(self, *, limit_setting: str = "MAX_LIST_LENGTH", **kwargs: Any) -> None:
        super().__init__(limit_setting=limit_setting, **kwargs)

    def to_internal_value(self, data: Any) -> list:
        if isinstance(data, list) and len(data) > self.limit:
            self.fail("max_length", max_length=self.limit)
        return super().to_internal_value(data)


class RequirementListField(BoundedListField):
    """A metadata/property requirement list (OR of AND-objects): each condition is evaluated
    against every candidate, so the conditions of all its objects together are bounded by
    MAX_LIST_LENGTH too, not only the number of objects."""

    default_error_messages = {
        "max_conditions": "Ensure the requirements have no more than {max_length} conditions "
                          "together.",
    }

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(child=BoundedJSONField(allow_null=True), **kwargs)

    def to_internal_value(self, data: Any) -> list:
        if isinstance(data, list) and len(data) <= self.limit:
            conditions = sum(len(item) for item in data if isinstance(item, dict))
            if conditions > self.limit:
                self.fail("max_conditions", max_length=self.limit)
        return super().to_internal_value(data)


class BoundedDictField(_Bounded, serializers.DictField):
    """An object of at most MAX_LIST_LENGTH entries whose keys are at most MAX_STRING_LENGTH
    characters, both checked before any value is validated."""

    default_error_messages = {
        "max_entries": "Ensure this field has no more than {max_length} entries.",
        "max_key_length": "Ensure no key has more than {max_length} characters.",
    }

    def __init__(self, *, limit_setting: str = "MAX_LIST_LENGTH", **kwargs: Any) -> None:
        kwargs.setdefault("child", BoundedJSONField(allow_null=True))
        super().__init__(limit_setting=limit_setting, **kwargs)

    def to_internal_value(self, data: Any) -> dict:
        if isinstance(data, dict):
            if len(data) > self.limit:
                self.fail("max_entries", max_length=self.limit)
            if any(len(str(key)) > settings.MAX_STRING_LENGTH for key in data):
                self.fail("max_key_length", max_length=settings.MAX_STRING_LENGTH)
        return super().to_internal_value(data)


def json_bounds_error(value: Any) -> str | None:
    """Why a free-form JSON value exceeds the request limits (None when it does not): a list
    or object with more than MAX_LIST_LENGTH elements, a string or key longer than
    MAX_STRING_LENGTH, or containers nested deeper than MAX_JSON_DEPTH. Iterative, so that
    deep nesting cannot exhaust the stack."""
    max_items, max_chars = settings.MAX_LIST_LENGTH, settings.MAX_STRING_LENGTH
    max_depth = settings.MAX_JSON_DEPTH
    pending: list[tuple[Any, str, int]] = [(value, "", 1)]
    while pending:
        item, where, depth = pending.pop()
        at = f" (at {where})" if where else ""
        if isinstance(item, str) and len(item) > max_chars:
            return f"Ensure no string has more than {max_chars} characters{at}."
        if not isinstance(item, (list, dict)):
            continue
        if depth > max_depth:
            return f"Ensure lists and objects are nested at most {max_depth} levels deep{at}."
        if len(item) > max_items:
            return f"Ensure no list or object has more than {max_items} elements{at}."
        if isinstance(item, list):
            pending.extend((child, f"{where}[{index}]", depth + 1)
                           for index, child in reversed(list(enumerate(item))))
            continue
        for key in item:
            if len(key) > max_chars:
                return f"Ensure no key has more than {max_chars} characters{at}."
        pending.extend((child, f"{where}.{key}" if where else key, depth + 1)
                       for key, child in reversed(list(item.items())))
    return None


class BoundedJSONField(serializers.JSONField):
    """Free-form JSON (metadata, properties, requirements) within the request limits."""

    def to_internal_value(self, data: Any) -> Any:
        data = super().to_internal_value(data)
        error = json_bounds_error(data)
        if error:
            raise serializers.ValidationError(error)
        return data


def optional_string_list(*, limit_setting: str = "MAX_LIST_LENGTH",
                         **kwargs: Any) -> BoundedListField:
    """An optional, bounded list of strings whose elements may be null or blank (checked
    later)."""
    return BoundedListField(child=StrictCharField(allow_null=True), required=False,
                            allow_null=True, limit_setting=limit_setting, **kwargs)


class PaginationShape(serializers.Serializer):
    """The paging object as documented; values are checked by config.conventions.pagination."""

    page = serializers.IntegerField(required=False, min_value=0)
    size = serializers.IntegerField(required=False, min_value=1)
    direction = serializers.ChoiceField(choices=["ASC", "DESC"], required=False)
    sortField = serializers.CharField(required=False)

    class Meta:
        ref_name = "Pagination"


@extend_schema_field(PaginationShape)
class PaginationField(BoundedJSONField):
    """Passes the raw paging object on to `parse_pagination`, which answers with the
    reference's messages."""
