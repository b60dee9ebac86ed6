"""What this system registers in the ServiceRegistry, as the Java DTOs `SystemRegisterRequestDTO`
and `ServiceInstanceCreateRequestDTO`: the system itself and one instance per service of the
operation table (api/operations.py), with its interfaces and metadata."""
import base64
import ssl
from typing import Any

from django.conf import settings

from api.operations import SERVICES, PublishedService
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
