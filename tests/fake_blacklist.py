"""A small Arrowhead Blacklist on 127.0.0.1, speaking the Java DTOs over real HTTP:

- `blacklistDiscovery`/`check`: GET /blacklist/check/{systemName} → a bare boolean, true when
  an active entry about the system has not expired; registered, as the Java Blacklist
  registers it, as `/check` (callers append the name as a segment);
- `blacklistDiscovery`/`lookup`: GET /blacklist/lookup → the caller's own active, unexpired
  entries as {entries, count};
- `blacklistManagement`/`query`: POST /blacklist/mgmt/query, BlacklistQueryRequestDTO
  {pagination, systemNames, mode, issuers, revokers, reason, alivesAt} →
  BlacklistEntryListResponseDTO {entries, count}. `mode` ACTIVES, INACTIVES or ALL (null: ALL);
  `issuers`/`revokers` keep the entries created/revoked by one of them, `reason` the ones whose
  reason contains it (case-insensitive); `alivesAt` keeps the active entries that do not expire
  before it (the IDD: "if alivesAt is set, inactive records will not be returned"). Pages as
  the Java systems do: page and size null → page 0 of `page_size`; a size above `page_size` is
  refused (400). Sorted by system name, descending, as the Java Blacklist's entries are;
- `blacklistManagement`/`create`: POST /blacklist/mgmt/create, BlacklistCreateListRequestDTO
  {entities:[{systemName, expiresAt, reason}]} → 201 {entries, count}, the new entries in the
  order asked, created by the caller. Nothing is created when one entity is invalid: a missing
  name or reason, a repeated name, an expiry that is not a UTC instant or is past, the caller
  itself, or a system on the Blacklist's own whitelist (`Blacklist`) are 400;
- `blacklistManagement`/`remove`: DELETE /blacklist/mgmt/remove?names=A&names=B (or `names=A,B`)
  → 200 without a body; the active entries about those systems become inactive, revoked by the
  caller (no names: 400; only Sysop may remove its own entries).

An entry's DTO is BlacklistEntryDTO {systemName, createdBy, revokedBy, createdAt, updatedAt,
reason, expiresAt, active}; like every Java DTO it leaves null fields out (`revokedBy` of an
active entry, `expiresAt` of one that never expires).

Entries are also added with `put(name, ...)`. The `blacklist` fixture (import it into a test
module) serves one at BLACKLIST_URL with the filter on. Callers are identified with the declared
policy (no `Bearer SYSTEM//<name>`: 401). The Java management filter lets Sysop through always,
the systems on `management.whitelist` under the whitelist and authorization policies, and others
only when ConsumerAuthorization grants them the operation; this fake lets every identified caller
manage. Every request is recorded in `calls`; `fail_with` makes every answer that status (500: a
generic failure); `refuse_with` (401 or 403) answers every request with the Java envelope of an
AuthException or ForbiddenException.
"""
import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
from django.core.cache import cache

from conventions.timestamps import format_utc, parse_utc
from clients import peers
from tests.fake_authentication import error_body, iso, utc_now
from tests.fake_system import FakeSystem, not_found, without_nulls

BASE = "/blacklist"
CHECK = f"{BASE}/check/"
LOOKUP = f"{BASE}/lookup"
QUERY = f"{BASE}/mgmt/query"
CREATE = f"{BASE}/mgmt/create"
REMOVE = f"{BASE}/mgmt/remove"
SYSTEM_NAME = "Blacklist"
SYSOP = "Sysop"
WHITELIST = ("Blacklist",)  # the Java default `whitelist=blacklist`: never listed
REFUSALS = {401: ("AUTH", "Invalid authorization header"),
            403: ("FORBIDDEN", "Requester has no management permission")}


@dataclass
class _Entry:
    system_name: str
    created_by: str
    reason: str
    created_at: dt.datetime
    expires_at: dt.datetime | None
    active: bool = True
    revoked_by: str | None = None
    updated_at: dt.datetime | None = None

    def alive_at(self, moment: dt.datetime) -> bool:
        return self.expires_at is None or self.expires_at > moment

    def revoke(self, revoker: str) -> None:
        self.active, self.revoked_by, self.updated_at = False, revoker, utc_now()

    def dto(self) -> dict[str, Any]:
        """BlacklistEntryDTO; Java leaves the null fields out."""
        dto = {"systemName": self.system_name, "createdBy": self.created_by,
               "revokedBy": self.revoked_by, "createdAt": iso(self.created_at),
               "updatedAt": iso(self.updated_at or self.created_at), "reason": self.reason,
               "expiresAt": format_utc(self.expires_at) if self.expires_at else None,
               "active": self.active}
        return without_nulls(dto)


def _invalid(message: str, origin: str) -> tuple[int, Any]:
    return 400, error_body(400, "INVALID_PARAMETER", message, origin)


def _listing(entries: list[_Entry], count: int) -> dict[str, Any]:
    """BlacklistEntryListResponseDTO."""
    return {"entries": [entry.dto() for entry in entries], "count": count}


def _checked(entity: dict[str, Any], names: set[str], now: dt.datetime
             ) -> tuple[str, str, dt.datetime | None, str | None]:
    """A BlacklistCreateRequestDTO's name, reason and expiry (trimmed), and what the Java
    Blacklist finds wrong with it (None: nothing); `names` are the ones asked before it."""
    name = (entity.get("systemName") or "").strip()
    reason = (entity.get("reason") or "").strip()
    expires_text = (entity.get("expiresAt") or "").strip()
    expires_at = parse_utc(expires_text) if expires_text else None
    problem = None
    if not name:
        problem = "System name is empty"
    elif name in names:
        problem = f"Duplicated system name: {name}"
    elif expires_text and expires_at is None:
        problem = ("Expiration time has an invalid time format, UTC string expected "
                   "(example: 2024-10-11T14:30:00Z)")
    elif expires_at is not None and expires_at < now:
        problem = "Expiration time is in the past"
    elif not reason:
        problem = "You cannot blacklist a system without specifying the reason"
    return name, reason, expires_at, problem


class FakeBlacklist(FakeSystem):
    def __init__(self, *, page_size: int = 1000) -> None:
        self.page_size = page_size
        self.refuse_with: int | None = None
        self._entries: list[_Entry] = []
        super().__init__()

    def put(self, name: str, *, reason: str = "misbehaving", active: bool = True,
            expires_at: dt.datetime | None = None) -> None:
        """An entry created by Sysop; an inactive one was revoked by Sysop too."""
        entry = _Entry(name, SYSOP, reason, utc_now(), expires_at)
        if not active:
            entry.revoke(SYSOP)
        with self._lock:
            self._entries.append(entry)

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

    def _listed(self, name: str) -> list[_Entry]:
        """The active, unexpired entries about `name`."""
        now = utc_now()
        return [entry for entry in self._entries
                if entry.system_name == name and entry.active and entry.alive_at(now)]

    def check(self, name: str) -> tuple[int, Any]:
        with self._lock:
            return 200, bool(self._listed(name))

    def lookup(self, caller: str) -> tuple[int, Any]:
        with self._lock:
            entries = self._listed(caller)
        return 200, _listing(entries, len(entries))

    def query(self, body: Any) -> tuple[int, Any]:
        if not isinstance(body, dict):
            return _invalid("Request payload is missing", f"POST {QUERY}")
        page, size = self._page(body.get("pagination"))
        if page is None:
            return _invalid("Invalid pagination", f"POST {QUERY}")
        names, mode = body.get("systemNames"), body.get("mode") or "ALL"
        issuers, revokers = body.get("issuers"), body.get("revokers")
        reason = (body.get("reason") or "").lower()
        alives_at = parse_utc(body["alivesAt"]) if body.get("alivesAt") else None
        with self._lock:
            matching = [entry for entry in self._entries
                        if (not names or entry.system_name in names)
                        and (mode == "ALL" or entry.active == (mode == "ACTIVES"))
                        and (not issuers or entry.created_by in issuers)
                        and (not revokers or entry.revoked_by in revokers)
                        and reason in entry.reason.lower()
                        # "if alivesAt is set, inactive records will not be returned" (IDD)
                        and (alives_at is None or (entry.active and entry.alive_at(alives_at)))]
        matching.sort(key=lambda entry: entry.system_name, reverse=True)  # Java: name DESC
        return 200, _listing(matching[page * size:(page + 1) * size], len(matching))

    def _page(self, pagination: Any) -> tuple[int | None, int]:
        pagination = pagination if isinstance(pagination, dict) else {}
        page, size = pagination.get("page"), pagination.get("size")
        if page is None and size is None:
            return 0, self.page_size
        if type(page) is not int or type(size) is not int or page < 0 or not \
                0 < size <= self.page_size:
            return None, 0
        return page, size

    def create(self, body: Any, caller: str) -> tuple[int, Any]:
        """Checks every entity first, as the Java Blacklist does, then creates them all."""
        origin = f"POST {CREATE}"
        if not isinstance(body, dict):
            return _invalid("Request payload is missing", origin)
        entities = body.get("entities")
        if not entities or not isinstance(entities, list):
            return _invalid("Request payload is empty", origin)
        now, names, entries = utc_now(), set(), []
        for entity in entities:
            if not isinstance(entity, dict):
                return _invalid("Entity list contains null element", origin)
            name, reason, expires_at, problem = _checked(entity, names, now)
            if problem:
                return _invalid(problem, origin)
            names.add(name)
            entries.append(_Entry(name, caller, reason, now, expires_at))
        if caller in names:
            return _invalid("It is not allowed to add yourself to the blacklist", origin)
        whitelisted = [name for name in names if name in WHITELIST]
        if whitelisted:
            return _invalid("The following system names cannot be added, because they are on "
                            f"the whitelist: {', '.join(whitelisted)}", origin)
        with self._lock:
            self._entries += entries
        return 201, _listing(entries, len(entries))

    def remove(self, query: str, caller: str) -> tuple[int, Any]:
        """Spring reads `names` repeated or comma-separated."""
        origin = f"DELETE {REMOVE}"
        names = [name.strip() for value in parse_qs(query, keep_blank_values=True).get("names", [])
                 for name in value.split(",")]
        if not names:
            return _invalid("System name list is missing or empty", origin)
        if not all(names):
            return _invalid("System name list contains null or empty element", origin)
        if caller in names and caller != SYSOP:
            return _invalid("Only sysop can remove itself from the blacklist", origin)
        with self._lock:
            for entry in self._entries:
                if entry.active and entry.system_name in names:
                    entry.revoke(caller)
        return 200, None

    def refusal(self, origin: str) -> tuple[int, Any] | None:
        if self.refuse_with is None:
            return None
        return self.refuse_with, error_body(self.refuse_with, *REFUSALS[self.refuse_with],
                                            origin)

    def answer(self, method: str, path: str, caller: str | None, body: Any) -> tuple[int, Any]:
        parts = urlsplit(path)
        path = parts.path
        if method == "GET" and path.startswith(CHECK):
            return self.check(unquote(path[len(CHECK):]))
        if method == "GET" and path == LOOKUP:
            return self.lookup(caller or "")
        if method == "POST" and path == QUERY:
            return self.query(body)
        if method == "POST" and path == CREATE:
            return self.create(body, caller or "")
        if method == "DELETE" and path == REMOVE:
            return self.remove(parts.query, caller or "")
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
