"""A small Arrowhead ServiceRegistry on 127.0.0.1 (reference-dynamic §11.1, §11.7), speaking the
Java DTOs over real HTTP: system-discovery register/revoke and service-discovery
register/revoke/lookup (§11.6, by instance ids and by service definition names; the
`identity` lookup needs no identity, §13.2). It records every request and answers with the
Java response shapes. Tests set the known instances with `put_instance`."""
from typing import Any, Callable
from urllib.parse import unquote

from tests.concurrency import wait_until
from tests.fake_authentication import error_body, iso, utc_now
from tests.fake_system import Call, FakeSystem, declared_identity, not_found

SYSTEM_REGISTER = "/serviceregistry/system-discovery/register"
SYSTEM_REVOKE = "/serviceregistry/system-discovery/revoke"
SERVICE_REGISTER = "/serviceregistry/service-discovery/register"
SERVICE_REVOKE = "/serviceregistry/service-discovery/revoke/"
SERVICE_LOOKUP = "/serviceregistry/service-discovery/lookup?verbose=false"


def is_identity_lookup(path: str, body: Any) -> bool:
    """The one request the reference lets through unauthenticated under `outsourced`, so that
    clients can find the Authentication system (reference-dynamic §13.2)."""
    return path == SERVICE_LOOKUP and isinstance(body, dict) \
        and body.get("serviceDefinitionNames") == ["identity"]


class FakeServiceRegistry(FakeSystem):
    """`identify` turns an Authorization header into the caller's system name (None: 401);
    the declared policy by default. `fail_with` makes every answer that status; `delay`
    seconds pass before each answer. `stop()` closes the port."""

    def __init__(self, port: int = 0,
                 identify: Callable[[str | None], str | None] = declared_identity) -> None:
        self.identify = identify  # type: ignore[method-assign]
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
            return [call for call in self.calls if call.path == SERVICE_LOOKUP]

    def put_instance(self, instance_id: str, *, interfaces: list[dict[str, Any]],
                     metadata: dict[str, Any] | None = None,
                     expires_at: str | None = None) -> dict[str, Any]:
        """Make the instance known (replacing one with its id) as the SR answers it."""
        provider, definition, version = instance_id.split("|")
        now = iso(utc_now())
        instance = {"instanceId": instance_id,
                    "provider": {"name": provider, "metadata": {}, "version": "1.0.0",
                                 "createdAt": now, "updatedAt": now},
                    "serviceDefinition": {"name": definition, "createdAt": now, "updatedAt": now},
                    "version": version, "expiresAt": expires_at, "metadata": metadata or {},
                    "interfaces": interfaces, "createdAt": now, "updatedAt": now}
        with self._lock:
            self.instances[instance_id] = instance
        return instance

    # --- operations -------------------------------------------------------------------------

    def answer(self, method: str, path: str, name: str, body: Any) -> tuple[int, Any]:
        if method == "POST" and path == SYSTEM_REGISTER:
            return self._system_register(name, body)
        if method == "DELETE" and path == SYSTEM_REVOKE:
            return self._system_revoke(name)
        if method == "POST" and path == SERVICE_REGISTER:
            return self._service_register(name, body)
        if method == "POST" and path == SERVICE_LOOKUP:
            return self._service_lookup(body)
        if method == "DELETE" and path.startswith(SERVICE_REVOKE):
            return self._service_revoke(name, unquote(path[len(SERVICE_REVOKE):]))
        return not_found(method, path)

    def _system_register(self, name: str, body: dict[str, Any]) -> tuple[int, Any]:
        now = iso(utc_now())
        system = {"name": name, "metadata": body["metadata"], "version": body["version"],
                  "addresses": [{"type": "IPV4", "address": address}
                                for address in body["addresses"]],
                  "createdAt": now, "updatedAt": now}
        existed = name in self.systems
        self.systems[name] = system
        return (200 if existed else 201), system

    def _system_revoke(self, name: str) -> tuple[int, Any]:
        if self.systems.pop(name, None) is None:
            return 204, None
        self.instances = {key: value for key, value in self.instances.items()
                          if value["provider"]["name"] != name}
        return 200, None

    def _service_register(self, name: str, body: dict[str, Any]) -> tuple[int, Any]:
        if name not in self.systems:
            return 400, error_body(400, "INVALID_PARAMETER", f"System does not exist: {name}",
                                   f"POST {SERVICE_REGISTER}")
        now = iso(utc_now())
        provider = {key: self.systems[name][key]
                    for key in ("name", "metadata", "version", "createdAt", "updatedAt")}
        instance_id = f"{name}|{body['serviceDefinitionName']}|{body['version']}"
        instance = {"instanceId": instance_id, "provider": provider,
                    "serviceDefinition": {"name": body["serviceDefinitionName"],
                                          "createdAt": now, "updatedAt": now},
                    "version": body["version"], "expiresAt": body.get("expiresAt"),
                    "metadata": body["metadata"],
                    "interfaces": body["interfaces"], "createdAt": now, "updatedAt": now}
        self.instances[instance_id] = instance
        return 201, instance

    def _service_lookup(self, body: Any) -> tuple[int, Any]:
        body = body if isinstance(body, dict) else {}
        ids, definitions = body.get("instanceIds"), body.get("serviceDefinitionNames")
        if not ids and not definitions:
            return 400, error_body(400, "INVALID_PARAMETER", "One of the following filters must "
                                   "be used: 'instanceIds', 'providerNames', "
                                   "'serviceDefinitionNames'", f"POST {SERVICE_LOOKUP}")
        entries = sorted((instance for key, instance in self.instances.items()
                          if (not ids or key in ids) and (
                              not definitions
                              or instance["serviceDefinition"]["name"] in definitions)),
                         key=lambda instance: instance["instanceId"], reverse=True)
        return 200, {"entries": entries, "count": len(entries)}

    def _service_revoke(self, name: str, instance_id: str) -> tuple[int, Any]:
        instance = self.instances.get(instance_id)
        if instance is None:
            return 204, None
        if instance["provider"]["name"] != name:
            return 403, error_body(403, "FORBIDDEN", "Revoking other systems' service is "
                                   "forbidden", f"DELETE {SERVICE_REVOKE}{instance_id}")
        del self.instances[instance_id]
        return 200, None
