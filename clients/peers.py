"""Calling an operation of another Arrowhead system (ConsumerAuthorization, Blacklist), the way
the Java `ArrowheadHttpService.consumeService` does (issue 13; docs/local-cloud.md "Other
systems", which says where a peer is found, for how long, and what each outcome raises).

A `PeerService` names a service definition, the system that provides it, its explicit URL
setting and where its operations are by default. A call carries our identity
(clients.identity) and answers the parsed JSON of a 2xx answer, or raises PeerUnavailable (503)
or PeerRefused (its 4xx, passed on; clients.errors).
"""
import logging
import urllib.parse
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from clients import serviceregistry
from clients.cache import Locations, interface_origin
from clients.errors import (
    PeerUnavailable,
    ServiceRegistryUnavailable,
    Unreachable,
    reason,
    refused,
)
from clients.exchange import Reply, exchange
from clients.identity import as_us
from observability.metrics import outbound_call

logger = logging.getLogger("serviceorchestration.peers")


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


@dataclass(frozen=True)
class _Location:
    origin: str                    # scheme://host:port
    base_path: str
    operations: dict[str, PeerOperation]


# --- where the peer is ----------------------------------------------------------------------

_locations: Locations[_Location] = Locations(lambda: settings.SERVICE_REGISTRY_CACHE_SECONDS)


def forget_locations() -> None:
    """Look every peer up again on its next call (tests use it to start clean)."""
    _locations.forget()


def _location(service: PeerService) -> _Location:
    explicit = getattr(settings, service.url_setting, "")
    if explicit:
        return _Location(explicit.rstrip("/"), service.base_path, service.operations)
    return _locations.get(service.definition, lambda: _discover(service))


def _discover(service: PeerService) -> _Location:
    if not settings.SERVICE_REGISTRY_URL:
        raise PeerUnavailable(f"{service.system} is not configured: neither "
                              f"{service.url_setting} nor SERVICE_REGISTRY_URL is set")
    try:
        entries = serviceregistry.service_lookup_by_definition([service.definition])
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
    """The origin, basePath and operations of a generic_http(s) interface (reference-dynamic
    §11.2); None for one we cannot call."""
    origin = interface_origin(interface, (template,))
    base = interface["properties"].get("basePath") if origin else None  # type: ignore[index]
    if origin is None or not isinstance(base, str):
        return None
    operations = {}
    named = interface["properties"].get("operations")  # type: ignore[index]
    for name, operation in (named.items() if isinstance(named, dict) else ()):
        if isinstance(operation, dict) and isinstance(operation.get("path"), str) \
                and isinstance(operation.get("method"), str):
            operations[name] = PeerOperation(operation["method"].upper(), operation["path"])
    return _Location(origin, base.rstrip("/"), operations)


# --- calling --------------------------------------------------------------------------------

def call(service: PeerService, operation: str, *, body: Any = None,
         query: list[tuple[str, str]] | None = None, path_params: tuple[str, ...] = (),
         timeout: float | None = None) -> Any:
    """One operation of the peer; the parsed JSON of its 2xx answer (None without a body)."""
    with outbound_call(service.system, f"{service.definition}/{operation}"):
        location = _location(service)
        target = location.operations.get(operation)
        if target is None:
            raise PeerUnavailable(f"{service.system} does not offer {service.definition}/"
                                  f"{operation}")
        url = location.origin + location.base_path + _fill(target.path, path_params, service,
                                                           operation)
        if query:
            url += "?" + urllib.parse.urlencode(query)
        reply = _exchange_as_us(service, operation, target.method, url, body, timeout)
        label = service.label(operation)
        try:
            answer = reply.json()
        except ValueError as error:
            if 200 <= reply.status < 300:
                raise PeerUnavailable(f"{label} answered malformed JSON") from error
            answer = None
        if 200 <= reply.status < 300:
            return answer
        if reply.status >= 500 or reply.status < 400:
            raise PeerUnavailable(f"{label} answered HTTP {reply.status}{reason(answer)}")
        raise refused(reply.status, answer, label)


def _fill(path: str, params: tuple[str, ...], service: PeerService, operation: str) -> str:
    """The operation path with its `{…}` segments replaced, in order, by `params`; the params
    left over are appended as segments of their own, as the Java systems' callers append
    them (the Java Blacklist registers `check` as `/check`, its callers add the name)."""
    segments, values = [], list(params)
    for segment in path.split("/"):
        if segment.startswith("{") and segment.endswith("}"):
            if not values:
                raise PeerUnavailable(f"{service.label(operation)} has more path parameters "
                                      "than expected")
            segment = urllib.parse.quote(values.pop(0), safe="")
        segments.append(segment)
    filled = "/".join(segments)
    return "/".join([filled.rstrip("/"), *(urllib.parse.quote(v, safe="") for v in values)]
                    ) if values else filled


def _exchange_as_us(service: PeerService, operation: str, method: str, url: str, body: Any,
                    timeout: float | None) -> Reply:
    seconds = settings.PEER_TIMEOUT_SECONDS if timeout is None else timeout

    def send(authorization: str | None) -> Reply:
        try:
            return exchange(method, url, body=body, authorization=authorization,
                            timeout=seconds)
        except Unreachable as error:
            _locations.forget(service.definition)
            raise PeerUnavailable(f"{service.label(operation)} failed: {error.text}") from error

    try:
        return as_us(send)
    except ServiceRegistryUnavailable as error:  # no identity token of ours
        raise PeerUnavailable(f"{service.label(operation)}: {error.message}") from error
