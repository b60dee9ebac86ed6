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
from django.db.models import Q
from django.utils import timezone

from api.operations import FLEXIBLE_STORE
from database.transaction_retry import retry_on_conflict
from serviceregistry.discovery import instances_of, systems_metadata
from serviceregistry.instances import RegistryInstance, registry_instances
from serviceregistry.models import PolledInstance, PolledSystem
from store.models import FlexibleRule, Rule


def rule_instance_ids(consumers) -> list[str]:
    """The instance ids of the consumers' rules, sorted (one query)."""
    return sorted(set(Rule.objects.filter(consumer__in=list(consumers))
                      .values_list("service_instance_id", flat=True)))


def flexible_rule_definitions(consumers) -> list[str]:
    """The service definitions of the flexible rules that may apply to the consumers (naming
    them, or selecting consumers by metadata), sorted (one query)."""
    return sorted(set(FlexibleRule.objects.filter(
        Q(consumer__in=list(consumers)) | Q(consumer__isnull=True))
        .values_list("service_definition", flat=True)))


def followed_instances(consumers) -> dict[str, tuple[RegistryInstance, dict | None]]:
    """What the ServiceRegistry holds now of the instances the consumers' rules may give them
    (one lookup, which also refreshes the cache the evaluations read): under the simple store
    the instances the rules name, under the flexible store every instance of the rules'
    service definitions, with its provider's system metadata. By instance id."""
    if settings.ORCHESTRATION_STRATEGY == FLEXIBLE_STORE:
        definitions = flexible_rule_definitions(consumers)
        return {offered.instance.service_instance_id: (offered.instance,
                                                       offered.provider_metadata)
                for instances in instances_of(definitions, refresh=True).values()
                for offered in instances} if definitions else {}
    ids = rule_instance_ids(consumers)
    found = registry_instances(ids, refresh=True) if ids else {}
    return {instance_id: (instance, None) for instance_id, instance in found.items()}


def instances_refresh(consumers) -> None:
    """Look the instances behind the consumers' rules up again (one call), and under the
    flexible store, when rules select consumers by metadata, the consumers' system metadata
    (one more), so that the evaluations that follow read what the ServiceRegistry holds now,
    not an older cached answer."""
    followed_instances(consumers)
    if _metadata_rules():
        systems_metadata(list(consumers), refresh=True)


def _metadata_rules() -> bool:
    """Whether the flexible store is in force and a rule selects consumers by metadata."""
    return (settings.ORCHESTRATION_STRATEGY == FLEXIBLE_STORE
            and FlexibleRule.objects.filter(consumer_metadata__isnull=False).exists())


def fingerprint(instance: RegistryInstance | None, provider_metadata: dict | None = None) -> str:
    """What pull reads of an instance, hashed; with the provider's system metadata when the
    flexible store reads that too."""
    if instance is None:
        return ""
    data = {"expiresAt": instance.expires_at.isoformat() if instance.expires_at else None,
            "metadata": instance.metadata,
            "interfaces": [[i.template_name, i.protocol, i.policy, i.properties]
                           for i in instance.interfaces.all()]}
    if provider_metadata is not None:
        data["providerMetadata"] = provider_metadata
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def instances_poll(consumers_at: Callable[[dt.datetime], Iterable[str]]) -> int:
    """One poll of the rule instances of `consumers_at(now)` (the targets of the subscriptions
    alive now); returns how many instances changed (an instance seen for the first time
    counts: the subscriptions behind it are evaluated once more). A failing ServiceRegistry
    raises ServiceRegistryUnavailable; the next poll tries again, nothing is lost."""
    if not settings.SERVICE_REGISTRY_URL:
        return 0
    now = timezone.now()
    consumers = list(consumers_at(now))
    found = followed_instances(consumers)
    if settings.ORCHESTRATION_STRATEGY == FLEXIBLE_STORE:
        # the instances seen last time that are gone now are changes too
        ids = sorted(set(found) | set(PolledInstance.objects.exclude(fingerprint="")
                                      .values_list("instance_id", flat=True)))
    else:
        ids = rule_instance_ids(consumers)
    seen = {i: fingerprint(*found.get(i, (None, None))) for i in ids}
    return len(_fingerprints_record(PolledInstance, "instance_id", seen, now))


@retry_on_conflict
def _fingerprints_record(model, key: str, seen: dict[str, str], now: dt.datetime) -> list[str]:
    """Store the fingerprints of `seen` (key → fingerprint) in `model` (PolledInstance, whose
    changed rows are changes in the feed through its trigger, or PolledSystem), drop the rows
    not seen now (no subscription behind them), and return the keys whose fingerprint changed.
    Polls of several processes may overlap: the rows are locked in one order, and a change
    reported twice is evaluated once more, which pushes nothing new."""
    keys = list(seen)
    with transaction.atomic():
        previous = dict(model.objects.select_for_update().filter(**{f"{key}__in": keys})
                        .order_by(key).values_list(key, "fingerprint"))
        changed = [k for k in keys if previous.get(k) != seen[k]]
        model.objects.bulk_create(
            [model(**{key: k}, fingerprint=seen[k], polled_at=now) for k in keys],
            update_conflicts=True, unique_fields=[key], update_fields=["fingerprint", "polled_at"])
        model.objects.filter(polled_at__lt=now).delete()
    return changed


def systems_poll(consumers: Iterable[str]) -> list[str]:
    """Under the flexible store, when rules select consumers by metadata: look the consumers'
    system metadata up again (one call) and return those whose metadata changed since the
    last poll (or were seen for the first time); their fingerprints' trigger writes them to
    the change feed in the same transaction, so their subscriptions are evaluated again. A
    failing ServiceRegistry raises ServiceRegistryUnavailable."""
    if not settings.SERVICE_REGISTRY_URL or not _metadata_rules():
        return []
    names = sorted(set(consumers))
    found = systems_metadata(names, refresh=True) if names else {}
    seen = {name: _metadata_fingerprint(found.get(name)) for name in names}
    return _fingerprints_record(PolledSystem, "name", seen, timezone.now())


def _metadata_fingerprint(metadata: dict | None) -> str:
    if metadata is None:
        return ""
    return hashlib.sha256(json.dumps(metadata, sort_keys=True, default=str).encode()).hexdigest()
