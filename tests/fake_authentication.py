"""A small Arrowhead Authentication system on 127.0.0.1 (reference-dynamic §13.1), so that the
`outsourced` policy is tested over real HTTP: identity-login and identity-verify only, held to
tests/recordings/authentication.json (tests/interop): a login without a password is 400, a
logged-in system's token verifies, the filter's 401s name no origin."""
import datetime as dt
import json
import threading
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import unquote

from tests.endpoints import serve_on_loopback, server_url, stop_serving

VERIFY_PREFIX = "/authentication/identity/verify/"
LOGIN_PATH = "/authentication/identity/login"


def iso(moment: dt.datetime) -> str:
    """UTC with milliseconds and a `Z`, the way the Java reference writes an Instant."""
    return moment.astimezone(dt.timezone.utc).isoformat(timespec="milliseconds")[:-6] + "Z"


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


@dataclass(frozen=True)
class Session:
    system_name: str
    sysop: bool
    login_time: dt.datetime
    expiration_time: dt.datetime

    def is_live(self) -> bool:
        return utc_now() < self.expiration_time


class FakeAuthentication:
    """Systems log in with the password given in `passwords`, for `token_seconds`; logging in
    again replaces the system's session, as in the reference. Caller identities to verify are
    registered directly with `add_identity`. `fail_with` makes every answer that status (and
nothing else happen);
    `stop()` closes the port. Like the reference, verify does not check the verified session's
    expiry (quirk Q8)."""

    def __init__(self, passwords: dict[str, str], token_seconds: float = 600) -> None:
        self.passwords = dict(passwords)
        self.token_seconds = token_seconds
        self.fail_with: int | None = None
        self.logins = 0
        self.verify_headers: list[str | None] = []  # Authorization of every verify call
        self._lock = threading.Lock()
        self._sessions: dict[str, Session] = {}       # token -> session of a logged-in system
        self._identities: dict[str, Session] = {}     # token -> caller identity to verify
        self._server, self._thread = serve_on_loopback(self._handler_class(), 0)

    @property
    def url(self) -> str:
        return server_url(self._server)

    @property
    def verifications(self) -> int:
        return len(self.verify_headers)

    def add_identity(self, token: str, system_name: str, sysop: bool = False,
                     expires_in: float = 600) -> None:
        now = utc_now()
        with self._lock:
            self._identities[token] = Session(system_name, sysop, now,
                                              now + dt.timedelta(seconds=expires_in))

    def session_token(self, system_name: str) -> str | None:
        """The token of the system's current session."""
        with self._lock:
            return next((token for token, session in self._sessions.items()
                         if session.system_name == system_name), None)

    def close_sessions(self) -> None:
        """Forget every login, as a restart of the Authentication system would."""
        with self._lock:
            self._sessions.clear()

    def stop(self) -> None:
        stop_serving(self._server, self._thread)

    # --- operations -------------------------------------------------------------------------

    def login(self, body: Any) -> tuple[int, dict[str, Any]]:
        name = body.get("systemName") if isinstance(body, dict) else None
        credentials = body.get("credentials") if isinstance(body, dict) else None
        password = credentials.get("password") if isinstance(credentials, dict) else None
        if not password:
            return 400, error_body(400, "INVALID_PARAMETER", "Missing credentials",
                                   f"POST {LOGIN_PATH}")
        if name not in self.passwords or password != self.passwords[name]:
            return 401, error_body(401, "AUTH", "Invalid name and/or credentials",
                                   f"POST {LOGIN_PATH}")
        now = utc_now()
        token = str(uuid.uuid4())
        session = Session(name, False, now, now + dt.timedelta(seconds=self.token_seconds))
        with self._lock:
            self.logins += 1
            self._sessions = {key: value for key, value in self._sessions.items()
                              if value.system_name != name}
            self._sessions[token] = session
        return 200, {"token": token, "expirationTime": iso(session.expiration_time)}

    def verify(self, path: str, authorization: str | None) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.verify_headers.append(authorization)
            caller = self._caller(authorization)
            token = unquote(path[len(VERIFY_PREFIX):])
            identity = self._identities.get(token) or self._sessions.get(token)
        if caller is None:
            return 401, filter_refusal(authorization, "Invalid identity token")
        if identity is None:
            return 200, {"verified": False}
        return 200, {"verified": True, "systemName": identity.system_name,
                     "sysop": identity.sysop, "loginTime": iso(identity.login_time),
                     "expirationTime": iso(identity.expiration_time)}

    def _caller(self, authorization: str | None) -> Session | None:
        prefix = "Bearer IDENTITY-TOKEN//"
        if not authorization or not authorization.startswith(prefix):
            return None
        session = self._sessions.get(authorization[len(prefix):])
        return session if session and session.is_live() else None

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if fake.fail_with is not None:
                    return self._fail()
                if self.path != LOGIN_PATH:
                    return self._answer(404, error_body(404, "DATA_NOT_FOUND", "Not found",
                                                        f"POST {self.path}"))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                self._answer(*fake.login(body))

            def do_GET(self) -> None:
                if fake.fail_with is not None:
                    return self._fail()
                if not self.path.startswith(VERIFY_PREFIX):
                    return self._answer(404, error_body(404, "DATA_NOT_FOUND", "Not found",
                                                        f"GET {self.path}"))
                self._answer(*fake.verify(self.path, self.headers.get("Authorization")))

            def _fail(self) -> None:
                status = fake.fail_with or 500
                self._answer(status, error_body(status, "INTERNAL_SERVER_ERROR", "Broken",
                                                f"{self.command} {self.path}"))

            def _answer(self, status: int, body: dict[str, Any]) -> None:
                content = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


def error_body(status: int, exception_type: str, message: str, origin: str) -> dict[str, Any]:
    return {"errorMessage": message, "errorCode": status, "exceptionType": exception_type,
            "origin": origin}


def filter_refusal(authorization: str | None, invalid: str) -> dict[str, Any]:
    """The 401 of a Java system's authentication filter: no origin, and its text says whether
    a header came (`invalid`: the filter's words for one it refuses)."""
    message = invalid if authorization else "No authorization header has been provided"
    return {"errorMessage": message, "errorCode": 401, "exceptionType": "AUTH"}
