"""The `outsourced` authentication policy (SPEC §2, reference-dynamic §13): our session with
the Arrowhead Authentication system, and who a caller's identity token belongs to.

A caller's identity token is checked with `identity-verify`, which the Authentication system
only answers to a logged-in system; so this service logs in as SYSTEM_NAME lazily, keeps that
session per process and renews it before it lapses. The same session gives our identity token
to every call we make to another system (`own_identity_token`, given to clients.identity).
Verification answers are cached briefly so that a busy consumer does not cost one round trip
per request. The calls themselves are clients.authentication.
"""
import datetime as dt
import hashlib
import math
import threading
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache

from clients import authentication
from clients.authentication import VERIFY, Answer, AuthenticationUnavailable, answer_object
from conventions.names import normalize_system_name

# Renew our session this long before it expires, so that no verify goes out with a token the
# Authentication system is about to drop (the Java clients keep a similar margin).
RENEWAL_MARGIN = dt.timedelta(seconds=60)
_CACHE_PREFIX = "outsourced-identity:"


@dataclass(frozen=True)
class VerifiedIdentity:
    name: str          # normalized system name
    is_operator: bool  # the `sysop` flag of the answer


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


# --- our session ----------------------------------------------------------------------------

class _Login:
    """Our one session with the Authentication system in this process. Logging in happens
    under a lock, so that concurrent requests do not each log in (every login replaces the
    previous session, which would invalidate the token the other threads hold)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._session: authentication.Login | None = None

    def token(self) -> str:
        with self._lock:
            if self._session is None or _now() >= self._session.expires_at - RENEWAL_MARGIN:
                self._session = authentication.identity_login()
            return self._session.token

    def renew(self, rejected: str) -> str:
        """A fresh token after `rejected` was refused; no second login when another thread
        already replaced it."""
        with self._lock:
            if self._session is None or self._session.token == rejected:
                self._session = None  # refused: not to be reused even if login fails
                self._session = authentication.identity_login()
            return self._session.token

    def forget(self) -> None:
        with self._lock:
            self._session = None


_login_state = _Login()


def own_identity_token(rejected: str | None = None) -> str:
    """Our identity token, for calls this service makes to other systems (clients.identity);
    a new one when `rejected` (the token a peer just refused) is still the current one.
    Raises AuthenticationUnavailable."""
    return _login_state.token() if rejected is None else _login_state.renew(rejected)


def reset_login() -> None:
    """Forget our session and where the Authentication system is, so that the next
    verification finds it and logs in again (e.g. after the settings changed; tests use it to
    start clean)."""
    _login_state.forget()
    authentication.forget_location()


# --- verification ---------------------------------------------------------------------------

def _interpret(answer: Answer) -> tuple[VerifiedIdentity | None, dt.datetime | None]:
    """Who the token identifies (None: nobody), and when the caller's session expires when
    the answer names it."""
    if answer.status == 400:
        # The Authentication system could not even read the token: not a token it issued.
        return None, None
    body = answer_object(VERIFY, answer)
    verified = body.get("verified")
    if not isinstance(verified, bool):
        raise AuthenticationUnavailable(f"{VERIFY} answered no verified flag")
    if not verified:
        return None, None
    name = body.get("systemName")
    name = normalize_system_name(name) if isinstance(name, str) else None
    sysop = body.get("sysop", False)
    if name is None or not isinstance(sysop, bool):
        raise AuthenticationUnavailable(f"{VERIFY} answered an unexpected body")
    expiration = body.get("expirationTime")
    expires_at = None if expiration is None else authentication.timestamp(VERIFY, expiration)
    if expires_at is not None and expires_at <= _now():
        # The Authentication system verifies sessions its cleaner has not removed yet (quirk
        # Q8); an expired session identifies nobody.
        return None, None
    return VerifiedIdentity(name, sysop), expires_at


def identity_token_verify_remote(token: str) -> VerifiedIdentity | None:
    """The system a caller's identity token belongs to, by the Authentication system; None
    when it does not verify the token. Raises AuthenticationUnavailable when it cannot tell.
    Answers are kept for AUTHENTICATION_CACHE_SECONDS, cut short by the caller's session
    expiry (a cached answer must not keep an expired session alive), keyed by a hash (the
    cache must not become a store of usable tokens)."""
    key = _CACHE_PREFIX + hashlib.sha256(token.encode()).hexdigest()
    entry = cache.get(key)
    if isinstance(entry, dict):
        return VerifiedIdentity(entry["name"], entry["operator"]) if entry.get("verified") else None
    identity, expires_at = _interpret(authentication.identity_verify(token, own_identity_token))
    seconds = float(settings.AUTHENTICATION_CACHE_SECONDS)
    if expires_at is not None:
        seconds = min(seconds, (expires_at - _now()).total_seconds())
    if math.floor(seconds) > 0:
        cache.set(key, {"verified": False} if identity is None else
                  {"verified": True, "name": identity.name, "operator": identity.is_operator},
                  timeout=math.floor(seconds))
    return identity
