"""Calling an operation of another Arrowhead system (ConsumerAuthorization, Blacklist), the way
the Java `ArrowheadHttpService.consumeService` does (issue 13; docs/local-cloud.md "Other
systems").

A `PeerService` names a service definition, the system that provides it and where its
operations are by default. Where the service is:
- its explicit URL setting (e.g. CONSUMER_AUTHORIZATION_URL), when set: that origin with the
  default base path and operation paths of the reference;
- otherwise a ServiceRegistry lookup of the service definition: the first instance of that
  system with a generic_http(s) interface (generic_https first when we serve TLS), its
  basePath and the operation's path and method as registered. A found location is kept per
  process for SERVICE_REGISTRY_CACHE_SECONDS, and forgotten as soon as a call to it fails to
  connect (the system moved).

A call carries our identity like every call to the ServiceRegistry (serviceregistry.client).
It answers the parsed JSON of a 2xx answer, or raises:
- PeerUnavailable (503) when the system cannot be found, reached or understood, or answers 5xx;
- PeerRefused, an error with the peer's own status, exceptionType and errorMessage, when it
  answers 4xx (so 401 and 403 can be passed through, as the reference does).
"""
import http.client
import json
import logging
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django.conf import settings

from conventions.exceptions import ArrowheadError, ExternalServerError
from observability.metrics import outbound_call

logger = logging.getLogger("serviceorchestration.peers")

# Proxy variables are ignored: the peers are in the local cloud, and a proxy must never see
# identity tokens.
_PROXYLESS = urllib.request.ProxyHandler({})
_SCHEMES = {"generic_http": "http", "generic_https": "https"}


@dataclass(frozen=True)
class PeerOperation:
    method: str
    path: str  # below the base path; `{name}` stands for a path parameter


@dataclass(frozen=True)
class PeerService:
    system: str                    # the provider's system name, e.g. "ConsumerAuthorization"
    definition: str                # the service definition, e.g. "authorization"
    url_setting: str               # the setting naming the system's origin, e.g. "…_URL"
    base_path: str                 # the reference's base path, used with the explicit URL
    operations: dict[str, PeerOperation]  # the reference's operations, ditto

    def label(self, operation: str) -> str:
        return f"{self.system} {self.definition}/{operation}"


class PeerUnavailable(ExternalServerError):
    """The peer could not be found, reached or understood: nobody's fault but the cloud's."""


class PeerRefused(ArrowheadError):
    """The peer answered 4xx: its status, exceptionType and errorMessage."""

    def __init__(self, status: int, exception_type: str, message: str) -> None:
        super().__init__(message)
        self.status_code = status
        self.exception_type = exception_type


@dataclass(frozen=True)
class _Location:
    origin: str                    # scheme://host:port
    base_path: str
    operations: dict[str, PeerOperation]
    found_at: float                # time.monotonic() of the lookup; 0 for the explicit URL


# --- where the peer is ----------------------------------------------------------------------

class _Locations:
    """Discovered locations by service definition, per process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._found: dict[str, _Location] = {}

    def get(self, service: PeerService) -> _Location:
        explicit = getattr(settings, service.url_setting, "")
        if explicit:
            return _Location(explicit.rstrip("/"), service.base_path, service.operations, 0)
        with self._lock:
            found = self._found.get(service.definition)
            if found is not None and time.monotonic() - found.found_at \
                    < settings.SERVICE_REGISTRY_CACHE_SECONDS:
                return found
        found = _discover(service)
        with self._lock:
            self._found[service.definition] = found
        return found

    def forget(self, service: PeerService | None = None) -> None:
        with self._lock:
            if service is None:
                self._found.clear()
            else:
                self._found.pop(service.definition, None)


_locations = _Locations()


def forget_locations() -> None:
    """Look every peer up again on its next call (tests use it to start clean)."""
    _locations.forget()


def _discover(service: PeerService) -> _Location:
    from serviceregistry.client import (
        ServiceRegistryUnavailable,
        service_lookup_by_definition,
    )

    if not settings.SERVICE_REGISTRY_URL:
        raise PeerUnavailable(f"{service.system} is not configured: neither "
                              f"{service.url_setting} nor SERVICE_REGISTRY_URL is set")
    try:
        entries = service_lookup_by_definition([service.definition])
    except ServiceRegistryUnavailable as error:
        raise PeerUnavailable(f"{service.system} could not be looked up: "
                              f"{error.message}") from error
    preferred = ("generic_https", "generic_http") if settings.TLS_CERT_FILE \
        else ("generic_http", "generic_https")
    for template in preferred:
        for entry in entries:
            provider = entry.get("provider")
            if not isinstance(provider, dict) or provider.get("name") != service.system:
                continue
            interfaces = entry.get("interfaces")
            for interface in interfaces if isinstance(interfaces, list) else ():
                location = http_location(interface, template)
                if location is not None:
                    logger.info("Found %s at %s", service.label("*"), location.origin)
                    return location
    raise PeerUnavailable(f"The ServiceRegistry knows no {service.definition} service of "
                          f"{service.system} with an HTTP interface")


def http_location(interface: object, template: str) -> _Location | None:
    """`<protocol>://<accessAddresses[0]>:<accessPort>`, basePath and operations of a
    generic_http(s) interface (reference-dynamic §11.2); None for one we cannot call."""
    if not isinstance(interface, dict) or interface.get("templateName") != template \
            or not isinstance(interface.get("properties"), dict):
        return None
    properties = interface["properties"]
    addresses, port = properties.get("accessAddresses"), properties.get("accessPort")
    base = properties.get("basePath")
    if not isinstance(addresses, list) or not addresses or not isinstance(addresses[0], str) \
            or not addresses[0].strip() or type(port) is not int or not 0 < port < 65536 \
            or not isinstance(base, str):
        return None
    host = addresses[0].strip()
    host = f"[{host}]" if ":" in host else host
    operations = {}
    named = properties.get("operations")
    for name, operation in (named.items() if isinstance(named, dict) else ()):
        if isinstance(operation, dict) and isinstance(operation.get("path"), str) \
                and isinstance(operation.get("method"), str):
            operations[name] = PeerOperation(operation["method"].upper(), operation["path"])
    return _Location(f"{_SCHEMES[template]}://{host}:{port}", base.rstrip("/"), operations,
                     time.monotonic())


# --- calling --------------------------------------------------------------------------------

def call(service: PeerService, operation: str, *, body: Any = None,
         query: list[tuple[str, str]] | None = None, path_params: tuple[str, ...] = (),
         timeout: float | None = None) -> Any:
    """One operation of the peer; the parsed JSON of its 2xx answer (None without a body)."""
    with outbound_call(service.system, f"{service.definition}/{operation}"):
        location = _locations.get(service)
        target = location.operations.get(operation)
        if target is None:
            raise PeerUnavailable(f"{service.system} does not offer {service.definition}/"
                                  f"{operation}")
        url = location.origin + location.base_path + _fill(target.path, path_params, service,
                                                           operation)
        if query:
            url += "?" + urllib.parse.urlencode(query)
        status, answer = _exchange_as_us(service, operation, target.method, url, body, timeout)
        if 200 <= status < 300:
            return answer
        if status >= 500 or status < 400:
            raise PeerUnavailable(f"{service.label(operation)} answered HTTP {status}"
                                  f"{_reason(answer)}")
        exception_type = answer.get("exceptionType") if isinstance(answer, dict) else None
        message = answer.get("errorMessage") if isinstance(answer, dict) else None
        raise PeerRefused(status, exception_type if isinstance(exception_type, str) and
                          exception_type else "ARROWHEAD",
                          message if isinstance(message, str) and message else
                          f"{service.label(operation)} answered HTTP {status}")


def _fill(path: str, params: tuple[str, ...], service: PeerService, operation: str) -> str:
    """The operation path with its `{…}` segments replaced, in order, by `params`."""
    segments, values = [], list(params)
    for segment in path.split("/"):
        if segment.startswith("{") and segment.endswith("}"):
            if not values:
                raise PeerUnavailable(f"{service.label(operation)} has more path parameters "
                                      "than expected")
            segment = urllib.parse.quote(values.pop(0), safe="")
        segments.append(segment)
    return "/".join(segments)


def _exchange_as_us(service: PeerService, operation: str, method: str, url: str, body: Any,
                    timeout: float | None) -> tuple[int, Any]:
    """With our identity; under `outsourced` once more with a new token if ours was
    refused (our session is replaced whenever another process of this system logs in)."""
    from serviceregistry.client import ServiceRegistryUnavailable, identity_header

    try:
        authorization = identity_header()
        status, answer = _exchange(service, operation, method, url, body, authorization,
                                   timeout)
        if status == 401 and settings.AUTHENTICATION_POLICY == "outsourced" and authorization:
            authorization = identity_header(authorization.rpartition("//")[2])
            status, answer = _exchange(service, operation, method, url, body, authorization,
                                       timeout)
    except ServiceRegistryUnavailable as error:  # no identity token of ours
        raise PeerUnavailable(f"{service.label(operation)}: {error.message}") from error
    return status, answer


def _exchange(service: PeerService, operation: str, method: str, url: str, body: Any,
              authorization: str | None, timeout: float | None) -> tuple[int, Any]:
    # The Java clients send these on every request, with or without a body (audit §0.1).
    headers = {"Accept": "application/json", "Content-Type": "application/json"}
    if authorization:
        headers["Authorization"] = authorization
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    seconds = settings.PEER_TIMEOUT_SECONDS if timeout is None else timeout
    try:
        with opener(url.startswith("https:")).open(request, timeout=seconds) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, raw = error.code, error.read()
        error.close()
    except urllib.error.URLError as error:
        _locations.forget(service)
        raise _unreachable(service.label(operation), error.reason, seconds) from error
    except (OSError, http.client.HTTPException) as error:
        _locations.forget(service)
        raise _unreachable(service.label(operation), error, seconds) from error
    if not raw.strip():
        return status, None
    try:
        return status, json.loads(raw)
    except ValueError as error:
        if 200 <= status < 300:
            raise PeerUnavailable(f"{service.label(operation)} answered malformed "
                                  "JSON") from error
        return status, None


def _reason(answer: Any) -> str:
    message = answer.get("errorMessage") if isinstance(answer, dict) else None
    return f": {message}" if isinstance(message, str) and message else ""


def _unreachable(label: str, reason: object, timeout: float) -> PeerUnavailable:
    return PeerUnavailable(f"{label} failed: {unreachable_text(reason, timeout)}")


def unreachable_text(reason: object, timeout: float) -> str:
    """Why a connection gave no answer, in the OS's words ('Connection refused'), without
    errno dressing."""
    if isinstance(reason, TimeoutError):
        return f"timed out after {timeout:g} s"
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror
    return str(reason) or type(reason).__name__


@lru_cache(maxsize=2)
def opener(https: bool) -> urllib.request.OpenerDirector:
    """Plain HTTP, or HTTPS trusting TLS_CA_FILE (the system CAs without it) and presenting our
    certificate (TLS_CERT_FILE, TLS_KEY_FILE) when we have one."""
    if not https:
        return urllib.request.build_opener(_PROXYLESS)
    context = ssl.create_default_context(cafile=settings.TLS_CA_FILE or None)
    if settings.TLS_CERT_FILE:
        context.load_cert_chain(settings.TLS_CERT_FILE, settings.TLS_KEY_FILE)
    return urllib.request.build_opener(_PROXYLESS, urllib.request.HTTPSHandler(context=context))
