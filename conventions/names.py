"""Arrowhead name normalization and validation (SPEC §1, reference-simple §4.1–4.2).

`NORMALIZATION_MODE=extended` (default) converts free-form names to the naming convention of
their kind; `simple` only trims. Validators run on the normalized value and raise
`InvalidParameter` with the reference's messages. Blank input normalizes to None, and
validators report None as `null`, as the reference does.
"""
import re

from django.conf import settings

from conventions.exceptions import InvalidParameter

MAX_NAME_LENGTH = 63

_JAVA_BLANKS = "".join(chr(code) for code in range(0x21))
_WHITESPACE_RUN = re.compile(r"\s+")
_SEPARATOR_RUN = re.compile(r"[_-]+")

_SYSTEM_NAME = re.compile(r"[A-Z]|[A-Z][0-9A-Za-z]+")
_SERVICE_DEFINITION = re.compile(r"[a-z]|[a-z][0-9A-Za-z]+")
_OPERATION = re.compile(r"[a-z]|[a-z][0-9a-z\-]*[0-9a-z]")
_INTERFACE_TEMPLATE = re.compile(r"[a-z]|[a-z][0-9a-z_]*[0-9a-z]")


def without_blanks(values, message: str):
    """The list (None = empty), or InvalidParameter(message) when an element is null or
    blank: the check every list of names in a request gets."""
    values = values or ()
    if any(value is None or not java_trim(value) for value in values):
        raise InvalidParameter(message)
    return values


def list_without_blanks(values, what: str):
    """`without_blanks` with the reference's message for query filters."""
    return without_blanks(values, f"{what} list contains null or empty element")


def java_trim(value: str) -> str:
    """Java's String.trim: strips ASCII control characters and spaces only."""
    return value.strip(_JAVA_BLANKS)


def _to_snake(value: str) -> str:
    """Trim, whitespace runs to `_`, runs of `_`/`-` to a single `_`."""
    return _SEPARATOR_RUN.sub("_", _WHITESPACE_RUN.sub("_", java_trim(value)))


def _capitalize_words(snake: str) -> str:
    """Drop every `_` and upper-case the character after it; other characters keep their case."""
    parts = snake.split("_")
    return parts[0] + "".join(part[:1].upper() + part[1:] for part in parts[1:])


def snake_to_pascal(snake: str) -> str:
    joined = _capitalize_words(snake)
    return joined[:1].upper() + joined[1:]


def snake_to_camel(snake: str) -> str:
    joined = _capitalize_words(snake)
    return joined[:1].lower() + joined[1:]


def snake_to_kebab(snake: str) -> str:
    return _SEPARATOR_RUN.sub("-", snake.lower())


def _normalize(value: str | None, convert) -> str | None:
    if value is None or not java_trim(value):
        return None
    if settings.NORMALIZATION_MODE != "extended":
        return java_trim(value)
    return convert(_to_snake(value))


def normalize_system_name(value: str | None) -> str | None:
    return _normalize(value, snake_to_pascal)


def normalize_service_definition(value: str | None) -> str | None:
    return _normalize(value, snake_to_camel)


def normalize_operation(value: str | None) -> str | None:
    return _normalize(value, snake_to_kebab)


def normalize_interface_template(value: str | None) -> str | None:
    return _normalize(value, str.lower)


def _validate(value: str | None, pattern: re.Pattern, kind: str) -> str:
    if value is None or len(value) > MAX_NAME_LENGTH or not pattern.fullmatch(value):
        raise InvalidParameter(
            f"The specified {kind} does not match the naming convention: "
            f"{'null' if value is None else value}"
        )
    return value


def validate_system_name(value: str | None) -> str:
    return _validate(value, _SYSTEM_NAME, "system name")


def validate_service_definition(value: str | None) -> str:
    return _validate(value, _SERVICE_DEFINITION, "service definition name")


def validate_operation(value: str | None) -> str:
    return _validate(value, _OPERATION, "service operation name")


def validate_interface_template(value: str | None) -> str:
    return _validate(value, _INTERFACE_TEMPLATE, "interface template name")


def system_name(value: str | None) -> str:
    """Normalize, then validate: the usual way a system name enters the service."""
    return validate_system_name(normalize_system_name(value))


def service_definition(value: str | None) -> str:
    return validate_service_definition(normalize_service_definition(value))


def operation(value: str | None) -> str:
    return validate_operation(normalize_operation(value))


def interface_template(value: str | None) -> str:
    return validate_interface_template(normalize_interface_template(value))
