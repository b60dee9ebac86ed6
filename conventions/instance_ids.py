"""Service instance identifiers `<ProviderSystem>|<serviceDefinition>|<version>`
(reference-simple §4.4, SPEC §1).

Unlike the Java reference, an id with an empty or blank part (`A||1.0.0`, `A|b|1.0.0|`) is
rejected instead of being turned into `A|null|1.0.0` or silently shortened.
"""
from typing import NamedTuple

from conventions import names
from conventions.exceptions import InvalidParameter
from conventions.versions import normalize_version, validate_version

SEPARATOR = "|"


class ServiceInstanceId(NamedTuple):
    provider: str
    service_definition: str
    version: str

    def __str__(self) -> str:
        return SEPARATOR.join(self)


def _invalid(value: str | None) -> InvalidParameter:
    shown = "null" if value is None else value
    return InvalidParameter(
        f"The specified service instance identifier does not match the naming convention: {shown}"
    )


def parse_instance_id(value: str | None) -> ServiceInstanceId:
    """Normalize and validate an instance id; raises InvalidParameter with the reference's
    messages (the id's own message for its shape, the part's message for a bad part)."""
    if value is None:
        raise _invalid(value)
    parts = value.split(SEPARATOR)
    if len(parts) != 3 or any(not names.java_trim(part) for part in parts):
        raise _invalid(names.java_trim(value))
    provider = names.system_name(parts[0])
    definition = names.service_definition(parts[1])
    version = validate_version(normalize_version(parts[2]))
    return ServiceInstanceId(provider, definition, version)


def instance_id(value: str | None) -> str:
    return str(parse_instance_id(value))


def build_instance_id(provider: str, service_definition: str, version: str) -> str:
    return SEPARATOR.join((provider, service_definition, version))
