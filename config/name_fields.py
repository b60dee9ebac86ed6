"""Response fields that carry a normalized Arrowhead name (SPEC §1), documented with the
pattern every stored name matches: names are validated after normalization in both
normalization modes, so an answer never holds anything else.

In requests, extended normalization accepts `temperature-consumer` and stores
`TemperatureConsumer`: request fields get a pattern of their own, `accepted_name_pattern`, which
matches what normalization accepts rather than the normalized form (docs/decisions.md,
"Hardening: OpenAPI schema")."""
from django.conf import settings
from rest_framework import serializers

from config.conventions.names import MAX_NAME_LENGTH
from config.conventions.versions import MAX_VERSION_LENGTH
from config.fields import PYTHON_BLANKS, documented

SYSTEM_NAME = "[A-Z][0-9A-Za-z]*"
SERVICE_DEFINITION = "[a-z][0-9A-Za-z]*"
VERSION = "[0-9]+\\.[0-9]+\\.[0-9]+"
INTERFACE_TEMPLATE = "[a-z](?:[0-9a-z_]*[0-9a-z])?"


def _name_field(pattern: str, max_length: int, description: str) -> type[serializers.CharField]:
    return documented(serializers.CharField, {
        "type": "string", "pattern": f"^{pattern}$", "maxLength": max_length,
        "description": description})


SystemNameField = _name_field(SYSTEM_NAME, MAX_NAME_LENGTH, "System name (PascalCase).")
ServiceDefinitionField = _name_field(SERVICE_DEFINITION, MAX_NAME_LENGTH,
                                     "Service definition name (camelCase).")
VersionField = _name_field(VERSION, MAX_VERSION_LENGTH, "major.minor.patch")
InterfaceTemplateField = _name_field(INTERFACE_TEMPLATE, MAX_NAME_LENGTH,
                                     "Interface template name (snake_case).")
InstanceIdField = _name_field(f"{SYSTEM_NAME}\\|{SERVICE_DEFINITION}\\|{VERSION}",
                              2 * MAX_NAME_LENGTH + MAX_VERSION_LENGTH + 2,
                              "`<Provider>|<serviceDefinition>|<version>`")


# What the name normalizer reads as blanks (Java's trim) and as separators (Python's `\s`,
# `_`, `-`), spelled out for any regex engine (ECMA's `\s` is not Python's).
JAVA_BLANK = "[\\x00-\\x20]"
SEPARATOR = f"[{PYTHON_BLANKS}_-]"
_FIRST_LETTER = {"system": "[A-Z]", "serviceDefinition": "[a-z]"}


def accepted_name_pattern(kind: str, *, blank_allowed: bool) -> str:
    """The texts a request may give for a system name (`kind` "system") or a service
    definition ("serviceDefinition"): under extended normalization any mix of letters, digits
    and separators whose first letter-or-digit is a letter and that has at most 63 letters and
    digits (separators are dropped, case is converted); under simple normalization the name
    itself. Both with Java blanks around. Unicode case-mapping oddities (`ı`, `ſ`, ligatures)
    are left out of the pattern although normalization happens to accept some of them."""
    more = f"{{0,{MAX_NAME_LENGTH - 1}}}"
    if settings.NORMALIZATION_MODE == "extended":
        name = f"{SEPARATOR}*[A-Za-z](?:{SEPARATOR}*[0-9A-Za-z]){more}{SEPARATOR}*"
    else:
        name = f"{_FIRST_LETTER[kind]}[0-9A-Za-z]{more}"
    if blank_allowed:
        name = f"(?:{name})?"
    return f"^{JAVA_BLANK}*{name}{JAVA_BLANK}*$"


# Request fields (wire names, SPEC §3-5) holding a system name or service definition, or a list
# of them: (kind, whether a blank value is accepted as "not given").
REQUEST_NAMES: dict[str, tuple[str, bool]] = {
    "consumer": ("system", False),
    "consumerNames": ("system", False),
    "createdBy": ("system", True),
    "systemName": ("system", False),
    "providerNames": ("system", False),
    "preferredProviders": ("system", False),
    "serviceDefinition": ("serviceDefinition", True),
    "serviceDefinitions": ("serviceDefinition", False),
    "serviceDefinitionName": ("serviceDefinition", False),
    "serviceDefinitionNames": ("serviceDefinition", False),
    "targetSystemName": ("system", True),
}
_NORMALIZED_TO = {"system": "PascalCase", "serviceDefinition": "camelCase"}


def postprocess_request_names(result: dict, generator, request, public) -> dict:
    """drf-spectacular hook: the request properties of `REQUEST_NAMES` (in the `...Request`
    components) get the pattern of what the service accepts there."""
    for component, schema in result.get("components", {}).get("schemas", {}).items():
        if not component.endswith("Request"):
            continue
        for prop, field in schema.get("properties", {}).items():
            if prop not in REQUEST_NAMES:
                continue
            kind, blank_allowed = REQUEST_NAMES[prop]
            text = field["items"] if field.get("type") == "array" else field
            text["pattern"] = accepted_name_pattern(kind, blank_allowed=blank_allowed)
            text["description"] = " ".join(filter(None, [
                text.get("description"), f"Normalized to {_NORMALIZED_TO[kind]} "
                "(`NORMALIZATION_MODE`); at most 63 letters and digits."]))
    return result
