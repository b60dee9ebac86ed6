"""The pull body's type check without DRF: what OrchestrationRequestSerializer gives as
`validated_data`, for the bodies it certainly accepts.

Building and running the serializer costs 100-200 µs per pull (its fields are deep-copied,
every value passes a chain of DRF calls), on the hot path of every pull;
`checked_orchestration_request` takes a few µs for an ordinary body.

The contract is one-sided: it accepts or declines, it never answers an error. A body it
returns a dict for is one the serializer accepts, and the dict equals the serializer's
`validated_data` (the same keys, absent fields left out, null fields as None, unknown keys
dropped; free-form JSON values are the very objects of the body, as DRF's JSONField passes
them). Anything else, and anything unusual, is declined (None): the caller then runs the
serializer, which accepts it or answers with its own messages. Declining is therefore always
safe, and rare shapes are declined rather than mirrored. tests/orchestration/test_request_check.py
holds this against the serializer on generated bodies.

The fields and their limits are those of orchestration/pull/serializers.py and api/fields.py; a
change there needs the same change here (the tests notice a new field or a changed rule).
"""
import re
from typing import Any

from django.conf import settings

from orchestration.pull.serializers import MAX_SECONDS

# An absent field (None is an explicit null, which the serializer keeps).
ABSENT: Any = object()
# The fields of OrchestrationRequestSerializer and ServiceRequirementSerializer, in their order.
# Every one is optional and nullable: absent stays absent, null is None.
_TEXT, _TEXTS, _OPERATIONS, _REQUIREMENTS = range(4)
_SERVICE_FIELDS = (
    ("serviceDefinition", _TEXT),
    ("operations", _OPERATIONS),
    ("versions", _TEXTS),
    ("alivesAt", _TEXT),
    ("metadataRequirements", _REQUIREMENTS),
    ("interfaceTemplateNames", _TEXTS),
    ("interfaceAddressTypes", _TEXTS),
    ("interfacePropertyRequirements", _REQUIREMENTS),
    ("securityPolicies", _TEXTS),
    ("preferredProviders", _TEXTS),
)
# DRF's CharField refuses NUL and surrogates (its validators). The input gate has refused them
# already; checking again costs little and keeps this module right on its own.
_REFUSED_CHARACTER = re.compile("[\x00\ud800-\udfff]").search
# IntegerField and JSONField turn ints into text; Python refuses that beyond
# sys.get_int_max_str_digits() digits, at least 640. JSON never holds such an int anyway.
_HUGE_INT = 10 ** 600


def checked_orchestration_request(document: Any) -> dict | None:
    """`document` is a parsed JSON body (json.loads output, already screened by
    api.input_safety). Returns what OrchestrationRequestSerializer(data=document)
    .validated_data would be (plain dicts/lists, same keys and values) when the serializer
    would accept it, else None (the caller then runs the serializer for its error message).
    May also return None for accepted bodies that are unusual (the caller then just takes the
    slow path); must never return a dict for a body the serializer refuses, and must never
    return a dict different from validated_data."""
    if type(document) is not dict:
        return None
    # Read once per body (a read of django.conf.settings costs some 0.3 µs), at call time so
    # that a changed setting applies at once, as in api.fields.
    max_items, max_chars, max_depth = (settings.MAX_LIST_LENGTH, settings.MAX_STRING_LENGTH,
                                       settings.MAX_JSON_DEPTH)
    checked: dict = {}
    requirement = document.get("serviceRequirement", ABSENT)
    if requirement is not ABSENT:
        if requirement is not None:
            requirement = _service_requirement(requirement, max_items, max_chars, max_depth)
            if requirement is None:
                return None
        checked["serviceRequirement"] = requirement
    for name in ("orchestrationFlags", "qosRequirements"):
        value = document.get(name, ABSENT)
        if value is not ABSENT:
            if value is not None:
                value = _json_object(value, max_items, max_chars, max_depth)
                if value is None:
                    return None
            checked[name] = value
    duration = document.get("exclusivityDuration", ABSENT)
    if duration is not ABSENT:
        if duration is not None and not checked_duration(duration):
            return None
        checked["exclusivityDuration"] = duration
    return checked


def checked_fields(document: dict, fields: tuple[tuple[str, Any], ...]) -> dict | None:
    """The optional, nullable `fields` of an object, each (name, check): absent ones left out,
    null ones kept as None, the others replaced by what their check returns, or None for
    the whole object when a check declines (returns None)."""
    checked: dict = {}
    for name, check in fields:
        value = document.get(name, ABSENT)
        if value is ABSENT:
            continue
        if value is not None:
            value = check(value)
            if value is None:
                return None
        checked[name] = value
    return checked


def checked_text(value: Any) -> bool:
    """StrictCharField's check, with the current MAX_STRING_LENGTH (for other bodies' checks,
    e.g. subscriptions/request_check.py)."""
    return _text(value, settings.MAX_STRING_LENGTH)


def checked_json_object(value: Any) -> dict | None:
    """BoundedDictField's check, with the current limits: a copy of `value`, or None."""
    return _json_object(value, settings.MAX_LIST_LENGTH, settings.MAX_STRING_LENGTH,
                        settings.MAX_JSON_DEPTH)


def checked_duration(value: Any) -> bool:
    """optional_positive_integer(maximum=MAX_SECONDS)'s check of a non-null value: only true
    ints (StrictIntegerField refuses bools and floats, even 5.0); zero and negative ones pass,
    for the service's message."""
    return type(value) is int and -_HUGE_INT < value <= MAX_SECONDS


def _service_requirement(data: Any, max_items: int, max_chars: int,
                         max_depth: int) -> dict | None:
    """ServiceRequirementSerializer."""
    if type(data) is not dict:
        return None
    checked: dict = {}
    for name, kind in _SERVICE_FIELDS:
        value = data.get(name, ABSENT)
        if value is ABSENT:
            continue
        if value is not None:
            if kind == _TEXT:
                if not _text(value, max_chars):
                    return None
            elif kind == _REQUIREMENTS:
                value = _requirements(value, max_items, max_chars, max_depth)
            else:
                value = _texts(value, max_items if kind == _TEXTS
                               else settings.MAX_PULL_OPERATIONS, max_chars)
            if value is None:
                return None
        checked[name] = value
    return checked


def _text(value: Any, max_chars: int) -> bool:
    """StrictCharField: a string (blank kept, not trimmed) of at most `max_chars`."""
    if type(value) is not str or len(value) > max_chars:
        return False
    if value.isascii():  # the common case, cheaper than the search
        return "\x00" not in value
    return _REFUSED_CHARACTER(value) is None


def _texts(value: Any, max_items: int, max_chars: int) -> list | None:
    """optional_string_list: null elements are passed on (NullPassedOn), for the service's
    message."""
    if type(value) is not list or len(value) > max_items:
        return None
    for element in value:
        if element is not None and not _text(element, max_chars):
            return None
    return list(value)


def _requirements(value: Any, max_items: int, max_chars: int, max_depth: int) -> list | None:
    """RequirementListField: at most `max_items` elements and as many conditions (keys of its
    objects) together; each element any JSON value within the limits, null passed on."""
    if type(value) is not list:
        return None
    if sum([len(element) for element in value if type(element) is dict]) > max_items:
        return None
    if not _within_bounds(value, max_items, max_chars, max_depth):
        return None
    return list(value)


def _json_object(value: Any, max_items: int, max_chars: int, max_depth: int) -> dict | None:
    """BoundedDictField: at most `max_items` entries with keys of at most `max_chars`; each
    value any JSON value within the limits, or null."""
    if type(value) is not dict or not _within_bounds(value, max_items, max_chars, max_depth):
        return None
    return dict(value)


def _within_bounds(container: dict | list, max_items: int, max_chars: int,
                   max_depth: int) -> bool:
    """Whether `container` has at most `max_items` elements and keys of at most `max_chars`
    (BoundedDictField, BoundedListField) and every element is a JSON value that
    api.fields.json_bounds_error finds no fault in (BoundedJSONField, which counts each
    element as depth 1). Only JSON types pass: anything else (a tuple, a non-string key)
    cannot come from a JSON body and is left to DRF. Iterative, as json_bounds_error, so that
    a large MAX_JSON_DEPTH cannot meet the recursion limit."""
    pending: list[tuple[dict | list, int]] = [(container, 0)]
    while pending:
        item, depth = pending.pop()
        if depth > max_depth or len(item) > max_items:
            return False
        if type(item) is dict:
            for key in item:
                if type(key) is not str or len(key) > max_chars:
                    return False
            children = item.values()
        else:
            children = item
        for child in children:
            kind = type(child)
            # Scalars are checked here rather than stacked: most elements are scalars.
            if kind is str:
                if len(child) > max_chars:
                    return False
            elif kind is dict or kind is list:
                pending.append((child, depth + 1))
            elif kind is int:
                if not -_HUGE_INT < child < _HUGE_INT:
                    return False
            elif kind is not bool and kind is not float and child is not None:
                return False
    return True
