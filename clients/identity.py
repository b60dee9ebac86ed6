"""Our identity on every call to another system, added here and nowhere else, the way the
Java clients send it (audit §0.1): under `declared` (and our own `token` policy, which the
other systems do not know) `Bearer SYSTEM//<SYSTEM_NAME>`; under `outsourced`
`Bearer IDENTITY-TOKEN//<token>` from our login at the Authentication system; under
`certificate` the TLS client certificate (clients.exchange) alone.

Our identity token is identity's to keep (identity/outsourced.py logs in and renews), and
identity is above this package: it gives its getter here as a callable
(`identity_token_source`), when its app is ready and in the gunicorn master before the
registration, which runs without Django's apps.
"""
from collections.abc import Callable
from typing import Any

from django.conf import settings

from clients.errors import AuthenticationUnavailable, ServiceRegistryUnavailable

# Our identity token; a new one when given the token a system just refused (if it is still
# the current one). Raises AuthenticationUnavailable.
TokenSource = Callable[[str | None], str]

_source: TokenSource | None = None


def identity_token_source(source: TokenSource) -> None:
    """Where our identity token comes from under `outsourced`."""
    global _source
    _source = source


def identity_header(rejected: str | None = None) -> str | None:
    """Our Authorization header; under `outsourced` a fresh token when `rejected` was refused.
    Raises ServiceRegistryUnavailable when there is no token (the ServiceRegistry is the first
    system that needs it; other systems' calls say whose call it was)."""
    policy = settings.AUTHENTICATION_POLICY
    if policy == "certificate":
        return None
    if policy == "outsourced":
        try:
            if _source is None:
                raise AuthenticationUnavailable("nothing gives this process its identity token")
            return f"Bearer IDENTITY-TOKEN//{_source(rejected)}"
        except AuthenticationUnavailable as error:
            raise ServiceRegistryUnavailable(
                f"No identity token for the ServiceRegistry: {error}") from error
    return f"Bearer SYSTEM//{settings.SYSTEM_NAME}"


def as_us(send: Callable[[str | None], Any]) -> Any:
    """`send` with our Authorization header (its answer has a `status`); under `outsourced`
    once more with a new token if ours was refused (our session is replaced whenever another
    process of this system logs in)."""
    authorization = identity_header()
    answer = send(authorization)
    if answer.status == 401 and settings.AUTHENTICATION_POLICY == "outsourced" and authorization:
        answer = send(identity_header(authorization.rpartition("//")[2]))
    return answer
