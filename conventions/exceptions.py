"""The exceptions apps raise; each carries its HTTP status and Arrowhead `exceptionType`.
`api.errors.exception_handler` turns them into the error envelope. This module imports no
framework code, so that any module (conventions, models, services) can use it.
"""


class ArrowheadError(Exception):
    status_code = 500
    exception_type = "ARROWHEAD"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidParameter(ArrowheadError):
    status_code = 400
    exception_type = "INVALID_PARAMETER"


class AuthError(ArrowheadError):
    status_code = 401
    exception_type = "AUTH"


class Forbidden(ArrowheadError):
    status_code = 403
    exception_type = "FORBIDDEN"


class DataNotFound(ArrowheadError):
    status_code = 404
    exception_type = "DATA_NOT_FOUND"


class Locked(ArrowheadError):
    status_code = 423
    exception_type = "LOCKED"


class InternalServerError(ArrowheadError):
    status_code = 500
    exception_type = "INTERNAL_SERVER_ERROR"


class ExternalServerError(ArrowheadError):
    status_code = 503
    exception_type = "EXTERNAL_SERVER_ERROR"


class OperationDependentError(Exception):
    """An error whose answer depends on the operation it interrupted (e.g. an identity that
    cannot be verified: 503 for pull, 401 elsewhere). `api.errors.exception_handler` asks
    it for the ArrowheadError to answer with."""

    def resolve(self, view: object, method: str) -> ArrowheadError:
        raise NotImplementedError
