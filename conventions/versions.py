"""Service versions `major.minor.patch` (reference-simple §4.3). Independent of the
normalization mode."""
from conventions.exceptions import InvalidParameter
from conventions.names import java_trim

DEFAULT_VERSION = "1.0.0"
MAX_VERSION_LENGTH = 14
_PREFIX = "Version verification failure: "


def java_split(value: str, separator: str) -> list[str]:
    """Java's String.split: trailing empty pieces are dropped."""
    pieces = value.split(separator)
    while pieces and pieces[-1] == "":
        pieces.pop()
    return pieces


def normalize_version(value: str | None) -> str:
    """Blank → 1.0.0, `X` → `X.0.0`, `X.Y` → `X.Y.0`, anything else only trimmed."""
    if value is None or not java_trim(value):
        return DEFAULT_VERSION
    trimmed = java_trim(value)
    pieces = java_split(trimmed, ".")
    if len(pieces) == 1:
        return f"{pieces[0]}.0.0"
    if len(pieces) == 2:
        return f"{pieces[0]}.{pieces[1]}.0"
    return trimmed


def validate_version(value: str) -> str:
    if len(value) > MAX_VERSION_LENGTH:
        raise InvalidParameter(_PREFIX + "version is too long")
    if value.count(".") != 2:
        raise InvalidParameter(_PREFIX + "version must contain exactly 2 separator . characters")
    pieces = java_split(value, ".")
    if len(pieces) != 3:
        raise InvalidParameter(_PREFIX + "version must contain exactly 3 numbers")
    if not all(piece.isascii() and piece.isdigit() for piece in pieces):
        raise InvalidParameter(
            _PREFIX + "the version should only contain numbers and separator . characters"
        )
    return value


def version(value: str | None) -> str:
    return validate_version(normalize_version(value))
