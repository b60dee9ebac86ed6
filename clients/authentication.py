"""The calls the Arrowhead Authentication system offers us, for
`AUTHENTICATION_POLICY=outsourced` (SPEC §2, reference-dynamic §13): `identity-login` (our
session) and `identity-verify` (a caller's identity token, asked with ours). Where it is:
docs/identity.md "Outsourced" (looked up without our identity: we have none before login,
reference-dynamic §13.2). Every failure is AuthenticationUnavailable; what the answers mean
for a caller, and our session, are identity's (identity/outsourced.py).
"""
import datetime as dt
import json
import logging
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from clients import serviceregistry
from clients.cache import Locations, interface_origin
from clients.errors import AuthenticationUnavailable, ServiceRegistryUnavailable, Unreachable
from clients.exchange import exchange
from observability.metrics import outbound_call

logger = logging.getLogger("serviceorchestration.auth")

LOGIN = "identity-login"
VERIFY = "identity-verify"


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any  # parsed JSON of a 2xx answer; None otherwise


@dataclass(frozen=True)
class Login:
    token: str
    expires_at: dt.datetime


# --- where the Authentication system is -----------------------------------------------------

# Today's layout of the reference (§13.1): basePath `/authentication/identity`, operations
# relative to it; used when AUTHENTICATION_SERVICE_URL is set or the SR names no operations.
_BASE_PATH = "/authentication/identity"
_OPERATION_PATHS = {LOGIN: "/login", VERIFY: "/verify"}


@dataclass(frozen=True)
class _Location:
    origin: str               # scheme://host:port
    paths: dict[str, str]     # operation -> absolute path


_locations: Locations[_Location] = Locations(lambda: None)


def forget_location() -> None:
    """Look the Authentication system up again on the next call."""
    _locations.forget()


def _location() -> _Location:
    if settings.AUTHENTICATION_SERVICE_URL:
        return _Location(settings.AUTHENTICATION_SERVICE_URL,
                         {op: _BASE_PATH + path for op, path in _OPERATION_PATHS.items()})
    return _locations.get("identity", _discover)


def _discover() -> _Location:
    if not settings.SERVICE_REGISTRY_URL:
        raise AuthenticationUnavailable("neither AUTHENTICATION_SERVICE_URL nor "
                                        "SERVICE_REGISTRY_URL is set")
    try:
        entries = serviceregistry.service_lookup_by_definition(["identity"], authenticated=False)
    except ServiceRegistryUnavailable as error:
        raise AuthenticationUnavailable(f"identity lookup failed: {error.message}") from error
    for entry in entries:
        interfaces = entry.get("interfaces")
        for interface in interfaces if isinstance(interfaces, list) else []:
            location = _http_location(interface)
            if location is not None:
                logger.info("Found the Authentication system at %s", location.origin)
                return location
    raise AuthenticationUnavailable("the ServiceRegistry knows no identity service with an "
                                    "HTTP interface")


def _http_location(interface: object) -> _Location | None:
    """The origin and basePath + operation paths (reference-dynamic §11.2); None for an
    interface we cannot call."""
    origin = interface_origin(interface, ("generic_http", "generic_https"))
    if origin is None:
        return None
    properties = interface["properties"]  # type: ignore[index]
    base = properties.get("basePath")
    base = base.rstrip("/") if isinstance(base, str) else _BASE_PATH
    operations = properties.get("operations")
    operations = operations if isinstance(operations, dict) else {}
    paths = {}
    for operation, default in _OPERATION_PATHS.items():
        named = operations.get(operation)
        path = named.get("path") if isinstance(named, dict) else None
        paths[operation] = base + (path.rstrip("/") if isinstance(path, str) and path
                                   else default)
    return _Location(origin, paths)


# --- the calls ------------------------------------------------------------------------------

@outbound_call("Authentication", "identity/login")
def identity_login() -> Login:
    """Our session, as SYSTEM_NAME with AUTHENTICATION_PASSWORD (each login replaces the one
    before)."""
    body = {"systemName": settings.SYSTEM_NAME,
            "credentials": {"password": settings.AUTHENTICATION_PASSWORD}}
    answer = _exchange(LOGIN, "POST", _url(LOGIN), body=body)
    if answer.status == 401:
        raise AuthenticationUnavailable(
            f"{LOGIN} refused our credentials (system {settings.SYSTEM_NAME})")
    body = answer_object(LOGIN, answer)
    token = body.get("token")
    if not isinstance(token, str) or not token:
        raise AuthenticationUnavailable(f"{LOGIN} answered no token")
    logger.info("Logged in to the Authentication system as %s", settings.SYSTEM_NAME)
    return Login(token, timestamp(LOGIN, body.get("expirationTime")))


@outbound_call("Authentication", "identity/verify")
def identity_verify(token: str, ours: Callable[[str | None], str]) -> Answer:
    """identity-verify of a caller's token with ours (`ours(None)`), once more with a new one
    (`ours(refused)`) if ours was refused (the Authentication system restarted or someone
    closed our session)."""
    current = ours(None)
    answer = _verify(token, current)
    if answer.status == 401:
        answer = _verify(token, ours(current))
    if answer.status == 401:
        raise AuthenticationUnavailable(f"{VERIFY} refused our identity token")
    return answer


def _verify(token: str, ours: str) -> Answer:
    return _exchange(VERIFY, "GET", _url(VERIFY, f"/{urllib.parse.quote(token, safe='')}"),
                     authorization=f"Bearer IDENTITY-TOKEN//{ours}")


def _url(operation: str, suffix: str = "") -> str:
    location = _location()
    return location.origin + location.paths[operation] + suffix


def _exchange(operation: str, method: str, url: str, *, body: Any = None,
              authorization: str | None = None) -> Answer:
    """Every way of not getting a usable answer becomes AuthenticationUnavailable, except error
    statuses below 500, which the caller judges."""
    timeout = settings.AUTHENTICATION_TIMEOUT_SECONDS
    try:
        reply = exchange(method, url, body=body, authorization=authorization, timeout=timeout)
    except Unreachable as error:
        _locations.forget()
        # In the OS's words ('Connection refused'), without errno dressing or addresses.
        raise AuthenticationUnavailable(f"{operation} {error.text}" if error.timed_out
                                        else f"{operation} failed: {error.text}") from error
    if reply.status >= 500:
        raise AuthenticationUnavailable(f"{operation} answered HTTP {reply.status}")
    if not 200 <= reply.status < 300:
        return Answer(reply.status, None)
    try:
        return Answer(reply.status, json.loads(reply.raw))
    except ValueError as error:
        raise AuthenticationUnavailable(f"{operation} answered malformed JSON") from error


def answer_object(operation: str, answer: Answer) -> dict[str, Any]:
    """The JSON object of a 200 answer; anything else means the peer is not usable."""
    if answer.status != 200:
        raise AuthenticationUnavailable(f"{operation} answered HTTP {answer.status}")
    if not isinstance(answer.body, dict):
        raise AuthenticationUnavailable(f"{operation} answered an unexpected body")
    return answer.body


def timestamp(operation: str, value: object) -> dt.datetime:
    """An ISO-8601 instant of an answer; the reference writes UTC with a `Z`."""
    try:
        moment = dt.datetime.fromisoformat(value)  # type: ignore[arg-type]
    except (TypeError, ValueError) as error:
        raise AuthenticationUnavailable(
            f"{operation} answered an invalid expirationTime") from error
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)
