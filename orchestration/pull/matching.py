"""Pure matching rules of pull (SPEC §5 steps 4, 5 and 8): which interfaces qualify, the
preferred-provider order, matchmaking. No ORM, no settings."""
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from orchestration.pull.types import ServiceRequirement
from store.addresses import narrow_addresses
from store.metadata_requirements import matches_any

T = TypeVar("T")

ADDRESS_PROPERTY = "accessAddresses"


def declared_operations(properties: dict) -> set[str] | None:
    """The operations an interface declares (HTTP map keys or MQTT list), None when it
    declares none."""
    operations = properties.get("operations")
    if isinstance(operations, dict):
        return set(operations)
    if isinstance(operations, list):
        # Other templates have free properties: only string entries can name an operation.
        return {operation for operation in operations if isinstance(operation, str)}
    return None


def qualifying_interface(interface: dict, requirement: ServiceRequirement) -> dict | None:
    """The interface as offered to the consumer when it meets every interface condition that
    was given (address lists narrowed to the requested types), else None.

    `interface` is `{templateName, protocol, policy, properties}`."""
    properties = interface["properties"]
    if (requirement.interface_template_names
            and interface["templateName"] not in requirement.interface_template_names):
        return None
    if requirement.security_policies and interface["policy"] not in requirement.security_policies:
        return None
    if (requirement.interface_property_requirements
            and not matches_any(properties, list(requirement.interface_property_requirements))):
        return None
    if requirement.operations:
        declared = declared_operations(properties)
        if declared is not None and not set(requirement.operations) <= declared:
            return None
    if requirement.interface_address_types:
        addresses = properties.get(ADDRESS_PROPERTY)
        if not isinstance(addresses, list):
            return None
        kept = narrow_addresses([a for a in addresses if isinstance(a, str)],
                                set(requirement.interface_address_types))
        if not kept:
            return None
        properties = {**properties, ADDRESS_PROPERTY: kept}
    return {**interface, "properties": properties}


def qualifying_interfaces(interfaces: Iterable[dict],
                          requirement: ServiceRequirement) -> list[dict]:
    if not requirement.filters_interfaces:
        return list(interfaces)  # every one, unchanged (shared: not to be modified)
    offered = (qualifying_interface(interface, requirement) for interface in interfaces)
    return [interface for interface in offered if interface is not None]


def preferred_first(candidates: Sequence[T], provider_of: Callable[[T], str],
                    preferred: Sequence[str], *, only_preferred: bool) -> list[T]:
    """Stable partition: candidates of preferred providers first; with `only_preferred`,
    only those."""
    if not preferred:
        return list(candidates)
    wanted = set(preferred)
    first = [c for c in candidates if provider_of(c) in wanted]
    if only_preferred:
        return first
    return first + [c for c in candidates if provider_of(c) not in wanted]


def group_by(candidates: Sequence[T], key: Callable[[T], str]) -> list[list[T]]:
    """Candidates grouped by key, groups in order of first appearance, order kept inside."""
    groups: dict[str, list[T]] = {}
    for candidate in candidates:
        groups.setdefault(key(candidate), []).append(candidate)
    return list(groups.values())
