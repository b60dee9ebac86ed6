"""The Arrowhead 5 metadata requirement language (docs/catalog.md, "Metadata requirements"): a
list of requirements is an OR, one requirement (`{"key.path": value or {"op", "value"}}`) an AND
of conditions. A missing or null key fails its condition whatever the operator; comparisons are
Java type-strict. Pure: no ORM, no settings, no I/O."""
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import regex

from conventions.exceptions import InvalidParameter

# `name[i]`: a non-negative decimal index at the end of a non-empty name. Anything else that
# looks like brackets (`key[]`, `key[-2]`, `key[text]`) is a literal key name.
_INDEXED_SEGMENT = re.compile(r"(.+)\[([0-9]+)\]")
# An object is an operator only with exactly these keys; any other object is a plain value.
_OPERATOR_KEYS = frozenset({"op", "value"})

Predicate = Callable[[Any, Any], bool]
REGEX_TIMEOUT_SECONDS = 0.1
# One request evaluates its patterns against every candidate: a pattern that stays just under
# the per-match timeout could still hold a worker for conditions x candidates x 0.1 s. All
# matches inside one `regex_budget()` share this much time (docs/limits.md).
REGEX_BUDGET_SECONDS = 1.0
MAX_PATTERN_LENGTH = 1000
_regex_deadline: ContextVar[float | None] = ContextVar("regex_deadline", default=None)


@contextmanager
def regex_budget(seconds: float = REGEX_BUDGET_SECONDS) -> Iterator[None]:
    """Within this block, all REGEXP matches together may take at most `seconds`."""
    token = _regex_deadline.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _regex_deadline.reset(token)


def _match_timeout(pattern: str) -> float:
    deadline = _regex_deadline.get()
    if deadline is None:
        return REGEX_TIMEOUT_SECONDS
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise InvalidParameter(f"Regular expressions in metadata requirements take too long "
                               f"together (at most {REGEX_BUDGET_SECONDS:g} s per request): "
                               f"{pattern}")
    return min(REGEX_TIMEOUT_SECONDS, remaining)


# --- type-strict JSON values ---------------------------------------------------------------

def _kind(value: object) -> type:
    """The JSON kind of a value; bool comes first because bool is an int subclass in Python."""
    for kind in (bool, int, float, str, list, dict):
        if isinstance(value, kind):
            return kind
    return type(value)


def _equal(left: object, right: object) -> bool:
    """Deep equality as Java's `equals` sees JSON values: kinds must match at every level."""
    kind = _kind(left)
    if kind is not _kind(right):
        return False
    if kind is list:
        return len(left) == len(right) and all(_equal(a, b) for a, b in zip(left, right))
    if kind is dict:
        return left.keys() == right.keys() and all(_equal(left[k], right[k]) for k in left)
    return left == right


def _contains(items: object, value: object) -> bool:
    return isinstance(items, list) and any(_equal(item, value) for item in items)


# --- operators -----------------------------------------------------------------------------

def _strings(test: Callable[[str, str], bool], fold: bool = False) -> Predicate:
    """A predicate that holds only when both sides are strings and `test` holds on them."""
    def predicate(left: object, right: object) -> bool:
        if not (isinstance(left, str) and isinstance(right, str)):
            return False
        return test(left.casefold(), right.casefold()) if fold else test(left, right)
    return predicate


def _numbers(test: Callable[[Any, Any], bool]) -> Predicate:
    return lambda left, right: (_kind(left) in (int, float) and _kind(right) in (int, float)
                                and test(left, right))


def _size_equals(left: object, right: object) -> bool:
    return _kind(right) is int and isinstance(left, (str, list)) and len(left) == right


def _contains_any(left: object, right: object) -> bool:
    return isinstance(left, list) and isinstance(right, list) and any(
        _contains(left, item) for item in right)


def _regexp(left: object, right: object) -> bool:
    if not (isinstance(left, str) and isinstance(right, str)):
        return False
    # Any consumer may send a pattern: a catastrophically backtracking one must not hold a
    # worker, so matching has a time limit (the `regex` module; `re` has none).
    timeout = _match_timeout(right)
    try:
        return _compile(right).fullmatch(left, timeout=timeout) is not None
    except TimeoutError:
        raise InvalidParameter(f"Regular expression in metadata requirement takes too long: "
                               f"{right}") from None


def _compile(pattern: str) -> "regex.Pattern[str]":
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise InvalidParameter(f"Regular expression in metadata requirement is too long "
                               f"(at most {MAX_PATTERN_LENGTH} characters)")
    try:
        return regex.compile(pattern)  # the module caches compiled patterns
    except regex.error:
        raise InvalidParameter(f"Invalid regular expression in metadata requirement: {pattern}")


# Positive operators with the name of their negation. A negation is the plain boolean
# negation; the "missing key fails" rule is applied before any operator runs.
_NEGATABLE: dict[str, tuple[str, Predicate]] = {
    "EQUALS": ("NOT_EQUALS", _equal),
    "EQUALS_IGNORE_CASE": ("NOT_EQUALS_IGNORE_CASE", _strings(str.__eq__, fold=True)),
    "INCLUDES": ("NOT_INCLUDES", _strings(str.__contains__)),
    "INCLUDES_IGNORE_CASE": ("NOT_INCLUDES_IGNORE_CASE", _strings(str.__contains__, fold=True)),
    "STARTS_WITH": ("NOT_STARTS_WITH", _strings(str.startswith)),
    "STARTS_WITH_IGNORE_CASE": ("NOT_STARTS_WITH_IGNORE_CASE",
                                _strings(str.startswith, fold=True)),
    "ENDS_WITH": ("NOT_ENDS_WITH", _strings(str.endswith)),
    "ENDS_WITH_IGNORE_CASE": ("NOT_ENDS_WITH_IGNORE_CASE", _strings(str.endswith, fold=True)),
    "REGEXP": ("NOT_REGEXP", _regexp),
    "SIZE_EQUALS": ("SIZE_NOT_EQUALS", _size_equals),
    "CONTAINS": ("NOT_CONTAINS", _contains),
    "CONTAINS_ANY": ("NOT_CONTAINS_ANY", _contains_any),
    "IN": ("NOT_IN", lambda left, right: _contains(right, left)),
}

_OPERATORS: dict[str, Predicate] = {
    "LESS_THAN": _numbers(lambda left, right: left < right),
    "LESS_THAN_OR_EQUALS_TO": _numbers(lambda left, right: left <= right),
    "GREATER_THAN": _numbers(lambda left, right: left > right),
    "GREATER_THAN_OR_EQUALS_TO": _numbers(lambda left, right: left >= right),
}
for _name, (_negation, _predicate) in _NEGATABLE.items():
    _OPERATORS[_name] = _predicate
    _OPERATORS[_negation] = (lambda positive: lambda left, right: not positive(left, right))(
        _predicate)

OPERATORS: frozenset[str] = frozenset(_OPERATORS)


# --- parsing -------------------------------------------------------------------------------

def _condition(spec: object) -> tuple[str, object]:
    """(operator name, requirement value) of one entry; raises for an unknown operator."""
    if not (isinstance(spec, dict) and spec.keys() == _OPERATOR_KEYS):
        return "EQUALS", spec
    op = spec["op"]
    name = op.strip().upper() if isinstance(op, str) else None
    if name not in _OPERATORS:
        raise InvalidParameter(f"Invalid metadata operation requirement: {op}")
    return name, spec["value"]


def validate_requirement(requirement: object, field: str = "metadataRequirements") -> None:
    """Raise InvalidParameter for a malformed requirement, before any metadata is evaluated."""
    if not isinstance(requirement, dict):
        raise InvalidParameter(f"{field} contains an invalid element: it should be a JSON object")
    for spec in requirement.values():
        name, value = _condition(spec)
        # Only string patterns are checked: any other value simply never matches.
        if name in ("REGEXP", "NOT_REGEXP") and isinstance(value, str):
            _compile(value)


def validate_requirements(requirements: object, field: str = "metadataRequirements") -> None:
    """None or [] means no constraint; anything else must be a list of requirement objects."""
    if requirements is None:
        return
    if not isinstance(requirements, list):
        raise InvalidParameter(f"{field} should be a list of JSON objects")
    for requirement in requirements:
        if requirement is None:
            raise InvalidParameter(f"{field} contains null element")
        validate_requirement(requirement, field)


# --- evaluation ----------------------------------------------------------------------------

def _step(current: object, segment: str) -> tuple[bool, object]:
    indexed = _INDEXED_SEGMENT.fullmatch(segment)
    if indexed is None:
        found = isinstance(current, dict) and segment in current
        return found, current[segment] if found else None
    found, items = _step(current, indexed.group(1))
    index = int(indexed.group(2))
    if not (found and isinstance(items, list) and index < len(items)):
        return False, None
    return True, items[index]


def resolve(metadata: object, path: str) -> tuple[bool, object]:
    """(found, value) at a dotted key path; not found when missing or JSON null."""
    current = metadata
    for segment in path.split("."):
        found, current = _step(current, segment)
        if not found or current is None:
            return False, None
    return True, current


def matches(metadata: object, requirement: dict) -> bool:
    """Whether the metadata satisfies every entry of one requirement (AND)."""
    for path, spec in requirement.items():
        name, expected = _condition(spec)
        found, actual = resolve(metadata, path)
        if not (found and _OPERATORS[name](actual, expected)):
            return False
    return True


def matches_any(metadata: object, requirements: list | None) -> bool:
    """Whether the metadata satisfies any of the requirements (OR); None or [] matches all."""
    return not requirements or any(matches(metadata, requirement) for requirement in requirements)
