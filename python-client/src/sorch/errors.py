"""What the client raises: `ClientError` for every failure worth one line to a user, and its
kind `ServiceError` for an error answer of the service, with the fields of its error envelope
(`{errorMessage, errorCode, exceptionType, origin}`, docs/errors.md of the service)."""
import json
from typing import Any


class ClientError(Exception):
    """A failure worth one line to the user: the service or the broker could not be reached,
    an answer could not be read, or (as `ServiceError`) the service refused the request."""


class ServiceError(ClientError):
    """An error answer (HTTP status 4xx or 5xx). From the service, `error_message`,
    `error_code`, `exception_type` and `origin` are its envelope's fields; from something else
    in between (a proxy's page) only `status` is known and `error_message` holds the start of
    the body."""

    def __init__(self, status: int, *, error_message: str, error_code: int | None = None,
                 exception_type: str | None = None, origin: str | None = None,
                 reason: str = "") -> None:
        self.status = status
        self.error_message = error_message
        self.error_code = error_code
        self.exception_type = exception_type
        self.origin = origin
        self.reason = reason
        super().__init__(self.describe())

    @classmethod
    def from_answer(cls, status: int, reason: str, body: str) -> "ServiceError":
        """The error of an answer with `status` and `body`: the envelope's fields when the
        body is one, else the body's start (whitespace folded)."""
        envelope: Any = None
        try:
            envelope = json.loads(body)
        except ValueError:
            pass
        if not isinstance(envelope, dict) or not isinstance(envelope.get("errorMessage"), str):
            return cls(status, error_message=" ".join(body.split())[:200], reason=reason)
        code = envelope.get("errorCode")
        return cls(status, error_message=envelope["errorMessage"],
                   error_code=code if isinstance(code, int) else None,
                   exception_type=_text_or_none(envelope.get("exceptionType")),
                   origin=_text_or_none(envelope.get("origin")), reason=reason)

    def describe(self) -> str:
        """`<status> <exceptionType>: <errorMessage> (<origin>)` for an envelope,
        `<status> <reason>: <body's start>` for anything else."""
        if self.exception_type is None:
            return f"{self.status} {self.reason}: {self.error_message}".rstrip(": ")
        origin = f" ({self.origin})" if self.origin else ""
        return f"{self.status} {self.exception_type}: {self.error_message}{origin}"


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None
