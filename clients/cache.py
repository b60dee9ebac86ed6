"""The one cache policy of the clients: where another system is, per process. An explicit URL
setting wins without a lookup (the system modules decide that before asking here); a location
found through the ServiceRegistry is kept for its lifetime (SERVICE_REGISTRY_CACHE_SECONDS for
the peers, until it fails for the Authentication system) and forgotten as soon as a call to it
fails to connect: the system moved. Answers are not cached here: what may be reused, and for
how long, is the caller's decision (identity caches verified tokens and Blacklist answers,
serviceregistry the instances it looked up)."""
import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")

_SCHEMES = {"generic_http": "http", "generic_https": "https"}


class Locations(Generic[T]):
    """Found locations by key (a service definition)."""

    def __init__(self, lifetime: Callable[[], float | None]) -> None:
        self._lifetime = lifetime  # seconds a location is believed; None: until it fails
        self._lock = threading.Lock()
        self._found: dict[str, tuple[float, T]] = {}

    def get(self, key: str, discover: Callable[[], T]) -> T:
        lifetime = self._lifetime()
        with self._lock:
            entry = self._found.get(key)
            if entry is not None and (lifetime is None or time.monotonic() - entry[0] < lifetime):
                return entry[1]
        found = discover()  # outside the lock: a lookup may take its whole timeout
        with self._lock:
            self._found[key] = (time.monotonic(), found)
        return found

    def forget(self, key: str | None = None) -> None:
        with self._lock:
            if key is None:
                self._found.clear()
            else:
                self._found.pop(key, None)


def interface_origin(interface: object, templates: tuple[str, ...]) -> str | None:
    """`<protocol>://<accessAddresses[0]>:<accessPort>` of a generic_http(s) interface among
    `templates` (reference-dynamic §11.2); None for one we cannot call."""
    if not isinstance(interface, dict) or interface.get("templateName") not in templates \
            or not isinstance(interface.get("properties"), dict):
        return None
    properties: dict[str, Any] = interface["properties"]
    addresses, port = properties.get("accessAddresses"), properties.get("accessPort")
    if not isinstance(addresses, list) or not addresses or not isinstance(addresses[0], str) \
            or not addresses[0].strip() or type(port) is not int or not 0 < port < 65536:
        return None
    host = addresses[0].strip()
    host = f"[{host}]" if ":" in host else host
    return f"{_SCHEMES[interface['templateName']]}://{host}:{port}"
