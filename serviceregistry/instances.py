"""Provider instances from the ServiceRegistry, for pull and subscription evaluation, through
an in-process cache (docs/local-cloud.md "Instances from the SR"). The entries are adapted to the
shape pull reads from a catalog ServiceInstance; their `pk` is None: the latency probe measures
catalog interfaces only."""
import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.utils.dateparse import parse_datetime

from clients import serviceregistry as registry
from clients.serviceregistry import ServiceRegistryUnavailable
from serviceregistry.answer_cache import AnswerCache

CACHE_MAX_ENTRIES = 10_000


@dataclass(frozen=True)
class RegistryInterface:
    template_name: str
    protocol: str
    policy: str
    properties: dict[str, Any]


class _Interfaces(tuple):
    """What pull calls on a catalog instance's related manager."""

    def all(self) -> tuple[RegistryInterface, ...]:
        return tuple(self)


@dataclass(frozen=True)
class RegistryInstance:
    service_instance_id: str
    expires_at: dt.datetime | None
    metadata: dict[str, Any]
    interfaces: _Interfaces
    pk: None = None  # not a catalog row: no latency measurement


def _malformed(instance_id: object, what: str) -> ServiceRegistryUnavailable:
    return ServiceRegistryUnavailable(
        f"ServiceRegistry lookup answered a malformed instance {instance_id}: {what}")


def _interface(instance_id: str, data: object) -> RegistryInterface:
    if not isinstance(data, dict):
        raise _malformed(instance_id, "an interface is not an object")
    fields = [data.get(key) for key in ("templateName", "protocol", "policy")]
    properties = data.get("properties") or {}
    if not all(isinstance(value, str) for value in fields) or not isinstance(properties, dict):
        raise _malformed(instance_id, "interface templateName, protocol, policy or properties")
    return RegistryInterface(*fields, properties)


def _expiry(instance_id: str, value: object) -> dt.datetime | None:
    if value in (None, ""):
        return None
    moment = parse_datetime(value) if isinstance(value, str) else None
    if moment is None or moment.tzinfo is None:
        raise _malformed(instance_id, f"expiresAt {value!r}")
    return moment


def adapt(entry: dict[str, Any]) -> RegistryInstance:
    """One ServiceInstanceResponseDTO as pull reads an instance."""
    instance_id = entry.get("instanceId")
    if not isinstance(instance_id, str) or not instance_id:
        raise _malformed(instance_id, "no instanceId")
    metadata = entry.get("metadata") or {}
    interfaces = entry.get("interfaces") or []
    if not isinstance(metadata, dict) or not isinstance(interfaces, list):
        raise _malformed(instance_id, "metadata or interfaces")
    return RegistryInstance(instance_id, _expiry(instance_id, entry.get("expiresAt")), metadata,
                            _Interfaces(_interface(instance_id, i) for i in interfaces))


_cache: AnswerCache[RegistryInstance] = AnswerCache(CACHE_MAX_ENTRIES)


def cache_clear() -> None:
    _cache.clear()


def registry_instances(instance_ids: Iterable[str], *,
                       refresh: bool = False) -> dict[str, RegistryInstance]:
    """The instances the ServiceRegistry knows among `instance_ids` (absent: not known), from
    the cache or one lookup of every id not freshly cached (with `refresh`: of every id), which
    raises ServiceRegistryUnavailable when it fails. Answers ("not found" too) are kept for
    SERVICE_REGISTRY_CACHE_SECONDS, at most CACHE_MAX_ENTRIES ids (the oldest go first)."""
    def lookup(missing: list[str]) -> dict[str, RegistryInstance]:
        return {entry.service_instance_id: entry
                for entry in map(adapt, registry.service_lookup(missing))}

    return _cache.get_many(instance_ids, lookup, refresh=refresh)
