"""The calls the ServiceRegistry offers us (reference-dynamic §11; audit §2), one function per
operation. Every call carries our identity (clients.identity), but for the lookup the
ServiceRegistry answers unauthenticated. Every way of not getting the expected answer raises
ServiceRegistryUnavailable, a 503 EXTERNAL_SERVER_ERROR where it reaches a caller
(ServiceRegistryUnreachable when there was no answer at all).
"""
import urllib.parse
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from clients.errors import (
    ServiceRegistryUnavailable,
    ServiceRegistryUnreachable,
    Unreachable,
    reason,
)
from clients.exchange import exchange
from clients.identity import as_us
from observability.metrics import outbound_call

SYSTEM_DISCOVERY = "/serviceregistry/system-discovery"
SERVICE_DISCOVERY = "/serviceregistry/service-discovery"


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any  # parsed JSON, None when there was none


@outbound_call("ServiceRegistry", "systemDiscovery/register")
def system_register(body: dict[str, Any], *, timeout: float | None = None) -> dict[str, Any]:
    """`systemDiscovery`/`register` (201 created, 200 identical one existed)."""
    return _object(_call("POST", f"{SYSTEM_DISCOVERY}/register", body, timeout), "register")


@outbound_call("ServiceRegistry", "systemDiscovery/revoke")
def system_revoke(*, timeout: float | None = None) -> bool:
    """`systemDiscovery`/`revoke` of this system; whether there was one (200) or not (204)."""
    return _call("DELETE", f"{SYSTEM_DISCOVERY}/revoke", None, timeout).status == 200


@outbound_call("ServiceRegistry", "serviceDiscovery/register")
def service_register(body: dict[str, Any], *, timeout: float | None = None) -> str:
    """`serviceDiscovery`/`register` of one instance; its instance id."""
    answer = _object(_call("POST", f"{SERVICE_DISCOVERY}/register", body, timeout), "register")
    instance_id = answer.get("instanceId")
    if not isinstance(instance_id, str) or not instance_id:
        raise ServiceRegistryUnavailable("ServiceRegistry register answered no instanceId")
    return instance_id


@outbound_call("ServiceRegistry", "serviceDiscovery/revoke")
def service_revoke(instance_id: str, *, timeout: float | None = None) -> bool:
    """`serviceDiscovery`/`revoke` of one of our instances; whether it was there."""
    path = f"{SERVICE_DISCOVERY}/revoke/{urllib.parse.quote(instance_id, safe='')}"
    return _call("DELETE", path, None, timeout).status == 200


def service_lookup(instance_ids: list[str], *, timeout: float | None = None) -> list[dict]:
    """`serviceDiscovery`/`lookup` by instance ids, terse (`verbose=false`): the
    ServiceInstanceResponseDTO entries the ServiceRegistry knows (reference-dynamic §11.6)."""
    return _lookup({"instanceIds": list(instance_ids)}, timeout=timeout)


def service_lookup_by_definition(names: list[str], *, authenticated: bool = True,
                                 timeout: float | None = None) -> list[dict]:
    """`serviceDiscovery`/`lookup` by service definition names, terse. `authenticated=False`
    sends no Authorization header: the ServiceRegistry lets the lookup of `["identity"]`
    through unauthenticated under `outsourced`, and we need the Authentication system it finds
    before we have a token (reference-dynamic §13.2)."""
    return _lookup({"serviceDefinitionNames": list(names)}, authenticated=authenticated,
                   timeout=timeout)


@outbound_call("ServiceRegistry", "systemDiscovery/lookup")
def system_lookup(names: list[str], *, timeout: float | None = None) -> list[dict]:
    """`systemDiscovery`/`lookup` by system names, terse: the SystemResponseDTO entries of the
    systems the ServiceRegistry knows (their `name` and `metadata` are what we read)."""
    answer = _object(_call("POST", f"{SYSTEM_DISCOVERY}/lookup?verbose=false",
                           {"systemNames": list(names)}, timeout), "lookup")
    entries = answer.get("entries")
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ServiceRegistryUnavailable("ServiceRegistry system lookup answered no entries list")
    return entries


@outbound_call("ServiceRegistry", "serviceDiscovery/lookup")
def _lookup(body: dict[str, Any], *, authenticated: bool = True,
            timeout: float | None) -> list[dict]:
    answer = _object(_call("POST", f"{SERVICE_DISCOVERY}/lookup?verbose=false", body, timeout,
                           authenticated=authenticated), "lookup")
    entries = answer.get("entries")
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ServiceRegistryUnavailable("ServiceRegistry lookup answered no entries list")
    return entries


def _call(method: str, path: str, body: Any, timeout: float | None, *,
          authenticated: bool = True) -> Answer:
    """One call, as us unless `authenticated` is off; a 2xx answer or ServiceRegistryUnavailable."""
    seconds = settings.SERVICE_REGISTRY_TIMEOUT_SECONDS if timeout is None else timeout

    def send(authorization: str | None) -> Answer:
        try:
            reply = exchange(method, settings.SERVICE_REGISTRY_URL + path, body=body,
                             authorization=authorization, timeout=seconds)
        except Unreachable as error:
            raise ServiceRegistryUnreachable(
                f"ServiceRegistry {method} {path} failed: {error.text}") from error
        try:
            return Answer(reply.status, reply.json())
        except ValueError:
            return Answer(reply.status, None)

    answer = as_us(send) if authenticated else send(None)
    if not 200 <= answer.status < 300:
        raise ServiceRegistryUnavailable(
            f"ServiceRegistry {method} {path} answered HTTP {answer.status}{reason(answer.body)}")
    return answer


def _object(answer: Answer, operation: str) -> dict[str, Any]:
    if not isinstance(answer.body, dict):
        raise ServiceRegistryUnavailable(f"ServiceRegistry {operation} answered no JSON object")
    return answer.body
