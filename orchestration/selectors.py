"""Reads of pull: the consumer's rules and the instances behind them, in a fixed number of
queries (and at most one ServiceRegistry lookup) whatever the number of rules and interfaces."""
from collections.abc import Iterable

from django.conf import settings
from django.db.models import Prefetch

from serviceregistry.instances import RegistryInstance, registry_instances
from store.models import Rule, ServiceInstance, ServiceInterface


def consumer_rules(*, consumer: str, service_definition: str | None) -> list[Rule]:
    """The consumer's rules, best priority first, ties by service definition (one query,
    served by the (consumer, serviceDefinition, priority) and (consumer, priority) indexes)."""
    rules = Rule.objects.filter(consumer=consumer)
    if service_definition:
        rules = rules.filter(service_definition=service_definition)
    return list(rules.order_by("priority", "service_definition"))


def catalog_instances(instance_ids: Iterable[str],
                      ) -> dict[str, ServiceInstance | RegistryInstance]:
    """The instances behind the ids: with SERVICE_REGISTRY_URL set, the ServiceRegistry's
    (one lookup, cached; ServiceRegistryUnavailable when it fails), then the local catalog for
    the ids the ServiceRegistry does not know (docs/local-cloud.md). Ids in neither are absent."""
    ids = set(instance_ids)
    found: dict[str, ServiceInstance | RegistryInstance] = {}
    if settings.SERVICE_REGISTRY_URL and ids:
        found.update(registry_instances(ids))
    found.update(local_instances(ids - found.keys()))
    return found


def local_instances(instance_ids: Iterable[str]) -> dict[str, ServiceInstance]:
    """Catalog entries by instance id, with their interfaces in order (two queries; none for
    no ids)."""
    ids = list(instance_ids)
    if not ids:
        return {}
    interfaces = Prefetch("interfaces", queryset=ServiceInterface.objects.order_by("position"))
    instances = (ServiceInstance.objects.filter(service_instance_id__in=ids)
                 .prefetch_related(interfaces))
    return {instance.service_instance_id: instance for instance in instances}
