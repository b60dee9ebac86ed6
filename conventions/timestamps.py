"""ISO 8601 UTC timestamps with a `Z` suffix (SPEC §1): `2025-11-08T12:00:00Z`, fractional
seconds allowed. Any other form, offsets included, is rejected."""
import datetime as dt
import re

from conventions.exceptions import InvalidParameter

_UTC_INSTANT = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?Z"
)


def parse_utc(value: object) -> dt.datetime | None:
    """The aware UTC datetime, or None when the value is not a valid UTC instant string."""
    if not isinstance(value, str):
        return None
    match = _UTC_INSTANT.fullmatch(value.strip())
    if not match:
        return None
    year, month, day, hour, minute, second, fraction = match.groups()
    micros = int((fraction or "0").ljust(6, "0")[:6])
    try:
        return dt.datetime(int(year), int(month), int(day), int(hour), int(minute), int(second),
                           micros, tzinfo=dt.timezone.utc)
    except ValueError:
        return None


def parse_utc_field(value: object, field: str) -> dt.datetime:
    parsed = parse_utc(value)
    if parsed is None:
        raise InvalidParameter(
            f"Invalid date time in field: {field}. Please use a UTC date time in ISO-8601 format"
        )
    return parsed


def format_utc(value: dt.datetime) -> str:
    """`2025-11-08T12:00:00Z`; fractional seconds only when non-zero."""
    text = value.astimezone(dt.timezone.utc).replace(tzinfo=None).isoformat()
    return text + "Z"
