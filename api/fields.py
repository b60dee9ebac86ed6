"""Strict DRF fields: JSON values of the wrong type are 400s, never coerced (SPEC §1: `"2"`,
`true` or `1.5` is not a priority; `5` is not a name).

Bounded fields: every list, object and string of a request body has a size limit named by a
setting (docs/limits.md), read when checked (a changed setting applies at once) and checked
before the elements are looked at. The SchemaLimit each field carries only puts the limit into
the OpenAPI schema (maxLength / maxItems / maxProperties, by the schema's type).
"""
from collections.abc import Callable, Sequence
from typing import Any

from django.conf import settings
from django.core.validators import MaxLengthValidator
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from api.schema import BLANK_REFUSED


class StrictIntegerField(serializers.IntegerField):
    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


def limit(setting: str) -> Callable[[], int]:
    """The current value of a limit setting (a callable, as Django validators accept)."""
    return lambda: getattr(settings, setting)


class SchemaLimit(MaxLengthValidator):
    """A size limit for the OpenAPI schema only: drf-spectacular writes it as maxLength,
    maxItems or maxProperties after the type of the field's schema (also of a `documented()`
    one), at generation time. The field checks the limit itself, before its elements are looked
    at and with its own message; a free-form JSON value may be a number, which has no length."""

    def __call__(self, value: Any) -> None:
        pass


class _Bounded:
    """Mixin: a size limit named by a setting, shown in the schema through a SchemaLimit."""

    def __init__(self, *, limit_setting: str, **kwargs: Any) -> None:
        self.limit_setting = limit_setting
        super().__init__(**kwargs)
        self.validators.append(SchemaLimit(limit(limit_setting)))

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
        super().__init__(child=RequirementField(), **kwargs)

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


# DRF turns ints into text, which Python refuses beyond 4300 digits; JSON bodies never hold
# such ints, and the compiled checks (api.shapes) decline those beyond this.
HUGE_INT = 10 ** 600


def json_bounds_error(value: Any, *, json_only: bool = False) -> str | None:
    """Why a free-form JSON value exceeds the request limits (None when it does not): a list
    or object with more than MAX_LIST_LENGTH elements, a string or key longer than
    MAX_STRING_LENGTH, or containers nested deeper than MAX_JSON_DEPTH. With `json_only`, also
    anything JSON cannot hold (a tuple, a non-string key, an int beyond HUGE_INT), which the
    compiled checks (api.shapes) decline. Iterative, so that deep nesting cannot exhaust the
    stack."""
    max_items, max_chars = settings.MAX_LIST_LENGTH, settings.MAX_STRING_LENGTH
    max_depth = settings.MAX_JSON_DEPTH
    pending: list[tuple[Any, str, int]] = [(value, "", 1)]
    while pending:
        item, where, depth = pending.pop()
        at = f" (at {where})" if where else ""
        if isinstance(item, str) and len(item) > max_chars:
            return f"Ensure no string has more than {max_chars} characters{at}."
        if not isinstance(item, (list, dict)):
            if json_only and not (item is None or type(item) in (str, bool, float) or (
                    type(item) is int and -HUGE_INT < item < HUGE_INT)):
                return "Not JSON."
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
            if json_only and type(key) is not str:
                return "Not JSON."
            if len(key) > max_chars:
                return f"Ensure no key has more than {max_chars} characters{at}."
        pending.extend((child, f"{where}.{key}" if where else key, depth + 1)
                       for key, child in reversed(list(item.items())))
    return None


class BoundedJSONField(_Bounded, serializers.JSONField):
    """Free-form JSON (metadata, properties, requirements) within the request limits. Where
    its schema says it is an object, the schema shows MAX_LIST_LENGTH as `maxProperties`."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(limit_setting="MAX_LIST_LENGTH", **kwargs)

    def to_internal_value(self, data: Any) -> Any:
        data = super().to_internal_value(data)
        error = json_bounds_error(data)
        if error:
            raise serializers.ValidationError(error)
        return data


def documented(field_class: type[serializers.Field], schema: dict[str, Any]) -> type:
    """A subclass of `field_class` whose OpenAPI schema is `schema`. A subclass, because DRF
    copies a serializer's fields by re-instantiating their class."""
    return extend_schema_field(schema)(type(field_class.__name__, (field_class,), {}))


def not_blank_pattern(blanks: str) -> str:
    """A text holding a character outside the class `blanks`, and no NUL, which the input gate
    (api.input_safety) refuses anywhere in a request."""
    return f"^[^\\x00]*[^\\x00{blanks}][^\\x00]*$"


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
class RequirementField(NullPassedOn, BoundedJSONField):
    """One metadata/property requirement object; checked by store.metadata_requirements.
    Within the request limits like any free-form JSON; its `maxProperties` is in the schema."""


@extend_schema_field({"type": "string", "pattern": not_blank_pattern("\\x01-\\x20"),
                      BLANK_REFUSED: True,
                      "description": "Not blank (a null or blank element is a 400)."})
class ListElementField(NullPassedOn, StrictCharField):
    """A string element of a request list, at most MAX_STRING_LENGTH characters; the service
    refuses null and blank elements (`... list contains null or empty element`). The field
    lets blanks through to the service (for that message), so drf-spectacular would offer the
    blank string as an alternative; BLANK_REFUSED has `api.schema` take it out again."""


# What Python's str.strip() removes (str.isspace), spelled out for any regex engine (ECMA's
# `\s` is not Python's).
PYTHON_BLANKS = ("\\t\\n\\x0b\\x0c\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029"
                 "\\u202f\\u205f\\u3000")


def not_blank_text(**kwargs: Any) -> StrictCharField:
    """A text the service refuses when null or blank by Python's strip (an update's
    `instanceId`: "Instance id is empty"); mark it `required_not_null` on the serializer."""
    schema = {"type": "string", "pattern": not_blank_pattern(PYTHON_BLANKS), BLANK_REFUSED: True,
              "description": "Not blank."}
    return documented(StrictCharField, schema)(required=False, allow_null=True, **kwargs)


def optional_string_list(*, limit_setting: str = "MAX_LIST_LENGTH", pattern: str | None = None,
                         **kwargs: Any) -> BoundedListField:
    """An optional list of at most `limit_setting` strings; null or blank elements are refused
    by the service. With `pattern`, the schema of an element is that pattern (which must
    refuse blanks), for elements the service reads as one of a fixed set of values."""
    child = ListElementField if pattern is None else documented(ListElementField, {
        "type": "string", "pattern": pattern, BLANK_REFUSED: True})
    return BoundedListField(child=child(), required=False, allow_null=True,
                            limit_setting=limit_setting, **kwargs)


def bulk_list(child: serializers.Field, **kwargs: Any) -> serializers.ListField:
    """An optional list of bulk entries (rule create, instance create and update). The service
    checks its length against MAX_BULK_SIZE with the reference's message, after the entries'
    types; the schema shows that limit as `maxItems`."""
    return serializers.ListField(child=child, required=False, allow_null=True,
                                 validators=[SchemaLimit(limit("MAX_BULK_SIZE"))], **kwargs)


def _blank_or(pattern: str) -> str:
    """A pattern for a text that is trimmed and whose blank means "absent"."""
    return rf"^\s*(?:{pattern})?\s*$"


_ABSENT = {"type": "integer", "nullable": True, "enum": [None]}
# `page` and `size` both given, or neither (absent or null): the service answers "If page
# parameter is defined then size parameter cannot be undefined" and the converse otherwise.
_PAGE_AND_SIZE_TOGETHER = [
    {"title": "A page", "required": ["page", "size"],
     "properties": {"page": {"type": "integer"}, "size": {"type": "integer"}}},
    {"title": "The first page", "properties": {"page": _ABSENT, "size": _ABSENT}},
]


def pagination_field(*, sort_fields: Sequence[str], default_sort_field: str,
                     default_direction: str = "ASC") -> BoundedJSONField:
    """The optional paging object of one query endpoint, passed on raw (within the request
    limits) to `conventions.pagination.parse_pagination`, which answers with the reference's
    messages. Its schema says what that accepts: null members are absent; `direction` and
    `sortField` are trimmed and a blank one is absent (the reference's PageService);
    `direction` in any case; this endpoint's sort fields, case-sensitive. Texts are bounded
    like every string of a request (MAX_STRING_LENGTH), the number of members by the field's
    own limit."""
    max_chars = settings.MAX_STRING_LENGTH
    schema = {
        "type": "object",
        "nullable": True,
        "anyOf": _PAGE_AND_SIZE_TOGETHER,
        "description": "Absent or null: the first page of MAX_PAGE_SIZE entries in the default "
        "order. `page` and `size` come together (one without the other is a 400, hence "
        "the `anyOf`); "
        "(page + 1) × size must stay below 2^62.",
        "properties": {
            "page": {"type": "integer", "nullable": True,
                     "description": "From 0; a negative page is page 0 (the Java PageService)."},
            "size": {"type": "integer", "maximum": settings.MAX_PAGE_SIZE, "nullable": True,
                     "description": "At most MAX_PAGE_SIZE; below 1 it is MAX_PAGE_SIZE (the "
                     "Java PageService)."},
            "direction": {"type": "string", "nullable": True, "maxLength": max_chars,
                          "pattern": _blank_or("[Aa][Ss][Cc]|[Dd][Ee][Ss][Cc]"),
                          "description": f"ASC or DESC in any case; blank: {default_direction}."},
            "sortField": {"type": "string", "nullable": True, "maxLength": max_chars,
                          "pattern": _blank_or("|".join(sort_fields)),
                          "description": f"One of {', '.join(sort_fields)} (case-sensitive, "
                          f"surrounding blanks ignored); blank: {default_sort_field}. Any "
                          "other value is a 400 listing these."},
        },
    }
    return documented(BoundedJSONField, schema)(required=False, allow_null=True)
