"""Client of an Arrowhead Authentication system, for `AUTHENTICATION_POLICY=outsourced`
(SPEC §2, reference-dynamic §13).

A caller's identity token is checked with `identity-verify`, which the Authentication system
only answers to a logged-in system; so this service logs in as SYSTEM_NAME lazily, keeps that
session per process and renews it before it lapses. Verification answers are cached briefly so
that a busy consumer does not cost one round trip per request.
"""
import datetime as dt
import hashlib
import http.client
import json
import logging
import math
import threading
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.cache import cache

from conventions.names import normalize_system_name
from observability.metrics import outbound_call

logger = logging.getLogger("serviceorchestration.auth")

LOGIN = "identity-login"
VERIFY = "identity-verify"
# Renew our session this long before it expires, so that no verify goes out with a token the
# Authentication system is about to drop (the Java clients keep a similar margin).
RENEWAL_MARGIN = dt.timedelta(seconds=60)
_CACHE_PREFIX = "outsourced-identity:"

# Proxy variables are ignored: the Authentication system is a peer in the local cloud, and a
# proxy must never see identity tokens.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass(frozen=True)
class VerifiedIdentity:
    name: str          # normalized system name
    is_operator: bool  # the `sysop` flag of the answer


class AuthenticationUnavailable(Exception):
    """The Authentication system cannot be reached, answers garbage or refuses our login, so
    no caller can be verified: the caller is not at fault."""


@dataclass(frozen=True)
class _Answer:
    status: int
    body: Any  # parsed JSON of a 2xx answer; None otherwise


@dataclass(frozen=True)
class _Verification:
    identity: VerifiedIdentity | None
    expires_at: dt.datetime | None  # of the caller's session, when the answer names it


# --- where the Authentication system is -----------------------------------------------------

# Today's layout of the reference (§13.1): basePath `/authentication/identity`, operations
# relative to it; used when AUTHENTICATION_SERVICE_URL is set or the SR names no operations.
_BASE_PATH = "/authentication/identity"
_OPERATION_PATHS = {LOGIN: "/login", VERIFY: "/verify"}
_SCHEMES = {"generic_http": "http", "generic_https": "https"}


@dataclass(frozen=True)
class _Location:
    origin: str               # scheme://host:port
    paths: dict[str, str]     # operation -> absolute path


def _configured_location() -> _Location:
    return _Location(settings.AUTHENTICATION_SERVICE_URL,
                     {op: _BASE_PATH + path for op, path in _OPERATION_PATHS.items()})


def _discover() -> _Location:
    """The first generic_http(s) interface of an `identity` instance in the ServiceRegistry,
    asked without our identity (we have none before login: reference-dynamic §13.2)."""
    from serviceregistry.client import (
        ServiceRegistryUnavailable,
        service_lookup_by_definition,
    )

    if not settings.SERVICE_REGISTRY_URL:
        raise AuthenticationUnavailable("neither AUTHENTICATION_SERVICE_URL nor "
                                        "SERVICE_REGISTRY_URL is set")
    try:
        entries = service_lookup_by_definition(["identity"], authenticated=False)
    except ServiceRegistryUnavailable as error:
        raise AuthenticationUnavailable(f"identity lookup failed: {error.message}") from error
    for entry in entries:
        interfaces = entry.get("interfaces")
        for interface in interfaces if isinstance(interfaces, list) else []:
            location = _http_location(interface)
            if location is not None:
                logger.info("Found the Authentication system at %s", location.origin)
                return location
    raise AuthenticationUnavailable("the ServiceRegistry knows no identity service with an "
                                    "HTTP interface")


def _http_location(interface: object) -> _Location | None:
    """`<protocol>://<accessAddresses[0]>:<accessPort>` and basePath + operation paths
    (reference-dynamic §11.2); None for an interface we cannot call."""
    if not isinstance(interface, dict) or not isinstance(interface.get("properties"), dict):
        return None
    scheme, properties = _SCHEMES.get(interface.get("templateName")), interface["properties"]
    addresses, port = properties.get("accessAddresses"), properties.get("accessPort")
    if scheme is None or not isinstance(addresses, list) or not addresses \
            or not isinstance(addresses[0], str) or not addresses[0].strip() \
            or type(port) is not int or not 0 < port < 65536:
        return None
    host = addresses[0].strip()
    host = f"[{host}]" if ":" in host else host
    base = properties.get("basePath")
    base = base.rstrip("/") if isinstance(base, str) else _BASE_PATH
    operations = properties.get("operations")
    operations = operations if isinstance(operations, dict) else {}
    paths = {}
    for operation, default in _OPERATION_PATHS.items():
        named = operations.get(operation)
        path = named.get("path") if isinstance(named, dict) else None
        paths[operation] = base + (path.rstrip("/") if isinstance(path, str) and path
                                   else default)
    return _Location(f"{scheme}://{host}:{port}", paths)


class _Locator:
    """The discovered location, kept per process until a call to it fails to connect (the
    Authentication system moved); AUTHENTICATION_SERVICE_URL, when set, wins without a lookup."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._found: _Location | None = None

    def location(self) -> _Location:
        if settings.AUTHENTICATION_SERVICE_URL:
            return _configured_location()
        with self._lock:
            if self._found is None:
                self._found = _discover()
            return self._found

    def forget(self) -> None:
        with self._lock:
            self._found = None


_locator = _Locator()


# --- HTTP -----------------------------------------------------------------------------------

def _url(operation: str, suffix: str = "") -> str:
    location = _locator.location()
    return location.origin + location.paths[operation] + suffix


def _exchange(operation: str, request: urllib.request.Request) -> _Answer:
    """Send one request; every way of not getting a usable answer becomes
    AuthenticationUnavailable, except error statuses below 500, which the caller judges."""
    timeout = settings.AUTHENTICATION_TIMEOUT_SECONDS
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as error:
        error.close()
        status, raw = error.code, b""
    except urllib.error.URLError as error:
        _locator.forget()
        raise _unreachable(operation, error.reason, timeout) from error
    except (OSError, http.client.HTTPException) as error:
        _locator.forget()
        raise _unreachable(operation, error, timeout) from error
    if status >= 500:
        raise AuthenticationUnavailable(f"{operation} answered HTTP {status}")
    if not 200 <= status < 300:
        return _Answer(status, None)
    return _Answer(status, _json(operation, raw))


def _unreachable(operation: str, reason: object, timeout: float) -> AuthenticationUnavailable:
    """In the OS's words ('Connection refused'), without errno dressing or addresses."""
    if isinstance(reason, TimeoutError):
        return AuthenticationUnavailable(f"{operation} timed out after {timeout:g} s")
    if isinstance(reason, OSError) and reason.strerror:
        return AuthenticationUnavailable(f"{operation} failed: {reason.strerror}")
    return AuthenticationUnavailable(f"{operation} failed: {reason or type(reason).__name__}")


def _body(operation: str, answer: _Answer) -> dict[str, Any]:
    """The JSON object of a 200 answer; anything else means the peer is not usable."""
    if answer.status != 200:
        raise AuthenticationUnavailable(f"{operation} answered HTTP {answer.status}")
    if not isinstance(answer.body, dict):
        raise AuthenticationUnavailable(f"{operation} answered an unexpected body")
    return answer.body


def _json(operation: str, raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError as error:
        raise AuthenticationUnavailable(f"{operation} answered malformed JSON") from error


def _timestamp(operation: str, value: object) -> dt.datetime:
    """An ISO-8601 instant of an answer; the reference writes UTC with a `Z`."""
    try:
        moment = dt.datetime.fromisoformat(value)  # type: ignore[arg-type]
    except (TypeError, ValueError) as error:
        raise AuthenticationUnavailable(
            f"{operation} answered an invalid expirationTime") from error
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


# --- our session ----------------------------------------------------------------------------

@dataclass(frozen=True)
class _Session:
    token: str
    expires_at: dt.datetime

    def is_fresh(self) -> bool:
        return _now() < self.expires_at - RENEWAL_MARGIN


@outbound_call("Authentication", "identity/login")
def _login() -> _Session:
    body = {"systemName": settings.SYSTEM_NAME,
            "credentials": {"password": settings.AUTHENTICATION_PASSWORD}}
    request = urllib.request.Request(
        _url(LOGIN), data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json", "Accept": "application/json"})
    answer = _exchange(LOGIN, request)
    if answer.status == 401:
        raise AuthenticationUnavailable(
            f"{LOGIN} refused our credentials (system {settings.SYSTEM_NAME})")
    body = _body(LOGIN, answer)
    token = body.get("token")
    if not isinstance(token, str) or not token:
        raise AuthenticationUnavailable(f"{LOGIN} answered no token")
    logger.info("Logged in to the Authentication system as %s", settings.SYSTEM_NAME)
    return _Session(token, _timestamp(LOGIN, body.get("expirationTime")))


class _Login:
    """Our one session with the Authentication system in this process. Logging in happens
    under a lock, so that concurrent requests do not each log in (every login replaces the
    previous session, which would invalidate the token the other threads hold)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._session: _Session | None = None

    def token(self) -> str:
        with self._lock:
            if self._session is None or not self._session.is_fresh():
                self._session = _login()
            return self._session.token

    def renew(self, rejected: str) -> str:
        """A fresh token after `rejected` was refused; no second login when another thread
        already replaced it."""
        with self._lock:
            if self._session is None or self._session.token == rejected:
                self._session = None  # refused: not to be reused even if login fails
                self._session = _login()
            return self._session.token

    def forget(self) -> None:
        with self._lock:
            self._session = None


_login_state = _Login()


def own_identity_token(rejected: str | None = None) -> str:
    """Our identity token, for calls this service makes to other systems (the ServiceRegistry);
    a new one when `rejected` (the token a peer just refused) is still the current one.
    Raises AuthenticationUnavailable."""
    return _login_state.token() if rejected is None else _login_state.renew(rejected)


def reset_login() -> None:
    """Forget our session and where the Authentication system is, so that the next
    verification finds it and logs in again (e.g. after the settings changed; tests use it to
    start clean)."""
    _login_state.forget()
    _locator.forget()


# --- verification ---------------------------------------------------------------------------

def _verify_request(token: str, ours: str) -> urllib.request.Request:
    return urllib.request.Request(
        _url(VERIFY, f"/{urllib.parse.quote(token, safe='')}"), method="GET",
        headers={"Accept": "application/json",
                 "Authorization": f"Bearer IDENTITY-TOKEN//{ours}"})


@outbound_call("Authentication", "identity/verify")
def _ask(token: str) -> _Answer:
    """identity-verify, with one re-login if our own token was refused (the Authentication
    system restarted or someone closed our session)."""
    ours = _login_state.token()
    answer = _exchange(VERIFY, _verify_request(token, ours))
    if answer.status == 401:
        answer = _exchange(VERIFY, _verify_request(token, _login_state.renew(ours)))
    if answer.status == 401:
        raise AuthenticationUnavailable(f"{VERIFY} refused our identity token")
    return answer


def _interpret(answer: _Answer) -> _Verification:
    if answer.status == 400:
        # The Authentication system could not even read the token: not a token it issued.
        return _Verification(None, None)
    body = _body(VERIFY, answer)
    verified = body.get("verified")
    if not isinstance(verified, bool):
        raise AuthenticationUnavailable(f"{VERIFY} answered no verified flag")
    if not verified:
        return _Verification(None, None)
    return _verified(body)


def _verified(body: dict[str, Any]) -> _Verification:
    name = body.get("systemName")
    name = normalize_system_name(name) if isinstance(name, str) else None
    sysop = body.get("sysop", False)
    if name is None or not isinstance(sysop, bool):
        raise AuthenticationUnavailable(f"{VERIFY} answered an unexpected body")
    expiration = body.get("expirationTime")
    expires_at = None if expiration is None else _timestamp(VERIFY, expiration)
    if expires_at is not None and expires_at <= _now():
        # The Authentication system verifies sessions its cleaner has not removed yet (quirk
        # Q8); an expired session identifies nobody.
        return _Verification(None, None)
    return _Verification(VerifiedIdentity(name, sysop), expires_at)


# --- cache ----------------------------------------------------------------------------------

def _cache_key(token: str) -> str:
    """Keyed by a hash: the cache must not become a store of usable tokens."""
    return _CACHE_PREFIX + hashlib.sha256(token.encode()).hexdigest()


def _cache_seconds(verification: _Verification) -> int:
    """AUTHENTICATION_CACHE_SECONDS, cut short by the caller's session expiry: a cached answer
    must not keep an expired session alive."""
    seconds = float(settings.AUTHENTICATION_CACHE_SECONDS)
    if verification.expires_at is not None:
        seconds = min(seconds, (verification.expires_at - _now()).total_seconds())
    return max(0, math.floor(seconds))


def _remember(key: str, verification: _Verification) -> None:
    seconds = _cache_seconds(verification)
    if seconds <= 0:
        return
    identity = verification.identity
    entry = ({"verified": False} if identity is None else
             {"verified": True, "name": identity.name, "operator": identity.is_operator})
    cache.set(key, entry, timeout=seconds)


def _recalled(key: str) -> tuple[bool, VerifiedIdentity | None]:
    entry = cache.get(key)
    if not isinstance(entry, dict):
        return False, None
    if not entry.get("verified"):
        return True, None
    return True, VerifiedIdentity(entry["name"], entry["operator"])


def identity_token_verify_remote(token: str) -> VerifiedIdentity | None:
    """The system a caller's identity token belongs to, by the Authentication system; None
    when it does not verify the token. Raises AuthenticationUnavailable when it cannot tell."""
    key = _cache_key(token)
    known, identity = _recalled(key)
    if known:
        return identity
    verification = _interpret(_ask(token))
    _remember(key, verification)
    return verification.identity
