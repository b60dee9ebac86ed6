"""Request headers and assertions shared by the API tests."""


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
