"""What this system registers in the ServiceRegistry, as the Java DTOs `SystemRegisterRequestDTO`
and `ServiceInstanceCreateRequestDTO`: the system itself and one instance per service of the
operation table (api/operations.py), with its interfaces and metadata."""
import base64
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from django.conf import settings

from api.operations import PublishedService, published_services
from notifications.mqtt_broker import broker_address

# The framework version the Java systems register with (`Constants.AH_FRAMEWORK_VERSION`).
FRAMEWORK_VERSION = "5.2.0"
SERVICE_VERSION = "1.0.0"


def system_register_body() -> dict[str, Any]:
    """SystemRegisterRequestDTO; under the certificate policy the metadata carries our public
    key, as the Java systems do."""
    metadata: dict[str, Any] = {}
    if settings.AUTHENTICATION_POLICY == "certificate":
        metadata["x509PublicKey"] = public_key_base64(settings.TLS_CERT_FILE)
    return {"metadata": metadata, "version": FRAMEWORK_VERSION,
            "addresses": [settings.SERVICE_ADDRESS], "deviceName": None}


def service_register_bodies() -> list[dict[str, Any]]:
    """One ServiceInstanceCreateRequestDTO per service the strategy in force publishes, never
    expiring."""
    return [{"serviceDefinitionName": service.definition, "version": SERVICE_VERSION,
             "expiresAt": None, "metadata": dict(service.metadata),
             "interfaces": _interfaces(service)} for service in published_services()]


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
    certificate = x509.load_pem_x509_certificate(Path(certificate_file).read_bytes())
    return base64.b64encode(certificate.public_key().public_bytes(
        Encoding.DER, PublicFormat.SubjectPublicKeyInfo)).decode()
