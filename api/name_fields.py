"""Response fields that carry a normalized Arrowhead name (SPEC §1), documented with the
pattern every stored name matches: names are validated after normalization in both
normalization modes, so an answer never holds anything else.

In requests, extended normalization accepts `temperature-consumer` and stores
`TemperatureConsumer`: request fields get a pattern of their own, `accepted_name_pattern`, which
matches what normalization accepts rather than the normalized form (docs/decisions.md,
"Hardening: OpenAPI schema")."""
from django.conf import settings
from rest_framework import serializers

from api.fields import PYTHON_BLANKS, documented
from conventions.names import MAX_NAME_LENGTH
from conventions.uuids import CANONICAL_UUID
from conventions.versions import MAX_VERSION_LENGTH

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
# `_`, `-`), spelled out for any regex engine (ECMA's `\s` is not Python's). Java's trim also
# removes NUL, but the input gate (api.input_safety) refuses NUL anywhere in a request.
JAVA_BLANK = "[\\x01-\\x20]"
SEPARATOR = f"[{PYTHON_BLANKS}_-]"
_FIRST_LETTER = {"system": "[A-Z]", "serviceDefinition": "[a-z]"}


def accepted_name_pattern(kind: str, *, blank_allowed: bool,
                          absent_blank: str = JAVA_BLANK) -> str:
    """The texts a request may give for a system name (`kind` "system") or a service
    definition ("serviceDefinition"): under extended normalization any mix of letters, digits
    and separators whose first letter-or-digit is a letter and that has at most 63 letters and
    digits (separators are dropped, case is converted); under simple normalization the name
    itself. Both with Java blanks around. Unicode case-mapping oddities (`ı`, `ſ`, ligatures)
    are left out of the pattern although normalization happens to accept some of them. Where
    a blank is allowed ("not given"), `absent_blank` says what a blank is to the service."""
    more = f"{{0,{MAX_NAME_LENGTH - 1}}}"
    if settings.NORMALIZATION_MODE == "extended":
        name = f"{SEPARATOR}*[A-Za-z](?:{SEPARATOR}*[0-9A-Za-z]){more}{SEPARATOR}*"
    else:
        name = f"{_FIRST_LETTER[kind]}[0-9A-Za-z]{more}"
    if blank_allowed:
        return f"^(?:{absent_blank}*|{JAVA_BLANK}*{name}{JAVA_BLANK}*)$"
    return f"^{JAVA_BLANK}*{name}{JAVA_BLANK}*$"


def _digits_within(groups: int, total: int) -> str:
    """`groups` dot-separated ASCII numbers with at most `total` digits together."""
    if groups == 1:
        return f"[0-9]{{1,{total}}}"
    return "(?:" + "|".join(f"[0-9]{{{first}}}\\.{_digits_within(groups - 1, total - first)}"
                            for first in range(1, total - groups + 2)) + ")"


def _version_core() -> str:
    """What `conventions.versions.version` accepts between Java blanks: `X` and `X.Y`
    (trailing dots dropped, as Java's split does), completed with `.0`, or `X.Y.Z`; at most
    MAX_VERSION_LENGTH characters once completed."""
    digits = MAX_VERSION_LENGTH - 2
    return (f"(?:{_digits_within(1, digits - 2)}\\.*|{_digits_within(2, digits - 1)}\\.*"
            f"|{_digits_within(3, digits)})")


def accepted_version_pattern(*, blank_allowed: bool) -> str:
    """The texts a request may give for a version; blank (where allowed) means 1.0.0."""
    core = f"(?:{_version_core()})?" if blank_allowed else _version_core()
    return f"^{JAVA_BLANK}*{core}{JAVA_BLANK}*$"


# A UTC instant as `conventions.timestamps.parse_utc` reads it (`2025-11-08T12:00:00Z`,
# fractions allowed): years 0001-9999, real days, except February 29, which the pattern
# leaves out for every year (leap years are beyond a readable pattern), and digits other than
# ASCII ones, which Python's `\\d` would take.
_INSTANT = ("(?:[1-9][0-9]{3}|0[1-9][0-9]{2}|00[1-9][0-9]|000[1-9])-"
            "(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])|(?:0[13-9]|1[0-2])-(?:29|30)"
            "|(?:0[13578]|1[02])-31)"
            "T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]{1,9})?Z")


def accepted_instant_pattern(*, blank_allowed: bool = True) -> str:
    """A UTC instant with Python blanks around, or (where allowed) only blanks ("not
    given")."""
    instant = f"(?:{_INSTANT})?" if blank_allowed else _INSTANT
    return f"^[{PYTHON_BLANKS}]*{instant}[{PYTHON_BLANKS}]*$"


def accepted_uuid_pattern() -> str:
    """A UUID as `conventions.uuids.parse_uuid` reads it: canonical 8-4-4-4-12, any case,
    Java blanks around."""
    return f"^{JAVA_BLANK}*{CANONICAL_UUID}{JAVA_BLANK}*$"


def any_case_pattern(words, *, blank: str = JAVA_BLANK) -> str:
    """One of `words` (ASCII) in any case with `blank`s around, as a trimmed and upper-cased
    enumeration value is read (the history query's `statuses` and `type` with Java blanks, a
    notify `protocol` with Python's)."""
    spelled = ("".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else c for c in word)
               for word in words)
    return f"^{blank}*(?:{'|'.join(spelled)}){blank}*$"


def _unanchored(pattern: str) -> str:
    return pattern.removeprefix("^").removesuffix("$")


def accepted_instance_id_core() -> str:
    """What `conventions.instance_ids.instance_id` accepts, unanchored:
    `<system>|<serviceDefinition>|<version>`, each part as its own field accepts it."""
    return "\\|".join((_unanchored(accepted_name_pattern("system", blank_allowed=False)),
                       _unanchored(accepted_name_pattern("serviceDefinition",
                                                         blank_allowed=False)),
                       f"{JAVA_BLANK}*{_version_core()}{JAVA_BLANK}*"))


def accepted_instance_id_pattern() -> str:
    return f"^{accepted_instance_id_core()}$"


# Request fields (wire names, SPEC §3-5) holding a system name, service definition, version,
# service instance id, instant or UUID (rule, job and subscription ids), or a list of them:
# (kind, whether a blank value is accepted as "not given").
REQUEST_NAMES: dict[str, tuple[str, bool]] = {
    "consumer": ("system", False),
    "consumerNames": ("system", False),
    "createdBy": ("system", True),
    "systemName": ("system", False),
    "providerNames": ("system", False),
    "preferredProviders": ("system", False),
    "targetSystemName": ("system", True),
    "requesterSystems": ("system", False),
    "targetSystems": ("system", False),
    "ownerSystems": ("system", False),
    "serviceDefinition": ("serviceDefinition", True),
    "serviceDefinitions": ("serviceDefinition", False),
    "serviceDefinitionName": ("serviceDefinition", False),
    "serviceDefinitionNames": ("serviceDefinition", False),
    "version": ("version", True),
    "versions": ("version", False),
    "serviceInstanceId": ("instanceId", False),
    "serviceInstanceIds": ("instanceId", False),
    "instanceIds": ("instanceId", False),
    "instanceId": ("instanceId", False),
    "ids": ("uuid", False),
    "subscriptionIds": ("uuid", False),
    "alivesAt": ("instant", True),
    # In a pull's requirement only null means "not given" (orchestration.pull.normalization).
    "ServiceRequirementRequest.alivesAt": ("instant", False),
    "expiresAt": ("instant", True),
    # Lock management (orchestration.locks): an owner is a system; a lock's expiry is required.
    "owner": ("system", False),
    "owners": ("system", False),
    "LockDraftRequest.expiresAt": ("instant", False),
    "expiresBefore": ("instant", True),
    "expiresAfter": ("instant", True),
    "LockQueryRequest.ids": (None, False),  # lock ids are numbers
}
_DESCRIPTIONS = {
    "system": "Normalized to PascalCase (`NORMALIZATION_MODE`); at most 63 letters and digits.",
    "serviceDefinition": "Normalized to camelCase (`NORMALIZATION_MODE`); at most 63 letters "
                         "and digits.",
    "version": "`X`, `X.Y` or `X.Y.Z` (completed with `.0`); blank: 1.0.0 where allowed.",
    "instanceId": "`<system>|<serviceDefinition>|<version>`, each part as in its own field.",
    "uuid": "Canonical 8-4-4-4-12, any case, surrounding blanks ignored.",
    "instant": "UTC, ISO 8601 with `Z` (`2025-11-08T12:00:00Z`, fractions allowed); blank: not "
               "given.",
}
# Marks the string schema of one value of a query parameter listing instance ids (repeated
# and/or comma-separated, blank pieces dropped: `api.request_data.query_list`).
INSTANCE_ID_LIST = "x-instance-id-list"


# Fields whose blank ("not given") is a blank by Python's strip: a subscription's target
# (subscriptions.requests); any other text goes to name normalization.
_ABSENT_BY_PYTHON_BLANKS = frozenset({"targetSystemName"})


def _request_pattern(kind: str, blank_allowed: bool, prop: str) -> str:
    if kind == "version":
        return accepted_version_pattern(blank_allowed=blank_allowed)
    if kind == "instanceId":
        return accepted_instance_id_pattern()
    if kind == "instant":
        return accepted_instant_pattern(blank_allowed=blank_allowed)
    if kind == "uuid":
        return accepted_uuid_pattern()
    absent_blank = f"[{PYTHON_BLANKS}]" if prop in _ABSENT_BY_PYTHON_BLANKS else JAVA_BLANK
    return accepted_name_pattern(kind, blank_allowed=blank_allowed, absent_blank=absent_blank)


def instance_id_list_pattern() -> str:
    """One value of an instance id list parameter: comma-separated pieces, blank ones (by
    Python's strip) dropped, at least one instance id. (That one id among all values would
    do is beyond OpenAPI: a blank value next to good ones is outside the schema although the
    service drops it.)"""
    blank = f"[{PYTHON_BLANKS}]*"
    an_id = accepted_instance_id_core()
    return f"^(?:{blank},)*{an_id}(?:,(?:{blank}|{an_id}))*$"


def _instance_id_lists(result: dict) -> None:
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            for parameter in operation.get("parameters", ()):
                items = parameter.get("schema", {}).get("items", {})
                if items.pop(INSTANCE_ID_LIST, False):
                    items["pattern"] = instance_id_list_pattern()


def postprocess_request_names(result: dict, generator, request, public) -> dict:
    """drf-spectacular hook: the request properties of `REQUEST_NAMES` (in the `...Request`
    components) and the query parameters marked INSTANCE_ID_LIST get the pattern of what the
    service accepts there."""
    for component, schema in result.get("components", {}).get("schemas", {}).items():
        if not component.endswith("Request"):
            continue
        for prop, field in schema.get("properties", {}).items():
            # A component's own entry (`<Component>.<property>`) before the property's.
            kind, blank_allowed = REQUEST_NAMES.get(f"{component}.{prop}",
                                                    REQUEST_NAMES.get(prop, (None, False)))
            if kind is None:
                continue
            # A required field has no "not given" (push subscribe's targetSystemName).
            blank_allowed = blank_allowed and prop not in schema.get("required", ())
            text = field["items"] if field.get("type") == "array" else field
            text["pattern"] = _request_pattern(kind, blank_allowed, prop)
            text["description"] = " ".join(filter(None, [text.get("description"),
                                                         _DESCRIPTIONS[kind]]))
    _instance_id_lists(result)
    return result
