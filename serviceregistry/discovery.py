"""What the flexible store reads from the ServiceRegistry (issue 33, docs/flexible-store.md):
the instances of service definitions with their providers' system metadata, and the metadata
of systems (consumers selected by metadata). Each answer is kept per key for
SERVICE_REGISTRY_CACHE_SECONDS, like the instances pull looks up by id."""
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from clients import serviceregistry as registry
from serviceregistry.answer_cache import AnswerCache
from serviceregistry.instances import CACHE_MAX_ENTRIES, RegistryInstance, adapt


@dataclass(frozen=True)
class OfferedInstance:
    """An instance of the ServiceRegistry with what a flexible rule asks of its provider."""

    instance: RegistryInstance
    provider_metadata: dict[str, Any]


def _provider_metadata(entry: dict[str, Any]) -> dict[str, Any]:
    provider = entry.get("provider")
    metadata = provider.get("metadata") if isinstance(provider, dict) else None
    return metadata if isinstance(metadata, dict) else {}


_definitions: AnswerCache[tuple[OfferedInstance, ...]] = AnswerCache(CACHE_MAX_ENTRIES)
_systems: AnswerCache[dict[str, Any]] = AnswerCache(CACHE_MAX_ENTRIES)


def cache_clear() -> None:
    _definitions.clear()
    _systems.clear()


def instances_of(service_definitions: Iterable[str], *,
                 refresh: bool = False) -> dict[str, tuple[OfferedInstance, ...]]:
    """The ServiceRegistry's instances of each service definition (one lookup of those not
    freshly cached, with `refresh` of all; ServiceRegistryUnavailable when it fails). A
    definition without instances is absent."""
    def lookup(missing: list[str]) -> dict[str, tuple[OfferedInstance, ...]]:
        found: dict[str, list[OfferedInstance]] = {}
        for entry in registry.service_lookup_by_definition(missing):
            instance = adapt(entry)
            definition = instance.service_instance_id.split("|")[1] \
                if instance.service_instance_id.count("|") == 2 else None
            if definition in missing:
                found.setdefault(definition, []).append(
                    OfferedInstance(instance, _provider_metadata(entry)))
        return {definition: tuple(offered) for definition, offered in found.items()}

    return _definitions.get_many(service_definitions, lookup, refresh=refresh)


def systems_metadata(names: Iterable[str], *, refresh: bool = False) -> dict[str, dict[str, Any]]:
    """The system metadata of the named systems the ServiceRegistry knows (absent: unknown),
    by name (one lookup of those not freshly cached, with `refresh` of all)."""
    def lookup(missing: list[str]) -> dict[str, dict[str, Any]]:
        return {entry["name"]: entry.get("metadata") if isinstance(entry.get("metadata"), dict)
                else {} for entry in registry.system_lookup(missing)
                if isinstance(entry.get("name"), str)}

    return _systems.get_many(names, lookup, refresh=refresh)
