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
from typing import Any

from django.conf import settings
from django.core.cache import cache

from clients import authentication
from clients.authentication import VERIFY, Answer, AuthenticationUnavailable, answer_object
from conventions.names import normalize_system_name

__all__ = ["AuthenticationUnavailable", "VerifiedIdentity", "identity_token_verify_remote",
           "own_identity_token", "reset_login"]

# Renew our session this long before it expires, so that no verify goes out with a token the
# Authentication system is about to drop (the Java clients keep a similar margin).
RENEWAL_MARGIN = dt.timedelta(seconds=60)
_CACHE_PREFIX = "outsourced-identity:"


@dataclass(frozen=True)
class VerifiedIdentity:
    name: str          # normalized system name
    is_operator: bool  # the `sysop` flag of the answer


@dataclass(frozen=True)
class _Verification:
    identity: VerifiedIdentity | None
    expires_at: dt.datetime | None  # of the caller's session, when the answer names it


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


# --- our session ----------------------------------------------------------------------------

@dataclass(frozen=True)
class _Session:
    token: str
    expires_at: dt.datetime

    def is_fresh(self) -> bool:
        return _now() < self.expires_at - RENEWAL_MARGIN


def _login() -> _Session:
    login = authentication.identity_login()
    return _Session(login.token, login.expires_at)


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

def _interpret(answer: Answer) -> _Verification:
    if answer.status == 400:
        # The Authentication system could not even read the token: not a token it issued.
        return _Verification(None, None)
    body = answer_object(VERIFY, answer)
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
    expires_at = None if expiration is None else authentication.timestamp(VERIFY, expiration)
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
    verification = _interpret(authentication.identity_verify(token, own_identity_token))
    _remember(key, verification)
    return verification.identity
