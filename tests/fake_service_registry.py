"""A small Arrowhead ServiceRegistry on 127.0.0.1 (reference-dynamic §11.1, §11.7), speaking the
Java DTOs over real HTTP: system-discovery register/revoke and service-discovery
register/revoke/lookup (§11.6, by instance ids, provider names and service definition names;
the `identity` lookup needs no identity, §13.2). It records every request and answers as the
Java ServiceRegistry 5.2.0 answered in tests/recordings/serviceregistry.json
(tests/interop): null fields left out, a system registered again with other data refused,
the seeded interface templates and their mandatory properties checked, restricted discovery
(a caller that is not in `direct_access` sees only instances whose metadata says
`unrestrictedDiscovery: true`). Tests set the known instances with `put_instance`."""
from typing import Any, Callable
from urllib.parse import unquote, urlsplit

from tests.concurrency import wait_until
from tests.fake_authentication import error_body, iso, utc_now
from tests.fake_system import Call, FakeSystem, declared_identity, not_found, without_nulls

SYSTEM_REGISTER = "/serviceregistry/system-discovery/register"
SYSTEM_REVOKE = "/serviceregistry/system-discovery/revoke"
SYSTEM_LOOKUP = "/serviceregistry/system-discovery/lookup"
SERVICE_REGISTER = "/serviceregistry/service-discovery/register"
SERVICE_REVOKE = "/serviceregistry/service-discovery/revoke/"
LOOKUP = "/serviceregistry/service-discovery/lookup"
SERVICE_LOOKUP = f"{LOOKUP}?verbose=false"  # as the service and the Java clients send it
# The seeded interface templates: protocol and mandatory properties, in the seed's order.
TEMPLATES = {
    "generic_http": ("http", ("accessAddresses", "accessPort", "basePath")),
    "generic_https": ("https", ("accessAddresses", "accessPort", "basePath")),
    "generic_mqtt": ("tcp", ("accessAddresses", "accessPort", "baseTopic", "operations")),
    "generic_mqtts": ("ssl", ("accessAddresses", "accessPort", "baseTopic", "operations")),
}
# Who looks up without restriction (the shipped `service.discovery.direct.access`, with this
# service added as docs/local-cloud.md tells; the recording's SR ran so), and the operator.
DIRECT_ACCESS = ("DynamicServiceOrchestration", "TranslationManager", "DeviceQoSEvaluator",
                 "SimpleStoreServiceOrchestration", "Sysop")


def is_identity_lookup(path: str, body: Any) -> bool:
    """The one request the reference lets through unauthenticated under `outsourced`, so that
    clients can find the Authentication system (reference-dynamic §13.2)."""
    return urlsplit(path).path == LOOKUP and isinstance(body, dict) \
        and body.get("serviceDefinitionNames") == ["identity"]


class FakeServiceRegistry(FakeSystem):
    """`identify` turns an Authorization header into the caller's system name (None: 401);
    the declared policy by default. `fail_with` makes every answer that status; `delay`
    seconds pass before each answer. `stop()` closes the port."""

    def __init__(self, port: int = 0,
                 identify: Callable[[str | None], str | None] = declared_identity,
                 direct_access: tuple[str, ...] = DIRECT_ACCESS) -> None:
        self.identify = identify  # type: ignore[method-assign]
        self.direct_access = direct_access
        self.systems: dict[str, dict[str, Any]] = {}    # name -> SystemResponseDTO
        self.instances: dict[str, dict[str, Any]] = {}  # id -> ServiceInstanceResponseDTO
        super().__init__(port)

    def anonymous_allowed(self, path: str, body: Any) -> bool:
        return is_identity_lookup(path, body)

    def wait_for_calls(self, count: int, timeout: float = 20) -> list[Call]:
        def arrived() -> bool:
            with self._lock:
                return len(self.calls) >= count

        assert wait_until(arrived, timeout), \
            f"{count} ServiceRegistry calls expected, got {self.calls}"
        with self._lock:
            return list(self.calls)

    def lookups(self) -> list[Call]:
        with self._lock:
            return [call for call in self.calls if urlsplit(call.path).path == LOOKUP]

    def put_system(self, name: str, metadata: dict[str, Any] | None = None,
                   ) -> dict[str, Any]:
        """Make the system known (replacing one of its name) as the SR answers it."""
        now = iso(utc_now())
        system = {"name": name, "metadata": metadata or {}, "version": "1.0.0",
                  "addresses": [{"type": "IPV4", "address": "127.0.0.1"}], "createdAt": now,
                  "updatedAt": now}
        with self._lock:
            self.systems[name] = system
        return system

    def put_instance(self, instance_id: str, *, interfaces: list[dict[str, Any]],
                     metadata: dict[str, Any] | None = None, expires_at: str | None = None,
                     provider_metadata: dict[str, Any] | None = None) -> dict[str, Any]:
        """Make the instance known (replacing one with its id) as the SR answers it."""
        provider, definition, version = instance_id.split("|")
        now = iso(utc_now())
        instance = without_nulls({
            "instanceId": instance_id,
            "provider": {"name": provider, "metadata": provider_metadata or {},
                         "version": "1.0.0", "createdAt": now, "updatedAt": now},
            "serviceDefinition": {"name": definition, "createdAt": now, "updatedAt": now},
            "version": version, "expiresAt": expires_at, "metadata": metadata or {},
            "interfaces": interfaces, "createdAt": now, "updatedAt": now})
        with self._lock:
            self.instances[instance_id] = instance
        return instance

    # --- operations -------------------------------------------------------------------------

    def answer(self, method: str, path: str, name: str, body: Any) -> tuple[int, Any]:
        route = urlsplit(path).path
        if method == "POST" and route == SYSTEM_REGISTER:
            return self._system_register(name, body)
        if method == "DELETE" and route == SYSTEM_REVOKE:
            return self._system_revoke(name)
        if method == "POST" and route == SERVICE_REGISTER:
            return self._service_register(name, body)
        if method == "POST" and route == LOOKUP:
            return self._service_lookup(name, body)
        if method == "POST" and route == SYSTEM_LOOKUP:
            return self._system_lookup(body)
        if method == "DELETE" and route.startswith(SERVICE_REVOKE):
            return self._service_revoke(name, unquote(route[len(SERVICE_REVOKE):]))
        return not_found(method, path)

    def _system_register(self, name: str, body: dict[str, Any]) -> tuple[int, Any]:
        origin = f"POST {SYSTEM_REGISTER}"
        addresses = body.get("addresses") or []
        if not addresses and not body.get("deviceName"):
            return 400, error_body(400, "INVALID_PARAMETER", "At least one system address is "
                                   "needed for every system", origin)
        wanted = {"metadata": body.get("metadata") or {}, "version": body.get("version"),
                  "addresses": [{"type": "IPV4", "address": address} for address in addresses]}
        existing = self.systems.get(name)
        if existing is not None:
            for field, label in (("metadata", "metadata"), ("version", "version"),
                                 ("addresses", "address list")):
                if existing.get(field) != wanted[field]:
                    return 400, error_body(400, "INVALID_PARAMETER", f"System with name: "
                                           f"{name} already exists, but provided {label} is "
                                           "not matching", origin)
            return 200, existing
        now = iso(utc_now())
        self.systems[name] = without_nulls({"name": name, **wanted, "createdAt": now,
                                            "updatedAt": now})
        return 201, self.systems[name]

    def _system_revoke(self, name: str) -> tuple[int, Any]:
        if self.systems.pop(name, None) is None:
            return 204, None
        self.instances = {key: value for key, value in self.instances.items()
                          if value["provider"]["name"] != name}
        return 200, None

    def _service_register(self, name: str, body: dict[str, Any]) -> tuple[int, Any]:
        origin = f"POST {SERVICE_REGISTER}"
        if name not in self.systems:
            return 400, error_body(400, "INVALID_PARAMETER", f"System does not exist: {name}",
                                   origin)
        for interface in body.get("interfaces") or []:
            refusal = _interface_refusal(interface)
            if refusal is not None:
                return 400, error_body(400, "INVALID_PARAMETER", refusal, origin)
        now = iso(utc_now())
        instance_id = f"{name}|{body['serviceDefinitionName']}|{body['version']}"
        instance = without_nulls({
            "instanceId": instance_id, "provider": self.systems[name],
            "serviceDefinition": {"name": body["serviceDefinitionName"],
                                  "createdAt": now, "updatedAt": now},
            "version": body["version"], "expiresAt": body.get("expiresAt"),
            "metadata": body.get("metadata") or {},
            "interfaces": body["interfaces"], "createdAt": now, "updatedAt": now})
        self.instances[instance_id] = instance
        return 201, instance

    def _system_lookup(self, body: Any) -> tuple[int, Any]:
        """By system names (the filter we use), newest first; no filter lists every system."""
        names = (body if isinstance(body, dict) else {}).get("systemNames")
        entries = sorted((system for name, system in self.systems.items()
                          if not names or name in names),
                         key=lambda system: system["createdAt"], reverse=True)
        return 200, {"entries": entries, "count": len(entries)}

    def _service_lookup(self, caller: str | None, body: Any) -> tuple[int, Any]:
        body = body if isinstance(body, dict) else {}
        ids, providers = body.get("instanceIds"), body.get("providerNames")
        definitions = body.get("serviceDefinitionNames")
        if not ids and not providers and not definitions:
            return 400, error_body(400, "INVALID_PARAMETER", "One of the following filters must "
                                   "be used: 'instanceIds', 'providerNames', "
                                   "'serviceDefinitionNames'", f"POST {LOOKUP}")
        restricted = caller not in self.direct_access
        entries = sorted((_listed(instance) for key, instance in self.instances.items()
                          if (not ids or key in ids)
                          and (not providers or instance["provider"]["name"] in providers)
                          and (not definitions
                               or instance["serviceDefinition"]["name"] in definitions)
                          and (not restricted
                               or instance["metadata"].get("unrestrictedDiscovery") is True)),
                         key=lambda instance: instance["instanceId"], reverse=True)
        return 200, {"entries": entries, "count": len(entries)}

    def _service_revoke(self, name: str, instance_id: str) -> tuple[int, Any]:
        if instance_id.split("|")[0] != name:  # checked before whether it exists
            return 403, error_body(403, "FORBIDDEN", "Revoking other systems' service is "
                                   "forbidden", f"DELETE {SERVICE_REVOKE}{instance_id}")
        if self.instances.pop(instance_id, None) is None:
            return 204, None
        return 200, None


def _interface_refusal(interface: dict[str, Any]) -> str | None:
    """Why the SR refuses an interface of a service registration (None: it does not): an
    unknown template, another protocol than the template's, a mandatory property missing."""
    template = interface.get("templateName")
    if template not in TEMPLATES:
        return f"Interface template does not exist: {template}"
    protocol, mandatory = TEMPLATES[template]
    if interface.get("protocol") and interface["protocol"] != protocol:
        return f"{interface['protocol']} protocol is invalid for {template}"
    properties = interface.get("properties") or {}
    for name in mandatory:
        if properties.get(name) is None:
            return f"{name} interface property is missing for {template}"
    return None


def _listed(instance: dict[str, Any]) -> dict[str, Any]:
    """An instance as a (non-verbose) lookup lists it: its provider without addresses."""
    provider = {key: value for key, value in instance["provider"].items()
                if key != "addresses"}
    return {**instance, "provider": provider}
