"""A small Arrowhead Blacklist on 127.0.0.1, speaking the Java DTOs over real HTTP:

- `blacklistDiscovery`/`check`: GET /blacklist/check/{systemName} → a bare boolean, true when
  an active entry about the system has not expired; registered, as the Java Blacklist
  registers it, as `/check` (callers append the name as a segment);
- `blacklistManagement`/`query`: POST /blacklist/mgmt/query, BlacklistQueryRequestDTO
  {pagination, systemNames, mode, issuers, revokers, reason, alivesAt} →
  BlacklistEntryListResponseDTO {entries, count}. `mode` ACTIVES, INACTIVES or ALL (null: ALL);
  `alivesAt` keeps the active entries that do not expire before it (the IDD: "if alivesAt is
  set, inactive records will not be returned"). Pages as the Java systems do: page and size
  null → page 0 of `page_size`; a size above `page_size` is refused (400). Sorted by system
  name, descending, as the Java Blacklist's entries are.

Entries are added with `put(name, ...)`. The `blacklist` fixture (import it into a test module)
serves one at BLACKLIST_URL with the filter on. Callers are identified with the declared policy (no
`Bearer SYSTEM//<name>`: 401). Every request is recorded in `calls`; `fail_with` makes every
answer that status (500: a generic failure); `refuse_with` (401 or 403) answers with the Java
envelope of an AuthException or ForbiddenException.
"""
import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
from django.core.cache import cache

from conventions.timestamps import parse_utc
from clients import peers
from tests.fake_authentication import error_body, iso, utc_now
from tests.fake_system import FakeSystem, not_found

BASE = "/blacklist"
CHECK = f"{BASE}/check/"
QUERY = f"{BASE}/mgmt/query"
SYSTEM_NAME = "Blacklist"
REFUSALS = {401: ("AUTH", "Invalid authorization header"),
            403: ("FORBIDDEN", "Requester has no management permission")}


@dataclass
class _Entry:
    system_name: str
    created_by: str
    reason: str
    created_at: dt.datetime
    expires_at: dt.datetime | None
    active: bool

    def alive_at(self, moment: dt.datetime) -> bool:
        return self.expires_at is None or self.expires_at > moment

    def dto(self) -> dict[str, Any]:
        return {"systemName": self.system_name, "createdBy": self.created_by,
                "revokedBy": None if self.active else "Sysop",
                "createdAt": iso(self.created_at), "updatedAt": iso(self.created_at),
                "reason": self.reason,
                "expiresAt": iso(self.expires_at) if self.expires_at else None,
                "active": self.active}


class FakeBlacklist(FakeSystem):
    def __init__(self, *, page_size: int = 1000) -> None:
        self.page_size = page_size
        self.refuse_with: int | None = None
        self._entries: list[_Entry] = []
        super().__init__()

    def put(self, name: str, *, reason: str = "misbehaving", active: bool = True,
            expires_at: dt.datetime | None = None) -> None:
        with self._lock:
            self._entries.append(_Entry(name, "Sysop", reason, utc_now(), expires_at, active))

    def service_instances(self) -> dict[str, list[dict[str, Any]]]:
        """The interfaces to register in a (fake) ServiceRegistry, by service definition, as
        the reference registers them (generic_http)."""
        interface = self.http_interfaces
        return {
            "blacklistDiscovery": interface(BASE, {
                "lookup": ("GET", "/lookup"), "check": ("GET", "/check")}),
            "blacklistManagement": interface(f"{BASE}/mgmt", {
                "query": ("POST", "/query"), "create": ("POST", "/create"),
                "remove": ("DELETE", "/remove")}),
        }

    # --- operations -------------------------------------------------------------------------

    def check(self, name: str) -> tuple[int, Any]:
        now = utc_now()
        with self._lock:
            return 200, any(entry.system_name == name and entry.active and entry.alive_at(now)
                            for entry in self._entries)

    def query(self, body: Any) -> tuple[int, Any]:
        origin = f"POST {QUERY}"
        if not isinstance(body, dict):
            return 400, error_body(400, "INVALID_PARAMETER", "Request payload is missing", origin)
        page, size = self._page(body.get("pagination"))
        if page is None:
            return 400, error_body(400, "INVALID_PARAMETER", "Invalid pagination", origin)
        names, mode = body.get("systemNames"), body.get("mode") or "ALL"
        alives_at = parse_utc(body["alivesAt"]) if body.get("alivesAt") else None
        with self._lock:
            matching = [entry for entry in self._entries
                        if (not names or entry.system_name in names)
                        and (mode == "ALL" or entry.active == (mode == "ACTIVES"))
                        # "if alivesAt is set, inactive records will not be returned" (IDD)
                        and (alives_at is None or (entry.active and entry.alive_at(alives_at)))]
        matching.sort(key=lambda entry: entry.system_name, reverse=True)  # Java: name DESC
        return 200, {"entries": [entry.dto() for entry in matching[page * size:(page + 1) * size]],
                     "count": len(matching)}

    def _page(self, pagination: Any) -> tuple[int | None, int]:
        pagination = pagination if isinstance(pagination, dict) else {}
        page, size = pagination.get("page"), pagination.get("size")
        if page is None and size is None:
            return 0, self.page_size
        if type(page) is not int or type(size) is not int or page < 0 or not \
                0 < size <= self.page_size:
            return None, 0
        return page, size

    def refusal(self, origin: str) -> tuple[int, Any] | None:
        if self.refuse_with is None:
            return None
        return self.refuse_with, error_body(self.refuse_with, *REFUSALS[self.refuse_with],
                                            origin)

    def answer(self, method: str, path: str, caller: str | None, body: Any) -> tuple[int, Any]:
        path = urlsplit(path).path
        if method == "GET" and path.startswith(CHECK):
            return self.check(unquote(path[len(CHECK):]))
        if method == "POST" and path == QUERY:
            return self.query(body)
        return not_found(method, path)


@pytest.fixture
def blacklist(settings) -> Iterator[FakeBlacklist]:
    """A fake Blacklist at BLACKLIST_URL with the filter on (force on, the default exclude
    list); the peer locations and the cache start and end clean."""
    fake = FakeBlacklist()
    settings.BLACKLIST_FILTER = True
    settings.BLACKLIST_URL = fake.url
    peers.forget_locations()
    cache.clear()
    yield fake
    fake.stop()
    peers.forget_locations()
    cache.clear()
