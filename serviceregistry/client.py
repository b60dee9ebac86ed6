"""Client of an Arrowhead ServiceRegistry (reference-dynamic §11; audit §2).

Every call carries this system's identity under the active AUTHENTICATION_POLICY, the way the
Java clients send it (audit §0.1): `declared` (and our own `token` policy, which the
ServiceRegistry does not know) as `Bearer SYSTEM//<SYSTEM_NAME>`, `outsourced` as
`Bearer IDENTITY-TOKEN//<token>` from our login at the Authentication system, `certificate` as
the TLS client certificate (TLS_CERT_FILE) alone. Every way of not getting the expected answer
raises ServiceRegistryUnavailable, a 503 EXTERNAL_SERVER_ERROR where it reaches a caller.

One function per ServiceRegistry operation.
"""
import http.client
import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from conventions.exceptions import ExternalServerError
from observability.metrics import outbound_call
from serviceregistry.peers import opener, unreachable_text

SYSTEM_DISCOVERY = "/serviceregistry/system-discovery"
SERVICE_DISCOVERY = "/serviceregistry/service-discovery"


class ServiceRegistryUnavailable(ExternalServerError):
    """The ServiceRegistry could not be reached, or did not answer as expected."""


class ServiceRegistryUnreachable(ServiceRegistryUnavailable):
    """No answer at all: refused, timed out, broken connection."""


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


@outbound_call("ServiceRegistry", "serviceDiscovery/lookup")
def _lookup(body: dict[str, Any], *, authenticated: bool = True,
            timeout: float | None) -> list[dict]:
    answer = _object(_call("POST", f"{SERVICE_DISCOVERY}/lookup?verbose=false", body, timeout,
                           authenticated=authenticated), "lookup")
    entries = answer.get("entries")
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ServiceRegistryUnavailable("ServiceRegistry lookup answered no entries list")
    return entries


# --- identity -------------------------------------------------------------------------------

def identity_header(rejected: str | None = None) -> str | None:
    """Our Authorization header; under `outsourced` a fresh token when `rejected` was refused."""
    policy = settings.AUTHENTICATION_POLICY
    if policy == "certificate":
        return None
    if policy == "outsourced":
        from identity.outsourced import AuthenticationUnavailable, own_identity_token

        try:
            return f"Bearer IDENTITY-TOKEN//{own_identity_token(rejected)}"
        except AuthenticationUnavailable as error:
            raise ServiceRegistryUnavailable(
                f"No identity token for the ServiceRegistry: {error}") from error
    return f"Bearer SYSTEM//{settings.SYSTEM_NAME}"


# --- HTTP -----------------------------------------------------------------------------------

def _call(method: str, path: str, body: Any, timeout: float | None, *,
          authenticated: bool = True) -> Answer:
    """One call; under `outsourced` once more with a new token if ours was refused (our
    session is replaced whenever another process of this system logs in)."""
    authorization = identity_header() if authenticated else None
    answer = _exchange(method, path, body, authorization, timeout)
    if answer.status == 401 and authenticated and settings.AUTHENTICATION_POLICY == "outsourced":
        token = authorization.rpartition("//")[2] if authorization else None
        answer = _exchange(method, path, body, identity_header(token), timeout)
    if not 200 <= answer.status < 300:
        raise ServiceRegistryUnavailable(
            f"ServiceRegistry {method} {path} answered HTTP {answer.status}{_reason(answer)}")
    return answer


def _exchange(method: str, path: str, body: Any, authorization: str | None,
              timeout: float | None) -> Answer:
    # The Java clients send these on every request, with or without a body (audit §0.1).
    headers = {"Accept": "application/json", "Content-Type": "application/json"}
    if authorization:
        headers["Authorization"] = authorization
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(settings.SERVICE_REGISTRY_URL + path, data=data,
                                     method=method, headers=headers)
    seconds = settings.SERVICE_REGISTRY_TIMEOUT_SECONDS if timeout is None else timeout
    try:
        with opener(settings.SERVICE_REGISTRY_URL.startswith("https:")).open(request, timeout=seconds) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, raw = error.code, error.read()
        error.close()
    except urllib.error.URLError as error:
        raise _unreachable(method, path, error.reason, seconds) from error
    except (OSError, http.client.HTTPException) as error:
        raise _unreachable(method, path, error, seconds) from error
    try:
        return Answer(status, json.loads(raw) if raw.strip() else None)
    except ValueError:
        return Answer(status, None)


def _object(answer: Answer, operation: str) -> dict[str, Any]:
    if not isinstance(answer.body, dict):
        raise ServiceRegistryUnavailable(f"ServiceRegistry {operation} answered no JSON object")
    return answer.body


def _reason(answer: Answer) -> str:
    """The ServiceRegistry's own errorMessage (its error envelope), when it gave one."""
    message = answer.body.get("errorMessage") if isinstance(answer.body, dict) else None
    return f": {message}" if isinstance(message, str) and message else ""


def _unreachable(method: str, path: str, reason: object,
                 timeout: float) -> ServiceRegistryUnreachable:
    return ServiceRegistryUnreachable(
        f"ServiceRegistry {method} {path} failed: {unreachable_text(reason, timeout)}")
