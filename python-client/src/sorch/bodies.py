"""Request bodies the service takes, built from a few arguments."""
from typing import Any


def orchestration_request(service: str | None = None, *, matchmaking: bool = False,
                          operations: list[str] | None = None) -> dict[str, Any]:
    """A pull (or subscription) request body: a service definition, the operations the
    consumer will call, one result per service (`MATCHMAKING`)."""
    request: dict[str, Any] = {}
    if service or operations:
        request["serviceRequirement"] = {key: value for key, value in (
            ("serviceDefinition", service), ("operations", operations)) if value}
    if matchmaking:
        request["orchestrationFlags"] = {"MATCHMAKING": True}
    return request


def http_instance(*, provider: str, service: str, version: str, address: str, port: int,
                  base_path: str, policy: str = "NONE",
                  operations: dict[str, tuple[str, str]] | None = None,
                  metadata: dict[str, Any] | None = None,
                  expires_at: str | None = None) -> dict[str, Any]:
    """A catalog instance with one `generic_http` interface; `operations` maps a name to
    `(method, path)`."""
    properties: dict[str, Any] = {"accessAddresses": [address], "accessPort": port,
                                  "basePath": base_path}
    if operations:
        properties["operations"] = {name: {"method": method, "path": path}
                                    for name, (method, path) in operations.items()}
    instance: dict[str, Any] = {
        "systemName": provider, "serviceDefinitionName": service, "version": version,
        "metadata": metadata or {},
        "interfaces": [{"templateName": "generic_http", "policy": policy,
                        "properties": properties}]}
    if expires_at:
        instance["expiresAt"] = expires_at
    return instance
