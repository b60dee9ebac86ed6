"""Polling the ServiceRegistry, which has no change events: a changed fingerprint is a change in
the feed (a trigger, orchestration/migrations/sql/; docs/local-cloud.md "Polling"). Whose
instances to poll is the subscriptions app's to say (it is above this one): its beat task gives
the consumers as a callable."""
import datetime as dt
import hashlib
import json
from collections.abc import Callable, Iterable

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from database.transaction_retry import retry_on_conflict
from serviceregistry.instances import RegistryInstance, registry_instances
from serviceregistry.models import PolledInstance
from store.models import Rule


def rule_instance_ids(consumers) -> list[str]:
    """The instance ids of the consumers' rules, sorted (one query)."""
    return sorted(set(Rule.objects.filter(consumer__in=list(consumers))
                      .values_list("service_instance_id", flat=True)))


def instances_refresh(consumers) -> None:
    """Look the consumers' rule instances up again (one call), so that the evaluations that
    follow read what the ServiceRegistry holds now, not an older cached answer."""
    ids = rule_instance_ids(consumers)
    if ids:
        registry_instances(ids, refresh=True)


def fingerprint(instance: RegistryInstance | None) -> str:
    if instance is None:
        return ""
    data = {"expiresAt": instance.expires_at.isoformat() if instance.expires_at else None,
            "metadata": instance.metadata,
            "interfaces": [[i.template_name, i.protocol, i.policy, i.properties]
                           for i in instance.interfaces.all()]}
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def instances_poll(consumers_at: Callable[[dt.datetime], Iterable[str]]) -> int:
    """One poll of the rule instances of `consumers_at(now)` (the targets of the subscriptions
    alive now); returns how many instances changed (an instance seen for the first time
    counts: the subscriptions behind it are evaluated once more). A failing ServiceRegistry
    raises ServiceRegistryUnavailable; the next poll tries again, nothing is lost."""
    if not settings.SERVICE_REGISTRY_URL:
        return 0
    now = timezone.now()
    ids = rule_instance_ids(consumers_at(now))
    found = registry_instances(ids, refresh=True) if ids else {}
    return _changes_record({i: fingerprint(found.get(i)) for i in ids}, now)


@retry_on_conflict
def _changes_record(seen: dict[str, str], now: dt.datetime) -> int:
    """Store the fingerprints; a changed one is a change in the feed (polls of several
    processes may overlap: the rows are locked in one order, and a change reported twice is
    evaluated once more, which pushes nothing new)."""
    ids = list(seen)
    with transaction.atomic():
        previous = dict(PolledInstance.objects.select_for_update().filter(instance_id__in=ids)
                        .order_by("instance_id").values_list("instance_id", "fingerprint"))
        changed = [i for i in ids if previous.get(i) != seen[i]]
        PolledInstance.objects.bulk_create(
            [PolledInstance(instance_id=i, fingerprint=seen[i], polled_at=now) for i in ids],
            update_conflicts=True, unique_fields=["instance_id"],
            update_fields=["fingerprint", "polled_at"])
        PolledInstance.objects.filter(polled_at__lt=now).delete()  # no subscription behind
    return len(changed)
