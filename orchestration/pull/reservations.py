"""Reservations (SPEC §5 step 7): an instance locked by one consumer is not offered to
others until the lock expires. The unique lock per instance makes a reservation race have
exactly one winner."""
import datetime as dt

from django.db import transaction

from orchestration.models import OrchestrationLock


def reserve(*, instance_id: str, owner: str, seconds: int, now: dt.datetime) -> dt.datetime | None:
    """Lock the instance for `owner` for `seconds`. Returns the lock's expiry, or None when
    another owner holds it. An expired lock is replaced; the owner's own live lock is kept
    (not extended) and returned."""
    with transaction.atomic():
        OrchestrationLock.objects.filter(service_instance_id=instance_id,
                                         expires_at__lte=now).delete()
        lock, _ = OrchestrationLock.objects.get_or_create(
            service_instance_id=instance_id,
            defaults={"owner": owner, "expires_at": now + dt.timedelta(seconds=seconds),
                      "created_at": now})
    return lock.expires_at if lock.owner == owner else None


def locks_remove_expired(*, now: dt.datetime) -> int:
    """End the expired reservations; how many were deleted (the feed's triggers record the
    freed instances)."""
    deleted, _ = OrchestrationLock.objects.filter(expires_at__lte=now).delete()
    return deleted
