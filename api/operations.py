"""The table of the operations this system publishes: the five services the Java
SimpleStoreServiceOrchestration registers (audit §2) and our catalog of service instances,
each with its base path, operations and MQTT topics.

SERVICES is the one table of the operations. Every API view declares the operation it serves
(`service_operation`, read by `served_operation` below); `tests/serviceregistry` checks the table
against the URL configuration and the views' declarations, so a registered path can never
differ from a served one.
"""
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from django.conf import settings

ORCHESTRATION = "/serviceorchestration/orchestration"


@dataclass(frozen=True)
class Operation:
    method: str
    path: str  # below the service's base path; `{id}`, `{owner}` stand for path parameters
    # The Django permission that grants a management operation under MANAGEMENT_POLICY=permission.
    permission: str | None = None


@dataclass(frozen=True)
class PublishedService:
    definition: str
    base_path: str
    operations: dict[str, Operation]
    metadata: dict[str, Any] = field(default_factory=dict)
    # Below MQTT_API_BASE_TOPIC: the topics of its operations over the MQTT interface
    # (mqtt_api/operations.py); None for a service the reference does not serve over MQTT.
    mqtt_base: str | None = None
    # The ORCHESTRATION_STRATEGY that publishes and serves it; None: every strategy.
    strategy: str | None = None

    @property
    def is_management(self) -> bool:
        return self.definition != ORCHESTRATION_SERVICE


@dataclass(frozen=True)
class ServiceOperation:
    """What a view serves: one operation of one published service (issue 13 item 4). The
    management check, the ConsumerAuthorization question and the Django permission all
    start from it."""

    service: str       # service definition, e.g. serviceOrchestrationSimpleStoreManagement
    name: str          # operation, e.g. create
    is_management: bool
    permission: str | None


ORCHESTRATION_SERVICE = "serviceOrchestration"
FLEXIBLE_STORE_MANAGEMENT = "serviceOrchestrationFlexibleStoreManagement"
LOCK_MANAGEMENT = "serviceOrchestrationLockManagement"
SIMPLE_STORE, FLEXIBLE_STORE = "simple-store", "flexible-store"
# ORCHESTRATION_STRATEGY → the `orchestrationStrategy` metadata of serviceOrchestration
STRATEGY_METADATA = {SIMPLE_STORE: "simpleStore", FLEXIBLE_STORE: "flexibleStore"}

SERVICES: tuple[PublishedService, ...] = (
    PublishedService("generalManagement", "/serviceorchestration/general/mgmt", {
        "get-log": Operation("POST", "/logs", "general.view_logentry"),
        "get-config": Operation("GET", "/get-config", "general.view_config"),
    }, mqtt_base="general/management/"),
    PublishedService("serviceOrchestrationPushManagement", f"{ORCHESTRATION}/mgmt/push", {
        "subscribe": Operation("POST", "/subscribe", "subscriptions.add_subscription"),
        # As the Java system registers it (its controller takes `?ids=`; we serve both).
        "unsubscribe": Operation("DELETE", "/unsubscribe/{id}",
                                 "subscriptions.delete_subscription"),
        "trigger": Operation("POST", "/trigger", "subscriptions.change_subscription"),
        "query": Operation("POST", "/query", "subscriptions.view_subscription"),
    }, mqtt_base="orchestration/management/push/"),
    PublishedService("serviceOrchestrationSimpleStoreManagement",
                     f"{ORCHESTRATION}/mgmt/simple-store", {
        "query": Operation("POST", "/query", "store.view_rule"),
        "create": Operation("POST", "/create", "store.add_rule"),
        "modify-priorities": Operation("PUT", "/modify-priorities", "store.change_rule"),
        "remove": Operation("DELETE", "/remove", "store.delete_rule"),
    }, mqtt_base="orchestration/management/store/", strategy=SIMPLE_STORE),
    PublishedService(FLEXIBLE_STORE_MANAGEMENT, f"{ORCHESTRATION}/mgmt/flexible-store", {
        "query": Operation("POST", "/query", "store.view_flexiblerule"),
        "create": Operation("POST", "/create", "store.add_flexiblerule"),
        "remove": Operation("DELETE", "/remove", "store.delete_flexiblerule"),
    }, mqtt_base="orchestration/management/flexible-store/", strategy=FLEXIBLE_STORE),
    # As the Java DynamicServiceOrchestration serves it (not over MQTT here yet).
    PublishedService(LOCK_MANAGEMENT, f"{ORCHESTRATION}/mgmt/lock", {
        "query": Operation("POST", "/query", "orchestration.view_orchestrationlock"),
        "remove": Operation("DELETE", "/remove/{owner}", "orchestration.delete_orchestrationlock"),
        "create": Operation("POST", "/create", "orchestration.add_orchestrationlock"),
    }),
    PublishedService("serviceOrchestrationHistoryManagement", f"{ORCHESTRATION}/mgmt/history", {
        "query": Operation("POST", "/query", "orchestration.view_orchestrationjob"),
    }, mqtt_base="orchestration/management/history/"),
    # Not in the Java system: the catalog of provider instances (docs/service-instances.md).
    PublishedService("serviceOrchestrationServiceInstanceManagement",
                     f"{ORCHESTRATION}/mgmt/service-instances", {
        "create": Operation("POST", "/create", "store.add_serviceinstance"),
        "update": Operation("PUT", "/update", "store.change_serviceinstance"),
        "query": Operation("POST", "/query", "store.view_serviceinstance"),
        "remove": Operation("DELETE", "/remove", "store.delete_serviceinstance"),
    }),
    PublishedService(ORCHESTRATION_SERVICE, ORCHESTRATION, {
        "pull": Operation("POST", "/pull"),
        "subscribe": Operation("POST", "/subscribe"),
        "unsubscribe": Operation("DELETE", "/unsubscribe/{id}"),
    }, metadata={"unrestrictedDiscovery": True}, mqtt_base="orchestration/"),
)


def published_services() -> tuple[PublishedService, ...]:
    """The services of the strategy in force (ORCHESTRATION_STRATEGY), as registered in the
    ServiceRegistry: `serviceOrchestration` says the strategy in its metadata, as the Java
    orchestrators do."""
    strategy = settings.ORCHESTRATION_STRATEGY
    return tuple(
        replace(service, metadata={"orchestrationStrategy": STRATEGY_METADATA[strategy],
                                   **service.metadata})
        if service.definition == ORCHESTRATION_SERVICE else service
        for service in SERVICES if service.strategy in (None, strategy))


def is_served(operation: "ServiceOperation") -> bool:
    """Whether the strategy in force serves the operation (the other store's management is
    answered like an unknown path)."""
    return _STRATEGIES.get(operation.service) in (None, settings.ORCHESTRATION_STRATEGY)

_STRATEGIES = {service.definition: service.strategy for service in SERVICES}
_OPERATIONS = {(service.definition, name): ServiceOperation(
    service.definition, name, service.is_management, operation.permission)
    for service in SERVICES for name, operation in service.operations.items()}


# An unknown path under `/mgmt/`: management, but of no service we publish (api.views).
UNKNOWN_MANAGEMENT_OPERATION = ServiceOperation("", "", True, None)


def operation(service: str, name: str) -> ServiceOperation:
    """The published operation a view declares it serves; a KeyError at import time for one
    that is not published, so a view cannot name an operation the SR does not know."""
    return _OPERATIONS[(service, name)]


# Pull is the operation the identity checks treat specially (identity/authentication.py).
PULL = operation("serviceOrchestration", "pull")


def served_operation(view: object, method: str) -> ServiceOperation | None:
    """The operation `view` serves for `method` (issue 13 item 4): its `service_operation`, one
    `operation(...)` or a mapping of HTTP method to one where a path serves several operations
    (e.g. `DELETE .../simple-store/query` removes); None for a view that declares none (echo,
    the token verification, unknown paths)."""
    declared = getattr(view, "service_operation", None)
    if isinstance(declared, Mapping):
        declared = declared.get(method.upper())
    return declared if isinstance(declared, ServiceOperation) else None
