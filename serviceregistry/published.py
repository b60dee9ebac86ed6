"""What this system publishes in the ServiceRegistry: the system itself, the five services
the Java SimpleStoreServiceOrchestration registers (audit §2) and our catalog of service
instances, as the Java DTOs `SystemRegisterRequestDTO` and `ServiceInstanceCreateRequestDTO`.

SERVICES is the one table of the operations. Every API view declares the operation it serves
(`service_operation`, see identity/operations.py); `tests/serviceregistry` checks the table
against the URL configuration and the views' declarations, so a registered path can never
differ from a served one.
"""
import base64
import ssl
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from notifications.transports import broker_address

# The framework version the Java systems register with (`Constants.AH_FRAMEWORK_VERSION`).
FRAMEWORK_VERSION = "5.2.0"
SERVICE_VERSION = "1.0.0"
ORCHESTRATION = "/serviceorchestration/orchestration"


@dataclass(frozen=True)
class Operation:
    method: str
    path: str  # below the service's base path; `{id}` stands for a path parameter
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
    }, mqtt_base="orchestration/management/store/"),
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
    }, metadata={"orchestrationStrategy": "simpleStore", "unrestrictedDiscovery": True},
        mqtt_base="orchestration/"),
)

_OPERATIONS = {(service.definition, name): ServiceOperation(
    service.definition, name, service.is_management, operation.permission)
    for service in SERVICES for name, operation in service.operations.items()}


# An unknown path under `/mgmt/`: management, but of no service we publish (config.views).
UNKNOWN_MANAGEMENT_OPERATION = ServiceOperation("", "", True, None)


def operation(service: str, name: str) -> ServiceOperation:
    """The published operation a view declares it serves; a KeyError at import time for one
    that is not published, so a view cannot name an operation the SR does not know."""
    return _OPERATIONS[(service, name)]


def system_register_body() -> dict[str, Any]:
    """SystemRegisterRequestDTO; under the certificate policy the metadata carries our public
    key, as the Java systems do."""
    metadata: dict[str, Any] = {}
    if settings.AUTHENTICATION_POLICY == "certificate":
        metadata["x509PublicKey"] = public_key_base64(settings.TLS_CERT_FILE)
    return {"metadata": metadata, "version": FRAMEWORK_VERSION,
            "addresses": [settings.SERVICE_ADDRESS], "deviceName": None}


def service_register_bodies() -> list[dict[str, Any]]:
    """One ServiceInstanceCreateRequestDTO per published service, never expiring."""
    return [{"serviceDefinitionName": service.definition, "version": SERVICE_VERSION,
             "expiresAt": None, "metadata": dict(service.metadata),
             "interfaces": _interfaces(service)} for service in SERVICES]


def _interfaces(service: PublishedService) -> list[dict[str, Any]]:
    interfaces = [_interface(service)]
    if settings.MQTT_API_ENABLED and service.mqtt_base is not None:
        interfaces.append(_mqtt_interface(service))
    return interfaces


def _mqtt_interface(service: PublishedService) -> dict[str, Any]:
    """generic_mqtt, or generic_mqtts for a TLS broker: the properties of the Java
    MqttInterfaceModel (the broker's address and port, the base topic, the operations as a
    list of names)."""
    broker = broker_address(settings.MQTT_BROKER_URL)
    return {
        "templateName": "generic_mqtts" if broker.tls else "generic_mqtt",
        "protocol": "ssl" if broker.tls else "tcp",
        "policy": _policy(),
        "properties": {
            "accessAddresses": [broker.host],
            "accessPort": broker.port,
            "baseTopic": settings.MQTT_API_BASE_TOPIC + service.mqtt_base,
            "operations": list(service.operations),
        },
    }


def _policy() -> str:
    return "CERT_AUTH" if settings.AUTHENTICATION_POLICY == "certificate" else "NONE"


def _interface(service: PublishedService) -> dict[str, Any]:
    """generic_http, or generic_https when we serve TLS; the properties of the Java
    HttpInterfaceModel. The policy is CERT_AUTH under the certificate policy, else NONE."""
    secure = bool(settings.TLS_CERT_FILE)
    return {
        "templateName": "generic_https" if secure else "generic_http",
        "protocol": "https" if secure else "http",
        "policy": _policy(),
        "properties": {
            "accessAddresses": [settings.SERVICE_ADDRESS],
            "accessPort": settings.PORT,
            "basePath": service.base_path,
            "operations": {name: {"path": operation.path, "method": operation.method}
                           for name, operation in service.operations.items()},
        },
    }


def public_key_base64(certificate_file: str) -> str:
    """The certificate's SubjectPublicKeyInfo (DER) in Base64, what Java's
    `PublicKey.getEncoded()` gives."""
    with open(certificate_file) as pem:
        der = ssl.PEM_cert_to_DER_cert(pem.read())
    certificate = _der_items(_der_content(der, 0))[0]  # tbsCertificate
    fields = _der_items(_der_content(certificate, 0))
    if fields[0][0] == 0xA0:  # the explicit version is optional
        fields = fields[1:]
    # serialNumber, signature, issuer, validity, subject, subjectPublicKeyInfo
    return base64.b64encode(fields[5]).decode()


def _der_header(data: bytes, offset: int) -> tuple[int, int]:
    """(start of the content, its length) of the DER element at `offset`."""
    length, position = data[offset + 1], offset + 2
    if length & 0x80:
        count = length & 0x7F
        length = int.from_bytes(data[position:position + count], "big")
        position += count
    return position, length


def _der_content(data: bytes, offset: int) -> bytes:
    start, length = _der_header(data, offset)
    return data[start:start + length]


def _der_items(content: bytes) -> list[bytes]:
    """The whole elements (tag, length, content) inside a constructed element's content."""
    items, offset = [], 0
    while offset < len(content):
        start, length = _der_header(content, offset)
        items.append(content[offset:start + length])
        offset = start + length
    return items
