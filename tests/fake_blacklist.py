"""A small Arrowhead Blacklist on 127.0.0.1, speaking the Java DTOs over real HTTP:

- `blacklistDiscovery`/`check`: GET /blacklist/check/{systemName} → a bare boolean, true when
  an active entry about the system has not expired;
- `blacklistManagement`/`query`: POST /blacklist/mgmt/query, BlacklistQueryRequestDTO
  {pagination, systemNames, mode, issuers, revokers, reason, alivesAt} →
  BlacklistEntryListResponseDTO {entries, count}. `mode` ACTIVES, INACTIVES or ALL (null: ALL);
  `alivesAt` keeps the entries that do not expire before it. Pages as the Java systems do:
  page and size null → page 0 of `page_size`; a size above `page_size` is refused (400).

Entries are added with `put(name, ...)`. The `blacklist` fixture (import it into a test module)
serves one at BLACKLIST_URL with the filter on. Callers are identified with the declared policy (no
`Bearer SYSTEM//<name>`: 401). Every request is recorded in `calls`; `fail_with` makes every
answer that status (500: a generic failure); `refuse_with` (401 or 403) answers with the Java
envelope of an AuthException or ForbiddenException.
"""
import datetime as dt
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
from django.core.cache import cache

from config.conventions.timestamps import parse_utc
from serviceregistry import peers
from tests.endpoints import serve_on_loopback, server_url, stop_serving
from tests.fake_authentication import error_body, iso, utc_now
from tests.fake_service_registry import Call, declared_identity

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


class FakeBlacklist:
    def __init__(self, *, page_size: int = 1000) -> None:
        self.page_size = page_size
        self.fail_with: int | None = None
        self.refuse_with: int | None = None
        self.calls: list[Call] = []
        self._entries: list[_Entry] = []
        self._lock = threading.Lock()
        self._server, self._thread = serve_on_loopback(self._handler_class(), 0)

    @property
    def url(self) -> str:
        return server_url(self._server)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def stop(self) -> None:
        stop_serving(self._server, self._thread)

    def put(self, name: str, *, reason: str = "misbehaving", active: bool = True,
            expires_at: dt.datetime | None = None) -> None:
        with self._lock:
            self._entries.append(_Entry(name, "Sysop", reason, utc_now(), expires_at, active))

    def calls_to(self, path: str) -> list[Call]:
        with self._lock:
            return [call for call in self.calls if urlsplit(call.path).path.startswith(path)]

    def service_instances(self) -> dict[str, list[dict[str, Any]]]:
        """The interfaces to register in a (fake) ServiceRegistry, by service definition, as
        the reference registers them (generic_http)."""
        def interface(base: str, operations: dict[str, tuple[str, str]]) -> list[dict[str, Any]]:
            return [{"templateName": "generic_http", "protocol": "http", "policy": "NONE",
                     "properties": {"accessAddresses": ["127.0.0.1"], "accessPort": self.port,
                                    "basePath": base,
                                    "operations": {name: {"method": method, "path": path}
                                                   for name, (method, path) in
                                                   operations.items()}}}]
        return {
            "blacklistDiscovery": interface(BASE, {
                "lookup": ("GET", "/lookup"), "check": ("GET", "/check/{systemName}")}),
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
                        and (alives_at is None or entry.alive_at(alives_at))]
        matching.sort(key=lambda entry: entry.system_name)
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

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                authorization = self.headers.get("Authorization")
                with fake._lock:
                    fake.calls.append(Call(self.command, self.path, authorization, body))
                path = urlsplit(self.path).path
                origin = f"{self.command} {path}"
                if fake.fail_with is not None:
                    status = fake.fail_with
                    return self._send(status, error_body(status, "INTERNAL_SERVER_ERROR",
                                                         "Broken", origin))
                if fake.refuse_with is not None:
                    status = fake.refuse_with
                    return self._send(status, error_body(status, *REFUSALS[status], origin))
                if declared_identity(authorization) is None:
                    return self._send(401, error_body(401, "AUTH", "Invalid authorization "
                                                      "header", origin))
                if self.command == "GET" and path.startswith(CHECK):
                    return self._send(*fake.check(unquote(path[len(CHECK):])))
                if self.command == "POST" and path == QUERY:
                    return self._send(*fake.query(body))
                self._send(404, error_body(404, "DATA_NOT_FOUND", "Not found", origin))

            do_POST = do_GET = do_DELETE = _serve

            def _send(self, status: int, body: Any) -> None:
                content = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


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
