"""Provider instances from the ServiceRegistry, for pull and subscription evaluation, through
an in-process cache (docs/local-cloud.md "Instances from the SR"). The entries are adapted to the
shape pull reads from a catalog ServiceInstance; their `pk` is None: the latency probe measures
catalog interfaces only."""
import datetime as dt
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.utils.dateparse import parse_datetime

from clients import serviceregistry as registry
from clients.serviceregistry import ServiceRegistryUnavailable

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


# Instance id -> (monotonic time of the answer, instance or None for "not found"), oldest first.
_cache: OrderedDict[str, tuple[float, RegistryInstance | None]] = OrderedDict()
_cache_lock = threading.Lock()


def cache_clear() -> None:
    with _cache_lock:
        _cache.clear()


def registry_instances(instance_ids: Iterable[str], *,
                       refresh: bool = False) -> dict[str, RegistryInstance]:
    """The instances the ServiceRegistry knows among `instance_ids` (absent: not known), from
    the cache or one lookup of every id not freshly cached (with `refresh`: of every id), which
    raises ServiceRegistryUnavailable when it fails. Answers ("not found" too) are kept for
    SERVICE_REGISTRY_CACHE_SECONDS, at most CACHE_MAX_ENTRIES ids (the oldest go first)."""
    ids = sorted(set(instance_ids))
    now = time.monotonic()
    since = now - settings.SERVICE_REGISTRY_CACHE_SECONDS
    with _cache_lock:
        cached = {} if refresh else {i: _cache[i] for i in ids if i in _cache}
    answers = {i: instance for i, (at, instance) in cached.items() if at > since}
    missing = [i for i in ids if i not in answers]
    if missing:
        looked_up = {entry.service_instance_id: entry
                     for entry in map(adapt, registry.service_lookup(missing))}
        answers.update((i, looked_up.get(i)) for i in missing)
        if settings.SERVICE_REGISTRY_CACHE_SECONDS > 0:
            with _cache_lock:
                for instance_id in missing:
                    _cache[instance_id] = (now, answers[instance_id])
                    _cache.move_to_end(instance_id)
                while len(_cache) > CACHE_MAX_ENTRIES:
                    _cache.popitem(last=False)
    return {i: instance for i, instance in answers.items() if instance is not None}
