"""Writing orchestration locks by hand (issue 33, `serviceOrchestrationLockManagement` as the
Java DynamicServiceOrchestration serves it): an instance locked for an owner is offered to
nobody else until the lock expires, like a reservation made by pull (the same table)."""
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.utils import timezone

from conventions import names
from conventions.exceptions import InvalidParameter
from conventions.instance_ids import instance_id
from conventions.timestamps import parse_utc
from database.transaction_retry import retry_on_conflict
from orchestration.models import OrchestrationLock
from store.services.rules import bulk_ensure_entries


@dataclass(frozen=True)
class LockDraft:
    service_instance_id: str | None
    owner: str | None
    expires_at: str | None


@dataclass(frozen=True)
class ValidLock:
    service_instance_id: str
    owner: str
    expires_at: dt.datetime


def _lock_validate(draft: LockDraft, now: dt.datetime) -> ValidLock:
    if draft.service_instance_id is None or not names.java_trim(draft.service_instance_id):
        raise InvalidParameter("Service instance id is missing")
    if draft.owner is None or not names.java_trim(draft.owner):
        raise InvalidParameter("Owner is missing")
    if draft.expires_at is None or not names.java_trim(draft.expires_at):
        raise InvalidParameter("Expiration time is missing")
    expires_at = parse_utc(draft.expires_at)
    if expires_at is None:
        raise InvalidParameter(f"Invalid expires at format: {draft.expires_at}")
    if expires_at < now:
        raise InvalidParameter(f"Expires at is in the past: {draft.expires_at}")
    return ValidLock(instance_id(draft.service_instance_id), names.system_name(draft.owner),
                     expires_at)


@retry_on_conflict
def locks_create(*, drafts: Sequence[LockDraft | None], limit: int | None,
                 ) -> list[OrchestrationLock]:
    """Lock instances, all or nothing: an instance with a live lock (a reservation or a lock
    made here, whoever owns it) is a 400 naming every such instance; expired locks are
    replaced."""
    bulk_ensure_entries(drafts, limit)
    now = timezone.now()
    locks = [_lock_validate(draft, now) for draft in drafts]
    ids = [lock.service_instance_id for lock in locks]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise InvalidParameter(f"Duplicate service instance id: {', '.join(repeated)}")
    try:
        with transaction.atomic():
            OrchestrationLock.objects.filter(service_instance_id__in=ids,
                                             expires_at__lte=now).delete()
            held = sorted(OrchestrationLock.objects.filter(service_instance_id__in=ids)
                          .values_list("service_instance_id", flat=True))
            if held:
                raise InvalidParameter(f"Already locked: {', '.join(held)}")
            return OrchestrationLock.objects.bulk_create([
                OrchestrationLock(service_instance_id=lock.service_instance_id, owner=lock.owner,
                                  expires_at=lock.expires_at, created_at=now)
                for lock in locks])
    except IntegrityError:  # a reservation made meanwhile: the unique instance id
        raise InvalidParameter("An instance was locked concurrently; please retry") from None


@retry_on_conflict
@transaction.atomic
def locks_remove(*, owner: str | None, instance_ids: Sequence[str]) -> int:
    """Remove the owner's locks of these instances (reservations made by pull included);
    other owners' locks and unknown instances are ignored."""
    if owner is None or not names.java_trim(owner):
        raise InvalidParameter("Owner is missing")
    if not instance_ids:
        raise InvalidParameter("Service instance id list empty")
    deleted, _ = OrchestrationLock.objects.filter(
        owner=names.system_name(owner),
        service_instance_id__in=[instance_id(value) for value in instance_ids]).delete()
    return deleted
