"""Reads of pull: the consumer's rules and the catalog entries behind them, in a fixed
number of queries whatever the number of rules and interfaces."""
from collections.abc import Iterable

from django.db.models import Prefetch

from store.models import Rule, ServiceInstance, ServiceInterface


def consumer_rules(*, consumer: str, service_definition: str | None) -> list[Rule]:
    """The consumer's rules, best priority first, ties by service definition (one query,
    served by the (consumer, serviceDefinition, priority) and (consumer, priority) indexes)."""
    rules = Rule.objects.filter(consumer=consumer)
    if service_definition:
        rules = rules.filter(service_definition=service_definition)
    return list(rules.order_by("priority", "service_definition"))


def catalog_instances(instance_ids: Iterable[str]) -> dict[str, ServiceInstance]:
    """Catalog entries by instance id, with their interfaces in order (two queries)."""
    interfaces = Prefetch("interfaces", queryset=ServiceInterface.objects.order_by("position"))
    instances = (ServiceInstance.objects.filter(service_instance_id__in=list(instance_ids))
                 .prefetch_related(interfaces))
    return {instance.service_instance_id: instance for instance in instances}
