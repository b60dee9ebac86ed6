"""Request headers and assertions shared by the API tests."""
from collections.abc import Callable
from typing import Any

NO_MANAGEMENT_PERMISSION = "Requester has no management permission"


def as_system(name: str) -> dict[str, str]:
    """Headers declaring a system identity (AUTHENTICATION_POLICY=declared)."""
    return {"HTTP_AUTHORIZATION": f"Bearer SYSTEM//{name}"}


def with_token(token: str) -> dict[str, str]:
    """Headers presenting an identity token (AUTHENTICATION_POLICY=token)."""
    return {"HTTP_AUTHORIZATION": f"Bearer IDENTITY-TOKEN//{token}"}


SYSOP = as_system("Sysop")


def assert_error(response, status: int, exception_type: str, message: str, origin: str) -> None:
    """The response is the error envelope with exactly these values."""
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    assert response.json() == {
        "errorMessage": message,
        "errorCode": status,
        "exceptionType": exception_type,
        "origin": origin,
    }


def assert_refused(send: Callable[[], Any], message: str, origin: str, *,
                   state: Callable[[], Any], status: int = 400,
                   exception_type: str = "INVALID_PARAMETER"):
    """Send the request (`send()`), check that it is refused with exactly this envelope and
    that `state()` reads the same after it as before; returns the response. The snapshot is
    taken here, before the request: one passed in as an argument would be evaluated after the
    request and compare the state with itself. `state` is required: a refusal test that
    reads no state would not notice a half-written request."""
    before = state()
    response = send()
    assert_error(response, status, exception_type, message, origin)
    assert state() == before
    return response


def assert_forbidden(response, origin: str) -> None:
    """A management request of a system without management permission."""
    assert_error(response, 403, "FORBIDDEN", NO_MANAGEMENT_PERMISSION, origin)


def assert_unauthenticated(response, origin: str,
                           message: str = "Invalid authorization header") -> None:
    """A 401 envelope that asks for a bearer identity."""
    assert_error(response, 401, "AUTH", message, origin)
    assert response["WWW-Authenticate"] == "Bearer"
