"""The wire form of an orchestration result (SPEC §5), built as plain dicts and lists.

`orchestration.pull.serializers.OrchestrationResponseSerializer` describes this shape for the
OpenAPI schema; building it through DRF serializers (nested, many=True) costs a lot of CPU
on the pull and push paths, so the answer is built here instead. The output is exactly the
serializer's, key order included (tests/orchestration/test_response_data.py compares the
two, rendered byte for byte, on generated results). What the serializer's fields do, and so
what is mirrored here:

- text fields (CharField and the name fields of api.name_fields): `str(value)`;
- IntegerField: `int(value)`; JSONField: the value itself;
- DateTimeField: a string is passed on as it is (ConsumerAuthorization's `expiresAt`), an
  empty value gives None, a datetime is given in UTC (TIME_ZONE, USE_TZ; a naive one is read
  as UTC) in ISO 8601 with `Z`, fractional seconds only when non-zero;
- a None value gives None without its field being asked; a result entry then leaves out
  its None values, while a token or an interface keeps them (`"expiresAt": null`);
- a token object lacking `expiresAt` or `usageLimit` (`required=False`) has no such key.
"""
from typing import Any

from conventions.timestamps import format_utc
from orchestration.pull.types import OrchestrationResult, OrchestrationResultEntry

_NOT_GIVEN = object()


def orchestration_response_data(result: OrchestrationResult) -> dict:
    """The wire form of a pull/push result: exactly what
    `OrchestrationResponseSerializer(result).data` gives (as plain dicts), without DRF."""
    results = result.results
    warnings = result.warnings
    return {
        "results": None if results is None else [_entry(entry) for entry in results],
        "warnings": None if warnings is None else [
            None if warning is None else str(warning) for warning in warnings],
    }


def _instant(value: Any) -> str | None:
    """DRF's DateTimeField.to_representation with TIME_ZONE = "UTC" and USE_TZ."""
    if not value:
        return None
    if isinstance(value, str):
        return value
    if value.utcoffset() is None:  # naive: DRF makes it aware in the current zone, UTC
        return value.isoformat() + "Z"
    return format_utc(value)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _entry(entry: OrchestrationResultEntry) -> dict:
    """OrchestrationResultEntrySerializer: its fields in order, None values left out."""
    data: dict[str, Any] = {}
    value = entry.service_instance_id
    if value is not None:
        data["serviceInstanceId"] = str(value)
    data["cloudIdentitifer"] = "LOCAL"  # sic, SPEC §1
    value = entry.provider
    if value is not None:
        data["providerName"] = str(value)
    value = entry.service_definition
    if value is not None:
        data["serviceDefinitition"] = str(value)  # sic, SPEC §1
    value = entry.version
    if value is not None:
        data["version"] = str(value)
    value = _instant(entry.alive_until)
    if value is not None:
        data["aliveUntil"] = value
    value = _instant(entry.exclusive_until)
    if value is not None:
        data["exclusiveUntil"] = value
    value = entry.metadata
    if value is not None:
        data["metadata"] = value
    value = entry.interfaces
    if value is not None:
        data["interfaces"] = [_interface(interface) for interface in value]
    value = entry.authorization_tokens
    if value is not None:
        data["authorizationTokens"] = {
            str(policy): None if scopes is None else {
                str(scope): None if token is None else _token(token)
                for scope, token in scopes.items()}
            for policy, scopes in value.items()}
    return data


def _interface(interface: dict) -> dict:
    """InterfaceResultSerializer: every field required, None kept."""
    return {"templateName": _text(interface["templateName"]),
            "protocol": _text(interface["protocol"]),
            "policy": _text(interface["policy"]),
            "properties": interface["properties"]}


def _token(token: dict) -> dict:
    """TokenSerializer: None kept; `expiresAt` and `usageLimit` only when the key is there."""
    data = {"tokenType": _text(token["tokenType"]),
            "targetType": _text(token["targetType"]),
            "token": _text(token["token"])}
    expires_at = token.get("expiresAt", _NOT_GIVEN)
    if expires_at is not _NOT_GIVEN:
        data["expiresAt"] = _instant(expires_at)
    usage_limit = token.get("usageLimit", _NOT_GIVEN)
    if usage_limit is not _NOT_GIVEN:
        data["usageLimit"] = None if usage_limit is None else int(usage_limit)
    return data
