"""How another system's failures map to our exceptions (conventions.exceptions), the same for
every system: whatever keeps us from a usable answer is nobody's fault but the cloud's, a 503
EXTERNAL_SERVER_ERROR naming that system (SystemUnavailable and its kinds); a peer's 4xx is
its own refusal, passed on with its status, exceptionType and errorMessage (PeerRefused), so
that 401 and 403 can be passed through as the reference does."""
from typing import Any

from conventions.exceptions import ArrowheadError, ExternalServerError


class Unreachable(Exception):
    """No answer at all: refused, timed out, broken connection (clients.exchange)."""

    def __init__(self, reason: object, timeout: float) -> None:
        # Why, in the OS's words ('Connection refused'), without errno dressing.
        self.timed_out = isinstance(reason, TimeoutError)
        if self.timed_out:
            self.text = f"timed out after {timeout:g} s"
        elif isinstance(reason, OSError) and reason.strerror:
            self.text = reason.strerror
        else:
            self.text = str(reason) or type(reason).__name__
        super().__init__(self.text)


class SystemUnavailable(ExternalServerError):
    """Another system could not be found, reached or understood."""


class ServiceRegistryUnavailable(SystemUnavailable):
    """The ServiceRegistry could not be reached, or did not answer as expected."""


class ServiceRegistryUnreachable(ServiceRegistryUnavailable):
    """No answer at all: refused, timed out, broken connection."""


class AuthenticationUnavailable(SystemUnavailable):
    """The Authentication system cannot be reached, answers garbage or refuses our login, so
    no caller can be verified and we have no identity token: the caller is not at fault."""


class PeerUnavailable(SystemUnavailable):
    """The peer could not be found, reached or understood: nobody's fault but the cloud's."""


class PeerRefused(ArrowheadError):
    """The peer answered 4xx: its status, exceptionType and errorMessage."""

    def __init__(self, status: int, exception_type: str, message: str) -> None:
        super().__init__(message)
        self.status_code = status
        self.exception_type = exception_type


def reason(body: Any) -> str:
    """`: <errorMessage>` of an Arrowhead error envelope, when the answer had one."""
    message = body.get("errorMessage") if isinstance(body, dict) else None
    return f": {message}" if isinstance(message, str) and message else ""


def refused(status: int, body: Any, label: str) -> PeerRefused:
    """A 4xx answer as the peer's refusal, in its own words when it gave them."""
    exception_type = body.get("exceptionType") if isinstance(body, dict) else None
    message = body.get("errorMessage") if isinstance(body, dict) else None
    return PeerRefused(status,
                       exception_type if isinstance(exception_type, str) and exception_type
                       else "ARROWHEAD",
                       message if isinstance(message, str) and message
                       else f"{label} answered HTTP {status}")
