"""Validation of service interfaces and metadata (SPEC §4, reference-dynamic §11.2–11.3;
docs/catalog.md): the generic templates have fixed protocols and checked properties, others
any protocol and free properties. Values come back normalized, as they are stored."""
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from conventions import names
from conventions.exceptions import InvalidParameter
from conventions.exclusivity import (
    ALLOW_EXCLUSIVITY,
    MAX_EXCLUSIVITY_SECONDS,
    exclusivity_seconds,
)
from store.addresses import parse_interface_address
from store.models import InterfacePolicy

HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS",
                          "TRACE", "PATCH"})
POLICIES = frozenset(InterfacePolicy.values)
MAX_PROTOCOL_LENGTH = 63


@dataclass(frozen=True)
class InterfaceDraft:
    """An interface as submitted: raw values."""

    template_name: Any
    protocol: Any
    policy: Any
    properties: Any


@dataclass(frozen=True)
class ValidInterface:
    template_name: str
    protocol: str
    policy: str
    properties: dict


def _fail(prop: str, message: str) -> InvalidParameter:
    return InvalidParameter(f"{prop}: {message}")


def _addresses(prop: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not value:
        raise _fail(prop, "Property value should be a non-empty list of strings")
    if not all(isinstance(item, str) for item in value):
        raise _fail(prop, "Property value should be a list of strings")
    if any(not item.strip() for item in value):
        raise _fail(prop, "Property value should be a list of non-blank strings")
    return [parse_interface_address(item) for item in value]


def _port(prop: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(prop, "Property value should be an integer")
    if not 1 <= value <= 65535:
        raise _fail(prop, "Invalid property value")
    return value


def _text(prop: str, value: Any) -> str:
    if not isinstance(value, str):
        raise _fail(prop, "Property value should be a string")
    return value


def _http_operations(prop: str, value: Any) -> dict:
    if not isinstance(value, dict):
        raise _fail(prop, "Property value should be a map of operations")
    if not value:
        raise _fail(prop, "Property value should be a non-empty map")
    operations = {}
    for key, spec in value.items():
        name = names.operation(key)
        if not isinstance(spec, dict):
            raise _fail(prop, "Value should be an object with path and method")
        path, method = spec.get("path"), spec.get("method")
        if not isinstance(path, str) or not path.strip():
            raise _fail(prop, "Path should be non-empty")
        if not isinstance(method, str) or method.strip().upper() not in HTTP_METHODS:
            raise _fail(prop, "Method should be a standard HTTP method")
        operations[name] = {**spec, "path": path.strip(), "method": method.strip().upper()}
    return operations


def _operation_list(prop: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not value:
        raise _fail(prop, "Property value should be a non-empty set/list")
    if not all(isinstance(item, str) for item in value):
        raise _fail(prop, "Property value should be a set/list of string values")
    return list(dict.fromkeys(names.operation(item) for item in value))


@dataclass(frozen=True)
class Template:
    protocol: str
    validators: dict[str, Callable[[str, Any], Any]]
    mandatory: tuple[str, ...]


_HTTP = {"accessAddresses": _addresses, "accessPort": _port, "basePath": _text,
         "operations": _http_operations}
_MQTT = {"accessAddresses": _addresses, "accessPort": _port, "baseTopic": _text,
         "operations": _operation_list}
TEMPLATES = {
    "generic_http": Template("http", _HTTP, ("accessAddresses", "accessPort", "basePath")),
    "generic_https": Template("https", _HTTP, ("accessAddresses", "accessPort", "basePath")),
    "generic_mqtt": Template("tcp", _MQTT, tuple(_MQTT)),
    "generic_mqtts": Template("ssl", _MQTT, tuple(_MQTT)),
}


def ensure_no_dotted_keys(value: Any, what: str = "metadata") -> None:
    """No key, at any depth and inside lists, may contain `.` (it is the path separator of
    the requirement language)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if "." in key:
                raise InvalidParameter(f"Invalid {what} key: {key}, it should not contain . character")
            ensure_no_dotted_keys(item, what)
    elif isinstance(value, list):
        for item in value:
            ensure_no_dotted_keys(item, what)


def metadata_validate(metadata: Any) -> dict:
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise InvalidParameter("Metadata should be a JSON object")
    ensure_no_dotted_keys(metadata)
    if ALLOW_EXCLUSIVITY in metadata:
        seconds = exclusivity_seconds(metadata)
        if seconds is None or not 0 <= seconds <= MAX_EXCLUSIVITY_SECONDS:
            raise InvalidParameter("allowExclusivity metadata must be a non-negative integer or "
                                   "the string representation of one, at most "
                                   f"{MAX_EXCLUSIVITY_SECONDS}")
    return metadata


def _template_and_protocol(draft: InterfaceDraft) -> tuple[str, str, Template | None]:
    if not isinstance(draft.template_name, str) or not draft.template_name.strip():
        raise InvalidParameter("Interface template name is missing")
    template_name = names.interface_template(draft.template_name)
    template = TEMPLATES.get(template_name)
    protocol = draft.protocol.strip().lower() if isinstance(draft.protocol, str) else ""
    if template is None and not protocol:
        raise InvalidParameter("Interface protocol is missing")
    if len(protocol) > MAX_PROTOCOL_LENGTH:
        raise InvalidParameter(f"Interface protocol is too long (at most {MAX_PROTOCOL_LENGTH} "
                               "characters)")
    if template is not None and protocol and protocol != template.protocol:
        raise InvalidParameter(f"{protocol} protocol is invalid for {template_name}")
    return template_name, protocol or template.protocol, template


def _policy(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidParameter("Interface policy is missing")
    policy = value.strip().upper()
    if policy not in POLICIES:
        raise InvalidParameter(f"Invalid interface policy: {value.strip()}")
    return policy


def _properties(template_name: str, template: Template | None, value: Any) -> dict:
    if value is None:
        raise InvalidParameter("Interface properties are missing")
    if not isinstance(value, dict):
        raise InvalidParameter("Interface properties should be a JSON object")
    ensure_no_dotted_keys(value, "interface property")
    if template is None:
        return value
    for prop in template.mandatory:
        if value.get(prop) is None:
            raise InvalidParameter(f"{prop} interface property is missing for {template_name}")
    properties = dict(value)
    for prop, validator in template.validators.items():
        if properties.get(prop) is not None:
            properties[prop] = validator(prop, properties[prop])
    return properties


def interface_validate(draft: InterfaceDraft) -> ValidInterface:
    template_name, protocol, template = _template_and_protocol(draft)
    policy = _policy(draft.policy)
    return ValidInterface(template_name, protocol, policy,
                          _properties(template_name, template, draft.properties))


def interfaces_validate(drafts: list[InterfaceDraft | None] | None) -> list[ValidInterface]:
    if not drafts:
        raise InvalidParameter("Service interface list is empty")
    if any(draft is None for draft in drafts):
        raise InvalidParameter("Service interface list contains null element")
    return [interface_validate(draft) for draft in drafts]
