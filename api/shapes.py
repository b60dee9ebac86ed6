"""The fast forms of a wire shape, compiled at import from its one declaration, the DRF
serializer: `compile_check` (a request body's type check) and `compile_renderer` (an answer's
data). Building and running a serializer costs 100-200 µs per request (its fields are
deep-copied, every value passes a chain of DRF calls); the compiled forms take a few µs.

A compiled check is one-sided: for a parsed JSON body it returns exactly the serializer's
`validated_data` (the same keys in the same order, absent fields left out, unknown keys dropped,
free-form JSON values the very objects of the body) when the serializer surely accepts the body,
and None for anything else. The caller then runs the serializer, which accepts or answers with
its own messages, so declining is always safe: what JSON cannot hold (a tuple, a non-string key,
an int beyond 10**600) is declined too.

A compiled renderer gives exactly `Serializer(instance).data` as plain dicts, key order
included. It reads attributes as DRF does (a Mapping by key, anything else by attribute); they
are data, not callables or querysets.

Only the field kinds, mixins and validators named below are understood, on serializers that
override none of DRF's validation or representation methods. Anything else (another field
class, a field subclass with methods of its own, a validator, a `validate_<field>` method, a
default, a dotted source) makes compiling raise ShapeNotCompiled at import: a field added to a
serializer is covered, or the process does not start.
"""
import re
from collections.abc import Callable, Mapping
from operator import attrgetter, itemgetter
from typing import Any

from django.conf import settings
from django.core import validators as django
from django.core.signals import setting_changed
from django.dispatch import receiver
from rest_framework import serializers
from rest_framework.fields import empty
from rest_framework.settings import api_settings
from rest_framework.validators import ProhibitSurrogateCharactersValidator

from api.fields import (
    BoundedDictField,
    BoundedJSONField,
    BoundedListField,
    NullPassedOn,
    RequirementListField,
    SchemaLimit,
    StrictCharField,
    StrictIntegerField,
)
from conventions.timestamps import format_utc


class ShapeNotCompiled(TypeError):
    """A serializer holds something the compiler does not understand."""


# Serializer mixin: fields whose value is None are left out of the representation. A comment,
# not a docstring: drf-spectacular would publish it as the description of the serializers.
class NoneLeftOut:

    def to_representation(self, instance: Any) -> dict:
        data = super().to_representation(instance)
        return {key: value for key, value in data.items() if value is not None}


_DECLINED: Any = object()  # a check's answer for a value it does not vouch for
_ABSENT: Any = object()
_SKIP, _RAISE = object(), object()  # a renderer's missing attribute: key left out, or error
_HUGE_INT = 10 ** 600  # DRF turns ints into text; Python refuses that beyond 4300 digits
_REFUSED_CHARACTER = re.compile("[\x00\ud800-\udfff]").search
# What a class may define without changing what its fields do.
_INERT = frozenset({"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__",
                    "__firstlineno__", "__static_attributes__", "__annotations__",
                    "_spectacular_annotation", "default_error_messages", "_declared_fields"})


# The limit settings a check has read (a read of django.conf.settings costs some 0.3 µs, and a
# body meets a dozen limits), forgotten when a setting changes (tests).
_settings: dict[str, Any] = {}


def _setting(name: str) -> Any:
    try:
        return _settings[name]
    except KeyError:
        value = _settings[name] = getattr(settings, name)
        return value


@receiver(setting_changed)
def _forget(**kwargs: object) -> None:
    _settings.clear()


def _kind(obj: Any, kinds: dict, mixins: tuple = (), allowed: frozenset = frozenset()) -> type:
    """The first class of `obj`'s MRO found in `kinds`. The classes before it may only be
    `mixins` or add documentation and messages (`allowed`: names a serializer may define)."""
    for cls in type(obj).__mro__:
        if cls in kinds:
            return cls
        if cls not in mixins and (own := set(vars(cls)) - _INERT - allowed):
            raise ShapeNotCompiled(f"{type(obj).__name__}: {cls.__name__} defines "
                                   f"{', '.join(sorted(own))}")
    raise ShapeNotCompiled(f"{type(obj).__name__} is not a field kind the compiler knows")


def _no_refused_character(value: str) -> bool:
    if value.isascii():  # the common case, cheaper than the search
        return "\x00" not in value
    return _REFUSED_CHARACTER(value) is None


# Django's limit validators: whether a value passes, given the limit.
_LIMITS: dict[type, Callable[[Any, Any], bool]] = {
    django.MaxLengthValidator: lambda value, limit: len(value) <= limit,
    django.MinLengthValidator: lambda value, limit: len(value) >= limit,
    django.MaxValueValidator: lambda value, limit: value <= limit,
    django.MinValueValidator: lambda value, limit: value >= limit,
}


def _limit_test(validator: django.BaseValidator) -> Callable[[Any], bool]:
    passes, limit = _LIMITS[type(validator)], validator.limit_value
    if callable(limit):
        return lambda value: passes(value, limit())
    return lambda value: passes(value, limit)


def _validators(field: serializers.Field) -> Callable[[Any], bool] | None:
    """Whether a value passes the field's validators (None: there is nothing to check)."""
    tests: list[Callable[[Any], bool]] = []
    for validator in field.validators:
        kind = type(validator)
        if kind is SchemaLimit:  # the schema's only
            continue
        if kind in (django.ProhibitNullCharactersValidator, ProhibitSurrogateCharactersValidator):
            if _no_refused_character not in tests:
                tests.append(_no_refused_character)
        elif kind in _LIMITS:
            tests.append(_limit_test(validator))
        else:
            raise ShapeNotCompiled(f"{type(field).__name__}: validator {kind.__name__}")
    if len(tests) < 2:
        return tests[0] if tests else None
    return lambda value: all(test(value) for test in tests)


# --- checks ---------------------------------------------------------------------------------

def compile_check(serializer_class: type[serializers.Serializer]) -> Callable[[Any], dict | None]:
    """`check(document)`: the serializer's validated_data for a parsed JSON body it surely
    accepts, else None."""
    check = _check(serializer_class())

    def checked(document: Any) -> dict | None:
        value = check(document)
        return None if value is _DECLINED else value
    return checked


def _nullable(field: serializers.Field) -> bool:
    return field.allow_null or isinstance(field, NullPassedOn)


def _check(field: serializers.Field) -> Callable[[Any], Any]:
    """The check of a field's non-null value: the validated value, or _DECLINED."""
    kind = _kind(field, _CHECKS, mixins=(NullPassedOn,))
    return _CHECKS[kind](field)


def _member(value: Any, nullable: bool, check: Callable[[Any], Any]) -> Any:
    """A member of an object or list checked: null where the field takes it."""
    if value is None:
        return None if nullable else _DECLINED
    return check(value)


def _serializer_check(serializer: serializers.Serializer) -> Callable[[Any], Any]:
    # Validation methods (`validate`, `validate_<field>`, Meta's validators) are refused by
    # _kind, as things a serializer class defines.
    fields = []
    for name, field in serializer.fields.items():
        if field.read_only:
            continue
        if field.default is not empty or field.source_attrs != [name]:
            raise ShapeNotCompiled(f"{type(serializer).__name__}.{name}")
        fields.append((name, field.required, _nullable(field), _check(field)))

    def check(data: Any) -> Any:
        if type(data) is not dict:
            return _DECLINED
        checked = {}
        for name, required, nullable, check_value in fields:
            value = data.get(name, _ABSENT)
            if value is _ABSENT:
                if required:
                    return _DECLINED
                continue
            if (value := _member(value, nullable, check_value)) is _DECLINED:
                return _DECLINED
            checked[name] = value
        return checked
    return check


def _text_check(field: StrictCharField) -> Callable[[Any], Any]:
    if field.trim_whitespace:
        raise ShapeNotCompiled(f"{type(field).__name__}: trim_whitespace")
    setting, allow_blank, valid = field.limit_setting, field.allow_blank, _validators(field)

    def check(value: Any) -> Any:
        if type(value) is not str or len(value) > _setting(setting):
            return _DECLINED
        if not value:  # DRF's CharField runs no validator on ""
            return value if allow_blank else _DECLINED
        return value if valid is None or valid(value) else _DECLINED
    return check


def _integer_check(field: StrictIntegerField) -> Callable[[Any], Any]:
    valid = _validators(field)
    return lambda value: (value if type(value) is int and -_HUGE_INT < value < _HUGE_INT
                          and (valid is None or valid(value)) else _DECLINED)


def _elements(field: serializers.Field) -> tuple[bool, Callable[[Any], Any]]:
    return _nullable(field.child), _check(field.child)


def _list_check(field: BoundedListField) -> Callable[[Any], Any]:
    setting, allow_empty, valid = field.limit_setting, field.allow_empty, _validators(field)
    nullable, check_element = _elements(field)
    conditions = isinstance(field, RequirementListField)

    def check(value: Any) -> Any:
        if type(value) is not list:
            return _DECLINED
        limit = _setting(setting)
        if len(value) > limit or not (value or allow_empty):
            return _DECLINED
        if conditions and sum([len(item) for item in value if type(item) is dict]) > limit:
            return _DECLINED
        checked = []
        for item in value:
            if (item := _member(item, nullable, check_element)) is _DECLINED:
                return _DECLINED
            checked.append(item)
        return checked if valid is None or valid(checked) else _DECLINED
    return check


def _dict_check(field: BoundedDictField) -> Callable[[Any], Any]:
    setting, allow_empty, valid = field.limit_setting, field.allow_empty, _validators(field)
    nullable, check_element = _elements(field)

    def check(value: Any) -> Any:
        if type(value) is not dict:
            return _DECLINED
        if len(value) > _setting(setting) or not (value or allow_empty):
            return _DECLINED
        max_chars = _setting("MAX_STRING_LENGTH")
        checked = {}
        for key, item in value.items():
            if type(key) is not str or len(key) > max_chars:
                return _DECLINED
            if (item := _member(item, nullable, check_element)) is _DECLINED:
                return _DECLINED
            checked[key] = item
        return checked if valid is None or valid(checked) else _DECLINED
    return check


def _json_check(field: BoundedJSONField) -> Callable[[Any], Any]:
    valid = _validators(field)
    return lambda value: (value if _json_within_bounds(value) and (valid is None or valid(value))
                          else _DECLINED)


def _json_within_bounds(value: Any) -> bool:
    """Whether `value` is made of JSON types only and api.fields.json_bounds_error finds no
    fault in it. Iterative, as that function, so that a large MAX_JSON_DEPTH cannot meet the
    recursion limit."""
    kind = type(value)
    if kind is str:  # most values are scalars
        return len(value) <= _setting("MAX_STRING_LENGTH")
    if kind is bool or kind is float:
        return True
    if kind is int:
        return -_HUGE_INT < value < _HUGE_INT
    max_items, max_chars = _setting("MAX_LIST_LENGTH"), _setting("MAX_STRING_LENGTH")
    max_depth = _setting("MAX_JSON_DEPTH")
    pending = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        kind = type(item)
        if kind is str:
            if len(item) > max_chars:
                return False
        elif kind is dict or kind is list:
            if depth > max_depth or len(item) > max_items:
                return False
            if kind is dict:
                for key in item:
                    if type(key) is not str or len(key) > max_chars:
                        return False
                item = item.values()
            pending.extend([(child, depth + 1) for child in item])
        elif kind is int:
            if not -_HUGE_INT < item < _HUGE_INT:
                return False
        elif kind is not bool and kind is not float and item is not None:
            return False
    return True


_CHECKS: dict[type, Callable] = {
    serializers.Serializer: _serializer_check,
    StrictCharField: _text_check,
    StrictIntegerField: _integer_check,
    RequirementListField: _list_check,
    BoundedListField: _list_check,
    BoundedDictField: _dict_check,
    BoundedJSONField: _json_check,
}


# --- renderers ------------------------------------------------------------------------------

def compile_renderer(serializer_class: type[serializers.Serializer]) -> Callable[[Any], dict]:
    """`render(instance)`: exactly `serializer_class(instance).data`, as plain dicts."""
    return _renderer(serializer_class())


def _renderer(field: serializers.Field) -> Callable[[Any], Any] | None:
    """The representation of a field's non-null value (None: the value itself)."""
    allowed = frozenset()
    if isinstance(field, serializers.Serializer):
        allowed = frozenset(child.method_name for child in field.fields.values()
                            if isinstance(child, serializers.SerializerMethodField))
    return _RENDERERS[_kind(field, _RENDERERS, mixins=(NoneLeftOut,), allowed=allowed)](field)


def _serializer_renderer(serializer: serializers.Serializer) -> Callable[[Any], dict]:
    by_key, by_attribute = [], []  # (name, getter, when missing, renderer), for each kind
    for name, field in serializer.fields.items():
        if field.write_only:
            continue
        if isinstance(field, serializers.SerializerMethodField):
            method = getattr(serializer, field.method_name)  # called with the whole instance
            by_key.append((name, method, _RAISE, None))
            by_attribute.append((name, method, _RAISE, None))
            continue
        if field.default is not empty or len(field.source_attrs) > 1:
            raise ShapeNotCompiled(f"{type(serializer).__name__}.{name}")
        missing = None if field.allow_null else _RAISE if field.required else _SKIP
        render_value = _renderer(field)
        if not field.source_attrs:  # source="*"
            by_key.append((name, _itself, missing, render_value))
            by_attribute.append((name, _itself, missing, render_value))
        else:
            by_key.append((name, itemgetter(field.source_attrs[0]), missing, render_value))
            by_attribute.append((name, attrgetter(field.source_attrs[0]), missing, render_value))
    none_left_out = isinstance(serializer, NoneLeftOut)

    def render(instance: Any) -> dict:
        data = {}
        mapping = type(instance) is dict or isinstance(instance, Mapping)
        for name, get, missing, render_value in by_key if mapping else by_attribute:
            try:
                value = get(instance)
            except (KeyError, AttributeError):
                if missing is _RAISE:
                    raise
                if missing is _SKIP:
                    continue
                value = None
            if value is not None and render_value is not None:
                value = render_value(value)
            if value is not None or not none_left_out:
                data[name] = value
        return data
    return render


def _itself(value: Any) -> Any:
    return value


def _element_renderer(field: serializers.Field) -> Callable[[Any], Any]:
    return _renderer(field) or _itself


def _many_renderer(field: serializers.ListSerializer) -> Callable[[Any], list]:
    render = _element_renderer(field.child)
    return lambda value: [render(item) for item in value]


def _list_renderer(field: serializers.ListField) -> Callable[[Any], list]:
    render = _element_renderer(field.child)
    return lambda value: [None if item is None else render(item) for item in value]


def _dict_renderer(field: serializers.DictField) -> Callable[[Any], dict]:
    render = _element_renderer(field.child)
    return lambda value: {str(key): None if item is None else render(item)
                          for key, item in value.items()}


def _json_renderer(field: serializers.JSONField) -> None:
    """The value itself (None: nothing to call)."""
    if field.binary:
        raise ShapeNotCompiled(f"{type(field).__name__}: binary")


def _datetime_renderer(field: serializers.DateTimeField) -> Callable[[Any], Any]:
    """DRF's DateTimeField in ISO 8601, the current time zone UTC (as TIME_ZONE is): a string
    is passed on, a naive datetime is read as UTC, fractional seconds only when non-zero."""
    if (getattr(field, "format", api_settings.DATETIME_FORMAT).lower() != "iso-8601"
            or hasattr(field, "timezone") or settings.TIME_ZONE != "UTC" or not settings.USE_TZ):
        raise ShapeNotCompiled(f"{type(field).__name__}: not ISO 8601 in UTC")

    def render(value: Any) -> str | None:
        if not value:
            return None
        if isinstance(value, str):
            return value
        if value.utcoffset() is None:
            return value.isoformat() + "Z"
        return format_utc(value)
    return render


_RENDERERS: dict[type, Callable] = {
    serializers.Serializer: _serializer_renderer,
    serializers.ListSerializer: _many_renderer,
    serializers.ListField: _list_renderer,
    serializers.DictField: _dict_renderer,
    serializers.CharField: lambda field: str,
    serializers.IntegerField: lambda field: int,
    serializers.JSONField: _json_renderer,
    serializers.DateTimeField: _datetime_renderer,
}
