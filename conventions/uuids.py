"""UUIDs in canonical 8-4-4-4-12 form: case-insensitive, surrounding blanks trimmed, output
lower case (SPEC §1). Java's lenient forms (`1-1-1-1-1`) and Python's (braces, `urn:uuid:`,
32 bare hex digits) are not accepted."""
import re
import uuid

from conventions.exceptions import InvalidParameter
from conventions.names import java_trim

# The accepted form, as a regular expression that Python and ECMA read alike: the OpenAPI
# schema documents it (api.name_fields) from this one definition.
CANONICAL_UUID = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_CANONICAL = re.compile(CANONICAL_UUID)


def parse_uuid(value: object) -> uuid.UUID | None:
    """The UUID, or None when the value is not a string holding a canonical UUID."""
    if not isinstance(value, str):
        return None
    trimmed = java_trim(value)
    if not _CANONICAL.fullmatch(trimmed):
        return None
    return uuid.UUID(trimmed)


def require_uuid(value: object) -> uuid.UUID:
    """The UUID, or InvalidParameter `Invalid UUID: <trimmed value>`."""
    parsed = parse_uuid(value)
    if parsed is None:
        shown = java_trim(value) if isinstance(value, str) else value
        raise InvalidParameter(f"Invalid UUID: {shown}")
    return parsed


def require_uuid_element(value: object) -> uuid.UUID:
    """An element of a list of ids with the messages of the reference's history query: null or
    blank → `UUID is missing`, anything but a canonical UUID → `Invalid UUID id`."""
    if value is None or (isinstance(value, str) and not java_trim(value)):
        raise InvalidParameter("UUID is missing")
    parsed = parse_uuid(value)
    if parsed is None:
        raise InvalidParameter("Invalid UUID id")
    return parsed
