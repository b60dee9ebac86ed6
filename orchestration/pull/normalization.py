"""From a type-checked orchestration request body to an `OrchestrationRequest`: every value
normalized and validated, with the reference's messages (reference-simple §6.1,
reference-dynamic §2). Shared by pull and subscribe.

`parsed_request` keeps the last MAX_ENTRIES parsed pull requests per body (a consumer repeats
its standing question; docs/performance.md). Only successful parses are kept, and a request
depends on nothing but its body and the settings (a changed setting empties the cache), so
the kept value is what parsing again would give."""
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from django.core.signals import setting_changed
from django.dispatch import receiver
from rest_framework.request import Request

from conventions import names
from conventions.exceptions import InvalidParameter
from conventions.timestamps import parse_utc
from conventions.versions import version
from orchestration.pull.types import (
    FLAGS,
    IGNORED_FLAGS,
    OrchestrationRequest,
    ServiceRequirement,
)
from store import metadata_requirements
from store.addresses import ADDRESS_TYPES
from store.interfaces import POLICIES

_TRUE, _FALSE = "true", "false"
FLAG_VALUES = (_TRUE, _FALSE)  # a flag's value as text, in any case, blanks around
# The Java simple store lists its ignored flags as it iterates the flag map, a java.util.HashMap
# of at most six keys: by bucket (the key's String.hashCode spread over 16 buckets: ALLOW_ and
# ONLY_INTERCLOUD 1, ONLY_EXCLUSIVE 6, ALLOW_TRANSLATION 14), keys of one bucket in request
# order. We fix ALLOW_INTERCLOUD before ONLY_INTERCLOUD: a subscription's stored request
# (PostgreSQL jsonb) does not keep key order, and its pushes must not differ by it.
_JAVA_ORDER = ("ALLOW_INTERCLOUD", "ONLY_INTERCLOUD", "ONLY_EXCLUSIVE", "ALLOW_TRANSLATION")


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


def parse_flags(raw: dict[str, Any] | None) -> dict[str, bool]:
    """Every flag of the request by its normalized name, in request order. Keys any case;
    values JSON booleans or "true"/"false"."""
    raw = raw or {}
    if any(value is None for value in raw.values()):
        raise InvalidParameter("Orchestration flag map contains null value")
    flags: dict[str, bool] = {}
    for key, value in raw.items():
        name = key.strip().upper()
        if name not in FLAGS:
            raise InvalidParameter(f"Invalid orchestration flag: {name}")
        if isinstance(value, bool):
            flags[name] = value
        elif isinstance(value, str) and value.strip().lower() in FLAG_VALUES:
            flags[name] = value.strip().lower() == _TRUE
        else:
            raise InvalidParameter(f"Invalid value of orchestration flag {name}: {value} "
                                   "(true or false expected)")
    return flags


def ignored_flags(flags: dict[str, bool], exclusivity_duration: int | None) -> tuple[str, ...]:
    """The flags present (true or false, as the Java simple store counts them) that we ignore:
    ALLOW_TRANSLATION, ALLOW_INTERCLOUD, ONLY_INTERCLOUD, and ONLY_EXCLUSIVE without an
    exclusivity duration; in the Java warning's order."""
    ignored = [name for name in flags if name in IGNORED_FLAGS
               or (name == "ONLY_EXCLUSIVE" and exclusivity_duration is None)]
    return tuple(sorted(ignored, key=_JAVA_ORDER.index))


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
        interface_template_names=tuple(names.interface_template(value) for value in (
            names.without_blanks(data.get("interfaceTemplateNames"),
                                 "Interface template name list contains empty element"))),
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
    raw_flags = parse_flags(data.get("orchestrationFlags"))
    duration = data.get("exclusivityDuration")
    if duration is not None and duration < 1:
        raise InvalidParameter("Exclusivity duration must be greater than 0")
    ignored = ignored_flags(raw_flags, duration)
    # ALLOW_* stay among the flags, for their own warnings (SPEC §5 step 10).
    flags = frozenset(name for name, enabled in raw_flags.items()
                      if enabled and (name in IGNORED_FLAGS or name not in ignored))
    if "ONLY_PREFERRED" in flags and not requirement.preferred_providers:
        raise InvalidParameter("ONLY_PREFERRED flag is present, but no preferred provider is "
                               "defined")
    qos = data.get("qosRequirements")
    return OrchestrationRequest(requirement=requirement, flags=flags,
                                qos_requirements=qos or None, exclusivity_duration=duration,
                                ignored_flags=ignored)


# Parsed requests kept per request body (see the module's docstring).
MAX_ENTRIES = 4096
MAX_BODY_BYTES = 4096

_Key = tuple[str, str, bytes]
_parsed: OrderedDict[_Key, OrchestrationRequest] = OrderedDict()
_lock = threading.Lock()


def parsed_request(request: Request,
                   parse: Callable[[Request], OrchestrationRequest]) -> OrchestrationRequest:
    """The request's orchestration request: kept from an earlier pull with the same body
    (content type and length included, which decide how the body is read), else `parse`d."""
    meta = request.META
    length = meta.get("CONTENT_LENGTH") or ""
    if not length.isdigit() or int(length) > MAX_BODY_BYTES:
        return parse(request)
    key = (meta.get("CONTENT_TYPE", ""), length, request.body)
    with _lock:
        found = _parsed.get(key)
        if found is not None:
            _parsed.move_to_end(key)
            return found
    parsed = parse(request)  # raises for a body it refuses: nothing kept
    with _lock:
        _parsed[key] = parsed
        if len(_parsed) > MAX_ENTRIES:
            _parsed.popitem(last=False)
    return parsed


@receiver(setting_changed)
def _forget(**kwargs: object) -> None:
    with _lock:
        _parsed.clear()
