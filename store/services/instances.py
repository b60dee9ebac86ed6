"""Writing the service instance catalog (SPEC §4): create (same id replaces), update, remove,
and purge of expired instances. API, admin actions and the import command go through here."""
import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from config.conventions import names
from config.conventions.instance_ids import build_instance_id, instance_id
from config.conventions.timestamps import parse_utc
from config.conventions.versions import normalize_version, validate_version
from config.exceptions import InvalidParameter
from store.changes import change_record
from store.interfaces import (
    InterfaceDraft,
    ValidInterface,
    interfaces_validate,
    metadata_validate,
)
from store.models import ServiceInstance, ServiceInterface

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


def instance_drafts_validate(drafts: Sequence[InstanceDraft | None], *,
                             limit: int | None) -> list[ValidInstance]:
    _ensure_not_empty(drafts, limit)
    now = timezone.now()
    instances = [instance_validate(draft, now=now) for draft in drafts]
    _ensure_distinct((i.instance_id for i in instances), "Duplicated instance")
    return instances


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


@transaction.atomic
def instances_store(instances: Sequence[ValidInstance], *, batch_size: int = 500,
                    progress=None) -> list[ServiceInstance]:
    """Create validated instances; an instance whose id exists replaces it (keeping its
    creation time)."""
    now = timezone.now()
    ids = [instance.instance_id for instance in instances]
    change_record(instance_ids=ids)
    created_at: dict[str, dt.datetime] = {}
    for start in range(0, len(ids), batch_size):
        chunk = ids[start:start + batch_size]
        existing = ServiceInstance.objects.select_for_update().filter(service_instance_id__in=chunk)
        created_at.update(existing.values_list("service_instance_id", "created_at"))
        existing.delete()
    rows = []
    for start in range(0, len(instances), batch_size):
        chunk = [ServiceInstance(service_instance_id=i.instance_id, provider=i.provider,
                                 service_definition=i.service_definition, version=i.version,
                                 expires_at=i.expires_at, metadata=i.metadata,
                                 created_at=created_at.get(i.instance_id, now), updated_at=now)
                 for i in instances[start:start + batch_size]]
        ServiceInstance.objects.bulk_create(chunk)
        ServiceInterface.objects.bulk_create(
            [row for instance, valid in zip(chunk, instances[start:start + batch_size])
             for row in _interface_rows(instance, valid.interfaces)])
        rows.extend(chunk)
        if progress:
            progress(len(rows))
    return _with_interfaces(rows)


def instance_create_many(*, drafts: Sequence[InstanceDraft | None],
                         limit: int | None) -> list[ServiceInstance]:
    return instances_store(instance_drafts_validate(drafts, limit=limit))


def _update_validate(draft: InstanceUpdateDraft, now: dt.datetime):
    raw_id = _text_or_none(draft.instance_id, "instanceId")
    if raw_id is None or not raw_id.strip():
        raise InvalidParameter("Instance id is empty")
    return (instance_id(raw_id), _expiry(draft.expires_at, now),
            metadata_validate(draft.metadata), interfaces_validate(draft.interfaces))


def instance_update_many(*, drafts: Sequence[InstanceUpdateDraft | None],
                         limit: int | None) -> list[ServiceInstance]:
    """Replace expiry (absent clears it), metadata and the whole interface list of existing
    instances."""
    _ensure_not_empty(drafts, limit)
    now = timezone.now()
    updates = [_update_validate(draft, now) for draft in drafts]
    _ensure_distinct((update[0] for update in updates), "Duplicated instance id")
    with transaction.atomic():
        stored = {i.service_instance_id: i for i in ServiceInstance.objects.select_for_update()
                  .filter(service_instance_id__in=[u[0] for u in updates])}
        for update in updates:
            if update[0] not in stored:
                raise InvalidParameter(f"Instance id does not exist: {update[0]}")
        rows = []
        for instance_key, expires_at, metadata, interfaces in updates:
            instance = stored[instance_key]
            instance.expires_at, instance.metadata, instance.updated_at = expires_at, metadata, now
            rows.append(instance)
        ServiceInstance.objects.bulk_update(rows, ["expires_at", "metadata", "updated_at"])
        change_record(instance_ids=stored)
        ServiceInterface.objects.filter(instance__in=rows).delete()
        ServiceInterface.objects.bulk_create(
            [row for instance, update in zip(rows, updates)
             for row in _interface_rows(instance, update[3])])
    return _with_interfaces(rows)


@transaction.atomic
def instance_delete_many(*, instance_ids: Iterable[str]) -> int:
    instances = ServiceInstance.objects.filter(service_instance_id__in=list(instance_ids))
    change_record(instance_ids=instances.values_list("service_instance_id", flat=True))
    deleted = instances.delete()
    return deleted[1].get(ServiceInstance._meta.label, 0)


def instance_remove_expired(*, now: dt.datetime | None = None) -> int:
    """Delete every instance whose expiry has passed; returns how many."""
    now = now or timezone.now()
    return instance_delete_many(instance_ids=ServiceInstance.objects.filter(
        expires_at__lte=now).values_list("service_instance_id", flat=True))
