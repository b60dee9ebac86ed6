"""What the fake Arrowhead systems of the tests (ServiceRegistry, ConsumerAuthorization,
Blacklist) share: a JSON server on 127.0.0.1 that records every request, identifies the caller
(the declared policy by default), can be made slow (`delay` seconds) or broken (`fail_with`:
every answer that status with the Java error envelope), and answers with the Java DTOs the
subclass builds in `answer`."""
import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

from tests.endpoints import serve_on_loopback, server_url, stop_serving
from tests.fake_authentication import error_body, filter_refusal


@dataclass(frozen=True)
class Call:
    method: str
    path: str  # with the query string
    authorization: str | None
    body: Any  # parsed JSON; None without a body


def declared_identity(authorization: str | None) -> str | None:
    prefix = "Bearer SYSTEM//"
    if authorization and authorization.startswith(prefix):
        return authorization[len(prefix):] or None
    return None


class FakeSystem:
    def __init__(self, port: int = 0) -> None:
        self.fail_with: int | None = None
        self.delay = 0.0
        self.calls: list[Call] = []
        self._lock = threading.RLock()  # answers may take it again
        self._server, self._thread = serve_on_loopback(self._handler_class(), port)

    @property
    def url(self) -> str:
        return server_url(self._server)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def stop(self) -> None:
        stop_serving(self._server, self._thread)

    def calls_to(self, path: str) -> list[Call]:
        with self._lock:
            return [call for call in self.calls if urlsplit(call.path).path.startswith(path)]

    def http_interfaces(self, base_path: str,
                        operations: dict[str, tuple[str, str]]) -> list[dict[str, Any]]:
        """A generic_http interface of this server as the reference registers it in the
        ServiceRegistry; `operations` maps a name to (method, path)."""
        return [{"templateName": "generic_http", "protocol": "http", "policy": "NONE",
                 "properties": {"accessAddresses": ["127.0.0.1"], "accessPort": self.port,
                                "basePath": base_path,
                                "operations": {name: {"method": method, "path": path}
                                               for name, (method, path) in operations.items()}}}]

    # --- what subclasses decide -------------------------------------------------------------

    def identify(self, authorization: str | None) -> str | None:
        """The caller's system name; None: 401."""
        return declared_identity(authorization)

    def anonymous_allowed(self, path: str, body: Any) -> bool:
        return False

    def refusal(self, origin: str) -> tuple[int, Any] | None:
        """An answer that replaces every other one (after `fail_with`); None: answer."""
        return None

    def answer(self, method: str, path: str, caller: str | None, body: Any) -> tuple[int, Any]:
        """(status, JSON body or None) of one request; `path` keeps its query string. Called
        under the lock."""
        raise NotImplementedError

    # --- HTTP -------------------------------------------------------------------------------

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
                time.sleep(fake.delay)
                origin = f"{self.command} {urlsplit(self.path).path}"
                if fake.fail_with is not None:
                    status = fake.fail_with
                    return self._send(status, error_body(status, "INTERNAL_SERVER_ERROR",
                                                         "Broken", origin))
                refusal = fake.refusal(origin)
                if refusal is not None:
                    return self._send(*refusal)
                caller = fake.identify(authorization)
                if caller is None and not fake.anonymous_allowed(self.path, body):
                    return self._send(401, filter_refusal(authorization,
                                                          "Invalid authorization header"))
                with fake._lock:
                    answer = fake.answer(self.command, self.path, caller, body)
                self._send(*answer)

            do_POST = do_GET = do_PUT = do_DELETE = _serve

            def _send(self, status: int, body: Any) -> None:
                content = b"" if body is None else json.dumps(body).encode()
                self.send_response(status)
                if body is not None:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                try:
                    self.wfile.write(content)
                except BrokenPipeError:
                    pass  # the caller gave up waiting (timeout tests)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


def not_found(method: str, path: str) -> tuple[int, Any]:
    return 404, error_body(404, "DATA_NOT_FOUND", "Not found",
                           f"{method} {urlsplit(path).path}")


def without_nulls(value: Any) -> Any:
    """`value` without its null fields, at every depth: the Java systems leave them out."""
    if isinstance(value, dict):
        return {key: without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [without_nulls(item) for item in value]
    return value
