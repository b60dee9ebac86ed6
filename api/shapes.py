"""A wire shape's fast forms, compiled at import from its one declaration, the DRF serializer.
Building and running a serializer costs 100-200 µs per request (its fields are deep-copied,
every value passes a chain of DRF calls); the compiled forms take a few µs.

`compile_check`: for a parsed JSON body, exactly the serializer's `validated_data` (free-form
JSON values the body's own objects) when the serializer surely accepts it, else None: the caller
then runs the serializer, which answers with its messages. Declining is always safe.
`compile_renderer`: exactly `Serializer(instance).data`, as plain dicts (attributes are data,
not callables or querysets).

Only the field kinds, mixins and validators named below are understood. Anything else (another
field class, a subclass with methods of its own, a validator, a `validate_<field>` method, a
default, a dotted source) raises ShapeNotCompiled at import, so no field escapes the fast forms.
"""
import functools
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
    HUGE_INT,
    BoundedDictField,
    BoundedJSONField,
    BoundedListField,
    NullPassedOn,
    RequirementListField,
    SchemaLimit,
    StrictCharField,
    StrictIntegerField,
    json_bounds_error,
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
_REFUSED_CHARACTER = re.compile("[\x00\ud800-\udfff]").search
# What a class may define without changing what its fields do.
_INERT = frozenset({"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__",
                    "__firstlineno__", "__static_attributes__", "__annotations__",
                    "_spectacular_annotation", "default_error_messages", "_declared_fields"})


@functools.cache
def _setting(name: str) -> Any:
    """A limit setting, read once (a read of django.conf.settings costs some 0.3 µs, and a body
    meets a dozen limits) and again when settings change (tests)."""
    return getattr(settings, name)


@receiver(setting_changed)
def _forget(**kwargs: object) -> None:
    _setting.cache_clear()


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
_CHARACTERS = (django.ProhibitNullCharactersValidator, ProhibitSurrogateCharactersValidator)


def _validators(field: serializers.Field) -> Callable[[Any], bool] | None:
    """Whether a value passes the field's validators (None: there is nothing to check)."""
    tests = []
    for validator in field.validators:
        kind, limit = type(validator), getattr(validator, "limit_value", None)
        if kind in _CHARACTERS and _no_refused_character not in tests:
            tests.append(_no_refused_character)
        elif kind in _LIMITS and not callable(limit):
            tests.append(lambda value, passes=_LIMITS[kind], limit=limit: passes(value, limit))
        elif kind is not SchemaLimit and kind not in _CHARACTERS:  # SchemaLimit: the schema's
            raise ShapeNotCompiled(f"{type(field).__name__}: validator {kind.__name__}")
    if len(tests) < 2:
        return tests[0] if tests else None
    return lambda value: all(test(value) for test in tests)


# --- checks ---------------------------------------------------------------------------------

def compile_check(serializer_class: type[serializers.Serializer]) -> Callable[[Any], dict | None]:
    """`check(document)`: the serializer's validated_data for a parsed JSON body it surely
    accepts, else None."""
    check = _check(serializer_class())[1]
    return lambda document: None if (value := check(document)) is _DECLINED else value


def _check(field: serializers.Field) -> tuple[bool, Callable[[Any], Any]]:
    """Whether the field takes null, and the check of its non-null value: the validated value,
    or _DECLINED."""
    kind = _kind(field, _CHECKS, mixins=(NullPassedOn,))
    return field.allow_null or isinstance(field, NullPassedOn), _CHECKS[kind](field)


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
        fields.append((name, field.required, *_check(field)))

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
    return lambda value: (value if type(value) is int and -HUGE_INT < value < HUGE_INT
                          and (valid is None or valid(value)) else _DECLINED)


def _container_check(field: BoundedListField | BoundedDictField) -> Callable[[Any], Any]:
    setting, allow_empty, valid = field.limit_setting, field.allow_empty, _validators(field)
    nullable, check_element = _check(field.child)
    kind = dict if isinstance(field, serializers.DictField) else list
    conditions = isinstance(field, RequirementListField)

    def check(value: Any) -> Any:
        if type(value) is not kind:
            return _DECLINED
        limit = _setting(setting)
        if len(value) > limit or not (value or allow_empty):
            return _DECLINED
        if conditions and sum([len(item) for item in value if type(item) is dict]) > limit:
            return _DECLINED
        if kind is dict:
            max_chars = _setting("MAX_STRING_LENGTH")
            if not all(type(key) is str and len(key) <= max_chars for key in value):
                return _DECLINED
        checked = []
        for item in value.values() if kind is dict else value:
            if (item := _member(item, nullable, check_element)) is _DECLINED:
                return _DECLINED
            checked.append(item)
        if kind is dict:
            checked = dict(zip(value, checked, strict=True))
        return checked if valid is None or valid(checked) else _DECLINED
    return check


def _json_check(field: BoundedJSONField) -> Callable[[Any], Any]:
    valid = _validators(field)

    def check(value: Any) -> Any:
        kind = type(value)
        if kind is str:  # most values are scalars: cheaper than json_bounds_error
            within = len(value) <= _setting("MAX_STRING_LENGTH")
        elif kind is bool or kind is float:
            within = True
        else:
            within = json_bounds_error(value, json_only=True) is None
        return value if within and (valid is None or valid(value)) else _DECLINED
    return check


_CHECKS: dict[type, Callable] = {
    serializers.Serializer: _serializer_check,
    StrictCharField: _text_check,
    StrictIntegerField: _integer_check,
    RequirementListField: _container_check,
    BoundedListField: _container_check,
    BoundedDictField: _container_check,
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
    fields = []  # (name, getter from a Mapping, from an object, when missing, renderer)
    for name, field in serializer.fields.items():
        if field.write_only:
            continue
        if isinstance(field, serializers.SerializerMethodField):
            method = getattr(serializer, field.method_name)  # called with the whole instance
            fields.append((name, method, method, _RAISE, None))
            continue
        if field.default is not empty or len(field.source_attrs) > 1:
            raise ShapeNotCompiled(f"{type(serializer).__name__}.{name}")
        missing = None if field.allow_null else _RAISE if field.required else _SKIP
        getters = ((itemgetter(field.source_attrs[0]), attrgetter(field.source_attrs[0]))
                   if field.source_attrs else (_itself, _itself))  # or source="*"
        fields.append((name, *getters, missing, _renderer(field)))
    by_key = [(name, get, missing, render) for name, get, _, missing, render in fields]
    by_attribute = [(name, get, missing, render) for name, _, get, missing, render in fields]
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


def _many_renderer(field: serializers.ListSerializer) -> Callable[[Any], list]:
    render = _renderer(field.child) or _itself
    return lambda value: [render(item) for item in value]


def _list_renderer(field: serializers.ListField) -> Callable[[Any], list]:
    render = _renderer(field.child) or _itself
    return lambda value: [None if item is None else render(item) for item in value]


def _dict_renderer(field: serializers.DictField) -> Callable[[Any], dict]:
    render = _renderer(field.child) or _itself
    return lambda value: {str(key): None if item is None else render(item)
                          for key, item in value.items()}


def _json_renderer(field: serializers.JSONField) -> None:
    """The value itself (None: nothing to call)."""
    if field.binary:
        raise ShapeNotCompiled(f"{type(field).__name__}: binary")


def _datetime_renderer(field: serializers.DateTimeField) -> Callable[[Any], Any]:
    """DRF's ISO 8601 in the current time zone, UTC (TIME_ZONE): a string is passed on, a naive
    datetime read as UTC, fractional seconds given only when non-zero."""
    if (getattr(field, "format", api_settings.DATETIME_FORMAT).lower() != "iso-8601"
            or hasattr(field, "timezone")
            or (settings.TIME_ZONE, settings.USE_TZ) != ("UTC", True)):
        raise ShapeNotCompiled(f"{type(field).__name__}: not ISO 8601 in UTC")
    return lambda value: (None if not value else value if isinstance(value, str)
                          else value.isoformat() + "Z" if value.utcoffset() is None
                          else format_utc(value))


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
