"""Writing the service instance catalog (SPEC §4): create (same id replaces), update, remove,
and purge of expired instances. Every writer (API, admin, import) goes through here, so every
write locks the ids and nudges the subscriptions' change processing."""
import datetime as dt
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from conventions import names
from conventions.exceptions import InvalidParameter
from conventions.instance_ids import build_instance_id, parse_instance_id
from conventions.timestamps import parse_utc
from conventions.versions import normalize_version, validate_version
from database.transaction_retry import retry_on_conflict
from store.services.nudge import processing_nudge
from store.interfaces import (
    InterfaceDraft,
    ValidInterface,
    interfaces_validate,
    metadata_validate,
)
from store.models import ServiceInstance, ServiceInterface
from store.services.locks import instances_lock

EXPIRY_FORMAT = ("Expiration time has an invalid time format, UTC string expected "
                 "(example: 2024-10-11T14:30:00Z)")


@dataclass(frozen=True)
class InstanceDraft:
    """An instance as submitted to create: raw values."""

    system_name: Any
    service_definition: Any
    version: Any
    expires_at: Any
    metadata: Any
    interfaces: list[InterfaceDraft | None] | None


@dataclass(frozen=True)
class InstanceUpdateDraft:
    """An update of a stored instance as submitted: raw values."""

    instance_id: Any
    expires_at: Any
    metadata: Any
    interfaces: list[InterfaceDraft | None] | None


@dataclass(frozen=True)
class ValidInstance:
    provider: str
    service_definition: str
    version: str
    expires_at: dt.datetime | None
    metadata: dict
    interfaces: list[ValidInterface]

    @property
    def instance_id(self) -> str:
        return build_instance_id(self.provider, self.service_definition, self.version)


def _expiry(value: Any, now: dt.datetime) -> dt.datetime | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    expires_at = parse_utc(value)
    if expires_at is None:
        raise InvalidParameter(EXPIRY_FORMAT)
    if expires_at <= now:
        raise InvalidParameter("Expiration time is in the past")
    return expires_at


def _text_or_none(value: Any, what: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise InvalidParameter(f"{what} should be a string")
    return value


def instance_validate(draft: InstanceDraft, *, now: dt.datetime) -> ValidInstance:
    provider = names.system_name(_text_or_none(draft.system_name, "systemName"))
    definition = names.service_definition(
        _text_or_none(draft.service_definition, "serviceDefinitionName"))
    version = validate_version(normalize_version(_text_or_none(draft.version, "version")))
    return ValidInstance(provider, definition, version, _expiry(draft.expires_at, now),
                         metadata_validate(draft.metadata), interfaces_validate(draft.interfaces))


def _ensure_distinct(ids: Iterable[str], message: str) -> None:
    seen: set[str] = set()
    for value in ids:
        if value in seen:
            raise InvalidParameter(f"{message}: {value}")
        seen.add(value)


def _ensure_not_empty(drafts: Sequence, limit: int | None) -> None:
    if not drafts:
        raise InvalidParameter("Instance list is empty")
    if limit is not None and len(drafts) > limit:
        raise InvalidParameter(f"Too many instances: at most {limit} may be sent in one request")
    if any(draft is None for draft in drafts):
        raise InvalidParameter("Instance list contains null element")


def _interface_rows(instance: ServiceInstance,
                    interfaces: Sequence[ValidInterface]) -> list[ServiceInterface]:
    return [ServiceInterface(instance=instance, position=position,
                             template_name=interface.template_name,
                             protocol=interface.protocol, policy=interface.policy,
                             properties=interface.properties)
            for position, interface in enumerate(interfaces)]


def _with_interfaces(instances: list[ServiceInstance]) -> list[ServiceInstance]:
    """Re-read the written instances with their interfaces, in the given order."""
    stored = {i.pk: i for i in ServiceInstance.objects.filter(pk__in=[i.pk for i in instances])
              .prefetch_related("interfaces")}
    return [stored[i.pk] for i in instances]


def _latency_key(instance_id: str, template: str, properties: dict) -> tuple:
    addresses = properties.get("accessAddresses")
    return (instance_id, template, json.dumps(addresses, sort_keys=True),
            json.dumps(properties.get("accessPort")))


def _measured(instances: Iterable[ServiceInstance]) -> dict[tuple, tuple]:
    """Latest latency measurements of these instances' interfaces, by what was measured
    (address list and port), so that re-registering an instance keeps them (one query)."""
    return {
        _latency_key(i.instance.service_instance_id, i.template_name, i.properties):
            (i.latency_ms, i.latency_measured_at)
        for i in ServiceInterface.objects.filter(instance__in=list(instances),
                                                 latency_measured_at__isnull=False)
        .select_related("instance")
    }


def _interfaces_replace(pairs: Sequence[tuple[ServiceInstance, Sequence[ValidInterface]]]
                        ) -> None:
    """Give each stored instance exactly these interfaces, in this order. An interface keeps
    its latency measurement when its template, addresses and port are unchanged."""
    instances = [instance for instance, _ in pairs]
    measured = _measured(instances)
    ServiceInterface.objects.filter(instance__in=instances).delete()
    rows = []
    for instance, interfaces in pairs:
        for row in _interface_rows(instance, interfaces):
            key = _latency_key(instance.service_instance_id, row.template_name, row.properties)
            row.latency_ms, row.latency_measured_at = measured.get(key, (None, None))
            rows.append(row)
    ServiceInterface.objects.bulk_create(rows)


def _lock_existing(instance_ids: Sequence[str], batch_size: int) -> dict[str, ServiceInstance]:
    """Lock the stored instances among these ids, in id order (chunked queries, ascending
    chunks), before anything is written: concurrent writers of overlapping ids then wait for
    each other in one order instead of deadlocking."""
    ordered = sorted(instance_ids)
    # Ids that do not exist yet cannot be row-locked: a create and a remove of the same new id
    # would race to insert it twice. The id locks make every instance writer wait its turn.
    instances_lock(ordered)
    locked: dict[str, ServiceInstance] = {}
    for start in range(0, len(ordered), batch_size):
        locked.update((i.service_instance_id, i) for i in ServiceInstance.objects
                      .select_for_update().filter(service_instance_id__in=ordered[
                          start:start + batch_size]).order_by("service_instance_id"))
    return locked


def _store_chunk(instances: Sequence[ValidInstance], existing: dict[str, ServiceInstance],
                 now: dt.datetime) -> list[ServiceInstance]:
    """Existing ids (locked by the caller) are updated in place (never deleted and
    re-created, so a concurrent remove cannot lose them), new ones inserted."""
    existing = {v.instance_id: existing[v.instance_id] for v in instances
                if v.instance_id in existing}
    rows, new = [], []
    for valid in instances:
        row = existing.get(valid.instance_id)
        if row is None:
            row = ServiceInstance(service_instance_id=valid.instance_id, created_at=now)
            new.append(row)
        row.provider, row.service_definition, row.version = (
            valid.provider, valid.service_definition, valid.version)
        row.expires_at, row.metadata, row.updated_at = valid.expires_at, valid.metadata, now
        rows.append(row)
    ServiceInstance.objects.bulk_update(list(existing.values()),
                                        ["expires_at", "metadata", "updated_at"])
    ServiceInstance.objects.bulk_create(new)
    _interfaces_replace([(row, valid.interfaces) for row, valid in zip(rows, instances)])
    return rows


@retry_on_conflict
@transaction.atomic
def instances_store(instances: Sequence[ValidInstance], *, batch_size: int = 500,
                    progress=None, update: bool = False) -> list[ServiceInstance]:
    """Create validated instances; an instance whose id exists is replaced (its metadata,
    expiry and interfaces; it keeps its creation time and its interfaces' latency
    measurements when address and port are unchanged). Rows are locked and inserted in id
    order (see `_lock_existing`); the answer keeps the request's order. With `update`, an id
    that is not stored is refused."""
    now = timezone.now()
    processing_nudge()
    existing = _lock_existing([instance.instance_id for instance in instances], batch_size)
    for instance in instances if update else ():
        if instance.instance_id not in existing:
            raise InvalidParameter(f"Instance id does not exist: {instance.instance_id}")
    ordered = sorted(instances, key=lambda instance: instance.instance_id)
    rows: dict[str, ServiceInstance] = {}
    for start in range(0, len(ordered), batch_size):
        chunk = ordered[start:start + batch_size]
        rows.update(zip((v.instance_id for v in chunk), _store_chunk(chunk, existing, now)))
        if progress:
            progress(len(rows))
    return _with_interfaces([rows[instance.instance_id] for instance in instances])


def instance_create_many(*, drafts: Sequence[InstanceDraft | None],
                         limit: int | None) -> list[ServiceInstance]:
    _ensure_not_empty(drafts, limit)
    now = timezone.now()
    instances = [instance_validate(draft, now=now) for draft in drafts]
    _ensure_distinct((i.instance_id for i in instances), "Duplicated instance")
    # A concurrent create of the same new id waits for this one (the id locks) and then
    # replaces it, as a create of an existing id does.
    return instances_store(instances)


def instance_update_validate(draft: InstanceUpdateDraft, *, now: dt.datetime) -> ValidInstance:
    """An update replaces expiry (None clears it), metadata and interfaces of a stored id."""
    raw_id = _text_or_none(draft.instance_id, "instanceId")
    if raw_id is None or not raw_id.strip():
        raise InvalidParameter("Instance id is empty")
    return ValidInstance(*parse_instance_id(raw_id), _expiry(draft.expires_at, now),
                         metadata_validate(draft.metadata), interfaces_validate(draft.interfaces))


def instance_update_many(*, drafts: Sequence[InstanceUpdateDraft | None],
                         limit: int | None) -> list[ServiceInstance]:
    """Validate updates sent to the API (every one, before anything is written) and store
    them; an id that is not stored is refused."""
    _ensure_not_empty(drafts, limit)
    now = timezone.now()
    updates = [instance_update_validate(draft, now=now) for draft in drafts]
    _ensure_distinct((update.instance_id for update in updates), "Duplicated instance id")
    return instances_store(updates, update=True)


@retry_on_conflict
@transaction.atomic
def instance_delete_many(*, instance_ids: Iterable[str]) -> int:
    """Remove instances (their rows locked in id order first, as every instance writer does).
    `instance_ids` may be a lazy queryset: a retry evaluates it again."""
    locked = _lock_existing(list(instance_ids), batch_size=1000)
    processing_nudge()
    pks = [instance.pk for instance in locked.values()]
    deleted = 0
    for start in range(0, len(pks), 1000):  # short IN lists on big imports (--replace)
        counts = ServiceInstance.objects.filter(pk__in=pks[start:start + 1000]).delete()[1]
        deleted += counts.get(ServiceInstance._meta.label, 0)
    return deleted


def instance_remove_expired(*, now: dt.datetime | None = None) -> int:
    """Delete every instance whose expiry has passed; returns how many."""
    now = now or timezone.now()
    return instance_delete_many(instance_ids=ServiceInstance.objects.filter(
        expires_at__lte=now).values_list("service_instance_id", flat=True))
