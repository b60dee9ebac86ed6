"""The flexible store's side of pull (issue 33, docs/flexible-store.md): the instances a
consumer's flexible rules select, each with the rule that selected it first. The rest of pull
(the request's own requirements, reservations, blacklisted providers, preferred providers,
matchmaking, tokens) is the simple store's, in orchestration.pull.services.

A rule applies to the consumer when it names it or does not name a consumer, and when the
consumer's system metadata (from the ServiceRegistry) satisfies its consumer requirements if
it has any. It selects the instances of its service definition, from the ServiceRegistry and
the local catalog, whose provider it names or whose provider's system metadata satisfies its
provider requirements (and both, when it has both), whose metadata satisfies its service
requirements, whose version lies in its range, and which have an interface of its template
(only those interfaces are offered). Rules are taken best priority first; an instance selected
by an earlier rule is not selected again."""
from dataclasses import replace
from typing import Any

from django.conf import settings

from conventions.exceptions import InvalidParameter
from conventions.versions import validate_version
from orchestration.pull import selectors
from orchestration.pull.records import (
    CatalogInstance,
    FlexibleRuleRecord,
    PullRule,
    PullSource,
)
from serviceregistry.discovery import instances_of, systems_metadata
from store.metadata_requirements import matches_any
from store.services.flexible_rules import version_key


def _consumer_metadata(consumer: str, rules: list[FlexibleRuleRecord]) -> dict[str, Any]:
    """The consumer's system metadata, asked of the ServiceRegistry only when a rule selects
    consumers by metadata; {} for a consumer it does not know, or without a ServiceRegistry."""
    if not settings.SERVICE_REGISTRY_URL or not any(r.consumer_metadata for r in rules):
        return {}
    return systems_metadata([consumer]).get(consumer, {})


def _offered(definitions: set[str],
             source: PullSource) -> dict[str, list[tuple[CatalogInstance, dict]]]:
    """(instance, provider metadata) by service definition: the ServiceRegistry's first, then
    the local catalog's other instances (whose providers' metadata is unknown: {}), each in
    instance id order."""
    offered: dict[str, list[tuple[CatalogInstance, dict]]] = {d: [] for d in definitions}
    known: set[str] = set()
    if settings.SERVICE_REGISTRY_URL and definitions:
        for definition, instances in instances_of(definitions).items():
            for item in instances:
                offered[definition].append((selectors.registry_instance(item.instance),
                                            item.provider_metadata))
                known.add(item.instance.service_instance_id)
    for instance in source.local_instances_of(definitions).values():
        if instance.service_instance_id not in known:
            offered[instance.service_instance_id.split("|")[1]].append((instance, {}))
    for instances in offered.values():
        instances.sort(key=lambda item: item[0].service_instance_id)
    return offered


def _version_key(version: str) -> tuple[int, ...] | None:
    try:
        return version_key(validate_version(version))
    except InvalidParameter:
        return None


def _selects(rule: FlexibleRuleRecord, instance: CatalogInstance,
             provider_metadata: dict) -> CatalogInstance | None:
    """The instance as the rule offers it (only the interfaces of its template), or None."""
    provider, _, version = instance.service_instance_id.split("|")
    if rule.provider is not None and rule.provider != provider:
        return None
    if rule.provider_metadata and not matches_any(provider_metadata, rule.provider_metadata):
        return None
    if rule.service_metadata and not matches_any(instance.metadata, rule.service_metadata):
        return None
    if rule.min_version is not None or rule.max_version is not None:
        key = _version_key(version)
        if key is None or (rule.min_version is not None and key < version_key(rule.min_version)) \
                or (rule.max_version is not None and key > version_key(rule.max_version)):
            return None
    if rule.interface_template is None:
        return instance
    interfaces = tuple(i for i in instance.interfaces
                       if i["templateName"] == rule.interface_template)
    return replace(instance, interfaces=interfaces) if interfaces else None


def flexible_selection(*, consumer: str, service_definition: str | None,
                       source: PullSource) -> list[tuple[PullRule, CatalogInstance]]:
    """The instances the consumer's flexible rules select, in rule order, each with the rule
    (as pull reads one) that selected it; the local catalog read from `source` (the process's
    snapshot, or the database)."""
    rules = source.flexible_rules(consumer=consumer, service_definition=service_definition)
    consumer_metadata = _consumer_metadata(consumer, rules)
    rules = [rule for rule in rules if not rule.consumer_metadata
             or matches_any(consumer_metadata, rule.consumer_metadata)]
    offered = _offered({rule.service_definition for rule in rules}, source)
    selected: list[tuple[PullRule, CatalogInstance]] = []
    taken: set[str] = set()
    for rule in rules:
        for instance, provider_metadata in offered[rule.service_definition]:
            if instance.service_instance_id in taken:
                continue
            chosen = _selects(rule, instance, provider_metadata)
            if chosen is not None:
                taken.add(chosen.service_instance_id)
                selected.append((PullRule(chosen.service_instance_id, rule.service_definition,
                                          rule.priority), chosen))
    return selected
