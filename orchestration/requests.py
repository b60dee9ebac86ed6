"""From a type-checked orchestration request body to an `OrchestrationRequest`: every value
normalized and validated, with the reference's messages (reference-simple §6.1,
reference-dynamic §2). Shared by pull and subscribe."""
from collections.abc import Sequence
from typing import Any

from config.conventions import names
from config.conventions.timestamps import parse_utc
from config.conventions.versions import version
from config.exceptions import InvalidParameter
from orchestration.types import FLAGS, OrchestrationRequest, ServiceRequirement
from store import metadata_requirements
from store.addresses import ADDRESS_TYPES
from store.interfaces import POLICIES

_TRUE, _FALSE = "true", "false"


def _requirement_list(values: Sequence | None, message: str, field: str) -> tuple[dict, ...]:
    values = values or ()
    if any(value is None for value in values):
        raise InvalidParameter(message)
    metadata_requirements.validate_requirements(list(values), field)
    return tuple(values)


def _upper_enum(values: Sequence[str | None] | None, empty: str, allowed, invalid: str):
    parsed = tuple(value.strip().upper() for value in names.without_blanks(values, empty))
    for value in parsed:
        if value not in allowed:
            raise InvalidParameter(f"{invalid}: {value}")
    return parsed


def parse_flags(raw: dict[str, Any] | None) -> frozenset[str]:
    """The flags set to true. Keys any case; values JSON booleans or "true"/"false"."""
    raw = raw or {}
    if any(value is None for value in raw.values()):
        raise InvalidParameter("Orchestration flag map contains null value")
    flags = set()
    for key, value in raw.items():
        name = key.strip().upper()
        if name not in FLAGS:
            raise InvalidParameter(f"Invalid orchestration flag: {name}")
        if isinstance(value, bool):
            enabled = value
        elif isinstance(value, str) and value.strip().lower() in (_TRUE, _FALSE):
            enabled = value.strip().lower() == _TRUE
        else:
            raise InvalidParameter(f"Invalid value of orchestration flag {name}: {value} "
                                   "(true or false expected)")
        if enabled:
            flags.add(name)
    return frozenset(flags)


def parse_service_requirement(data: dict[str, Any] | None) -> ServiceRequirement:
    data = data or {}
    providers = names.without_blanks(data.get("preferredProviders"),
                       "Preferred providers contains null or empty element")
    definition = data.get("serviceDefinition")
    alives_at = None
    if data.get("alivesAt") is not None:
        alives_at = parse_utc(data["alivesAt"])
        if alives_at is None:
            raise InvalidParameter("Alives at time has an invalid time format, UTC string "
                                   "expected (example: 2024-10-11T14:30:00Z)")
    return ServiceRequirement(
        service_definition=(names.service_definition(definition)
                            if definition is not None and names.java_trim(definition) else None),
        operations=tuple(dict.fromkeys(names.operation(value) for value in names.without_blanks(
            data.get("operations"), "Operation list contains empty element"))),
        versions=tuple(version(value) for value in names.without_blanks(
            data.get("versions"), "Version list contains empty element")),
        alives_at=alives_at,
        metadata_requirements=_requirement_list(
            data.get("metadataRequirements"), "Metadata requirement list contains null element",
            "metadataRequirements"),
        interface_template_names=tuple(names.interface_template(value) for value in names.without_blanks(
            data.get("interfaceTemplateNames"),
            "Interface template name list contains empty element")),
        interface_address_types=_upper_enum(
            data.get("interfaceAddressTypes"), "Interface address type list contains empty element",
            ADDRESS_TYPES, "Invalid interface address type"),
        interface_property_requirements=_requirement_list(
            data.get("interfacePropertyRequirements"),
            "Interface property requirement list contains null element",
            "interfacePropertyRequirements"),
        security_policies=_upper_enum(
            data.get("securityPolicies"), "Security policy list contains empty element",
            POLICIES, "Invalid security policy"),
        preferred_providers=tuple(dict.fromkeys(names.system_name(p) for p in providers)),
    )


def parse_orchestration_request(data: dict[str, Any] | None) -> OrchestrationRequest:
    """`data` is the validated body of OrchestrationRequestSerializer (types already right)."""
    data = data or {}
    requirement = parse_service_requirement(data.get("serviceRequirement"))
    flags = parse_flags(data.get("orchestrationFlags"))
    duration = data.get("exclusivityDuration")
    if duration is not None and duration < 1:
        raise InvalidParameter("Exclusivity duration must be greater than 0")
    if "ONLY_INTERCLOUD" in flags:
        raise InvalidParameter("ONLY_INTERCLOUD flag is present, but intercloud orchestration "
                               "is not enabled")
    if "ONLY_PREFERRED" in flags and not requirement.preferred_providers:
        raise InvalidParameter("ONLY_PREFERRED flag is present, but no preferred provider is "
                               "defined")
    if "ONLY_EXCLUSIVE" in flags and duration is None:
        raise InvalidParameter("ONLY_EXCLUSIVE flag is present, but no exclusivity duration is "
                               "defined")
    qos = data.get("qosRequirements")
    return OrchestrationRequest(requirement=requirement, flags=flags,
                                qos_requirements=qos or None, exclusivity_duration=duration)
