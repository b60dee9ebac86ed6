"""Response fields that carry a normalized Arrowhead name (SPEC §1), documented with the
pattern every stored name matches: names are validated after normalization in both
normalization modes, so an answer never holds anything else.

Request fields stay free-form text: extended normalization accepts `temperature-consumer` and
answers with `TemperatureConsumer`, so a request pattern would refuse what the service accepts
(docs/decisions.md, "Hardening: OpenAPI schema")."""
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from config.conventions.names import MAX_NAME_LENGTH
from config.conventions.versions import MAX_VERSION_LENGTH

SYSTEM_NAME = "[A-Z][0-9A-Za-z]*"
SERVICE_DEFINITION = "[a-z][0-9A-Za-z]*"
VERSION = "[0-9]+\\.[0-9]+\\.[0-9]+"
INTERFACE_TEMPLATE = "[a-z](?:[0-9a-z_]*[0-9a-z])?"


def _name_field(name: str, pattern: str, max_length: int,
                description: str) -> type[serializers.CharField]:
    schema = {"type": "string", "pattern": f"^{pattern}$", "maxLength": max_length,
              "description": description}
    return extend_schema_field(schema)(type(name, (serializers.CharField,), {}))


SystemNameField = _name_field("SystemNameField", SYSTEM_NAME, MAX_NAME_LENGTH,
                              "System name (PascalCase).")
ServiceDefinitionField = _name_field("ServiceDefinitionField", SERVICE_DEFINITION,
                                     MAX_NAME_LENGTH, "Service definition name (camelCase).")
VersionField = _name_field("VersionField", VERSION, MAX_VERSION_LENGTH, "major.minor.patch")
InterfaceTemplateField = _name_field("InterfaceTemplateField", INTERFACE_TEMPLATE,
                                     MAX_NAME_LENGTH, "Interface template name (snake_case).")
InstanceIdField = _name_field("InstanceIdField",
                              f"{SYSTEM_NAME}\\|{SERVICE_DEFINITION}\\|{VERSION}",
                              2 * MAX_NAME_LENGTH + MAX_VERSION_LENGTH + 2,
                              "`<Provider>|<serviceDefinition>|<version>`")
