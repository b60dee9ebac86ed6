"""What pull reads, and the one place that chooses where from (`pull_source`): the database
(`DATABASE`, in a fixed number of queries and at most one ServiceRegistry lookup whatever the
number of rules and interfaces) or the process's snapshot (orchestration.snapshot.state),
both `PullSource`s, so pull and its tests run the same on either (docs/testing.md)."""
import datetime as dt
from collections.abc import Callable, Iterable
from types import SimpleNamespace

from django.conf import settings
from django.db.models import Q

from orchestration.models import OrchestrationLock
from orchestration.pull.records import (
    FLEXIBLE_RULE_COLUMNS,
    CatalogInstance,
    FlexibleRuleRecord,
    PullRule,
    PullSource,
    Reservation,
    interface_record,
)
from orchestration.snapshot.state import snapshot_view
from serviceregistry.instances import RegistryInstance, registry_instances
from store.models import FlexibleRule, Rule, ServiceInstance, ServiceInterface


def consumer_rules(*, consumer: str, service_definition: str | None) -> list[PullRule]:
    """The consumer's rules, best priority first, ties by service definition (one query,
    served by the (consumer, serviceDefinition, priority) and (consumer, priority) indexes)."""
    rules = Rule.objects.filter(consumer=consumer)
    if service_definition:
        rules = rules.filter(service_definition=service_definition)
    return [PullRule(*row) for row in rules.order_by("priority", "service_definition")
            .values_list("service_instance_id", "service_definition", "priority")]


def flexible_rules(*, consumer: str, service_definition: str | None,
                   ) -> list[FlexibleRuleRecord]:
    """The flexible rules that may apply to `consumer`: those naming it and those selecting
    consumers by metadata alone (pull checks those against its system metadata), of
    `service_definition` only when given, in pull order (one query, served by the consumer
    and the service definition indexes)."""
    rules = FlexibleRule.objects.filter(Q(consumer=consumer) | Q(consumer__isnull=True))
    if service_definition:
        rules = rules.filter(service_definition=service_definition)
    return [FlexibleRuleRecord(*row) for row in rules.order_by(
        "priority", "service_definition", "created_at", "id").values_list(
        *FLEXIBLE_RULE_COLUMNS)]


def registry_instance(instance: RegistryInstance) -> CatalogInstance:
    return CatalogInstance(
        instance.service_instance_id, None, instance.expires_at, instance.metadata,
        tuple(interface_record(i.template_name, i.protocol, i.policy, i.properties)
              for i in instance.interfaces.all()))


def catalog_instances(instance_ids: Iterable[str], *,
                      local: Callable[[set[str]], dict]) -> dict[str, CatalogInstance]:
    """The instances behind the ids: with SERVICE_REGISTRY_URL set, the ServiceRegistry's
    (one lookup, cached; ServiceRegistryUnavailable when it fails), then the local catalog for
    the ids the ServiceRegistry does not know (docs/local-cloud.md), read by `local` (a
    `PullSource`'s `local_instances`). Ids in neither are absent."""
    ids = set(instance_ids)
    found: dict[str, CatalogInstance] = {}
    if settings.SERVICE_REGISTRY_URL and ids:
        found.update((instance_id, registry_instance(instance))
                     for instance_id, instance in registry_instances(ids).items())
    found.update(local(ids - found.keys()))
    return found


def local_instances(instance_ids: Iterable[str]) -> dict[str, CatalogInstance]:
    """Catalog entries by instance id, with their interfaces in order (two queries; none for
    no ids)."""
    ids = list(instance_ids)
    if not ids:
        return {}
    rows = list(ServiceInstance.objects.filter(service_instance_id__in=ids).values_list(
        "pk", "service_instance_id", "expires_at", "metadata"))
    interfaces: dict[int, list[dict]] = {pk: [] for pk, *_ in rows}
    for instance, *interface in (ServiceInterface.objects.filter(instance__in=interfaces)
                                 .order_by("instance", "position")
                                 .values_list("instance", "template_name", "protocol", "policy",
                                              "properties")):
        interfaces[instance].append(interface_record(*interface))
    return {instance_id: CatalogInstance(instance_id, pk, expires_at, metadata,
                                         tuple(interfaces[pk]))
            for pk, instance_id, expires_at, metadata in rows}


def local_instances_of(service_definitions: Iterable[str]) -> dict[str, CatalogInstance]:
    """The local catalog's instances of these service definitions, by instance id (three
    queries; none for no definitions)."""
    definitions = list(service_definitions)
    if not definitions:
        return {}
    return local_instances(ServiceInstance.objects.filter(
        service_definition__in=definitions).values_list("service_instance_id", flat=True))


def active_locks(instance_ids: Iterable[str], *, now: dt.datetime) -> dict[str, Reservation]:
    """Unexpired locks of these instances, by instance id (one query)."""
    return {instance_id: Reservation(owner, expires_at)
            for instance_id, owner, expires_at in OrchestrationLock.objects.filter(
                service_instance_id__in=list(instance_ids), expires_at__gt=now)
            .values_list("service_instance_id", "owner", "expires_at")}


# The database as a `PullSource`: the reads above.
DATABASE: PullSource = SimpleNamespace(consumer_rules=consumer_rules,
                                       local_instances=local_instances,
                                       local_instances_of=local_instances_of,
                                       flexible_rules=flexible_rules, active_locks=active_locks)


def pull_source() -> PullSource:
    """Where this pull reads its rules, instances and reservations: the process's snapshot,
    brought up to date with every change committed before now, or the database when the
    snapshot cannot answer: inside a transaction (which the snapshot cannot see; except the
    previews `snapshot_in_transaction` allows), with PULL_SNAPSHOT=false, while it loads, and
    when it has fallen too far behind (orchestration.snapshot.state, `snapshot_view`)."""
    view = snapshot_view()
    return DATABASE if view is None else view
