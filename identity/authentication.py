"""Who is asking: the authentication policies of SPEC §2 (AUTHENTICATION_POLICY).

Every API view gets `request.user`, a `Requester` carrying the normalized system name and the
operator flag. Views that need no identity (echo, schema, docs) opt out explicitly with
`authentication_classes = []` and `permission_classes = [AllowAny]`. Whether the requester may
manage is identity/permissions.py.
"""
import functools
import logging
from dataclasses import dataclass, field

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from api.operations import PULL, served_operation
from conventions import names
from conventions.exceptions import (
    ArrowheadError,
    AuthError,
    ExternalServerError,
    Forbidden,
    InvalidParameter,
    OperationDependentError,
)
from conventions.versions import java_split
from identity.certificates import (
    certificate_identity,
    request_certificate,
    server_cloud,
)
from identity.models import User
from identity.outsourced import AuthenticationUnavailable, identity_token_verify_remote
from identity.selectors import identity_token_owner, system_identity

logger = logging.getLogger("serviceorchestration.auth")

OPERATOR_NAME = "Sysop"
# The WSGI environ key that holds the name of the system a request was authenticated as.
REQUESTER_ENVIRON_KEY = "arrowhead.requester"
NO_HEADER = "No authorization header has been provided"
INVALID_HEADER = "Invalid authorization header"

_UNLOADED = object()


@dataclass
class Requester:
    """The authenticated system behind a request."""

    name: str
    is_operator: bool
    _identity: object = field(default=_UNLOADED, repr=False)

    is_authenticated = True
    is_anonymous = False

    @property
    def identity(self) -> User | None:
        """The Django user of this system, if one exists (loaded once, on demand)."""
        if self._identity is _UNLOADED:
            self._identity = system_identity(self.name)
        return self._identity  # type: ignore[return-value]

    def has_perm(self, permission: str) -> bool:
        identity = self.identity
        return bool(identity and identity.is_active and identity.has_perm(permission))


def _bearer_credentials(request: Request, expected_prefix: str) -> str:
    """The value after `Bearer <expected_prefix>//`, split the way the reference splits it."""
    return _credentials(request.META.get("HTTP_AUTHORIZATION", ""), expected_prefix)


def _credentials(header: str, expected_prefix: str) -> str:
    header = names.java_trim(header)
    if not header:
        raise AuthError(NO_HEADER)
    words = header.split(" ")
    if len(words) != 2 or words[0] != "Bearer":
        raise AuthError(INVALID_HEADER)
    parts = java_split(words[1], "//")
    if len(parts) != 2 or parts[0] != expected_prefix:
        raise AuthError(INVALID_HEADER)
    return parts[1]


@functools.lru_cache(maxsize=65_536)
def _declared_name(header: str) -> str:
    """The system a declared-policy header names. Kept per header (a consumer sends the same
    one with every pull); refusals are raised each time, not kept."""
    name = names.normalize_system_name(_credentials(header, "SYSTEM"))
    if name is None:
        raise AuthError(INVALID_HEADER)
    # A malformed name is the request's fault: 400 with the naming message, as the reference
    # answers a pull from `SYSTEM//inv@lid` (docs/decisions.md).
    names.validate_system_name(name)
    return name


@receiver(setting_changed)
def _forget_declared_names(*, setting: str, **kwargs: object) -> None:
    if setting == "NORMALIZATION_MODE":  # tests switch the naming mode
        _declared_name.cache_clear()


def _declared(request: Request) -> Requester:
    name = _declared_name(request.META.get("HTTP_AUTHORIZATION", ""))
    return Requester(name=name, is_operator=name == OPERATOR_NAME)


def _token(request: Request) -> Requester:
    identity = identity_token_owner(_bearer_credentials(request, "IDENTITY-TOKEN"))
    if identity is None:
        raise AuthError(INVALID_HEADER)
    return Requester(name=identity.username, is_operator=identity.is_operator,
                     _identity=identity)


def _valid_name(name: str | None) -> bool:
    """Names vouched for by others (certificates, the Authentication system) must still be
    system names: they end up in createdBy, history and permission checks."""
    try:
        names.validate_system_name(name)
    except InvalidParameter:
        return False
    return True


def _certificate(request: Request) -> Requester:
    """The TLS client certificate, verified by nginx (config/front.py), identifies the
    system; headers are not looked at."""
    url = request.build_absolute_uri(request.path).rstrip("/")
    identity = certificate_identity(request_certificate(request.META))
    if identity is None or not _valid_name(identity.system_name):
        raise AuthError(f"Unauthenticated access attempt: {url}")
    if identity.profile not in ("SYSTEM", "OPERATOR"):
        raise Forbidden(f"Unauthorized access: {url}, invalid certificate type: {identity.profile}")
    if identity.cloud != server_cloud(settings.TLS_CERT_FILE):
        raise Forbidden(f"Unauthorized access: {url}, from foreign cloud")
    return Requester(name=identity.system_name, is_operator=identity.profile == "OPERATOR")


class IdentityUnverifiable(OperationDependentError):
    """The Authentication system could not be asked, so the caller is not identified, through
    no fault of its own: pull answers 503 (the consumer should retry), every other operation
    401 `Invalid authorization header` (SPEC §2)."""

    def __init__(self, reason: AuthenticationUnavailable) -> None:
        super().__init__(str(reason))
        self.reason = reason

    def resolve(self, view: object, method: str) -> ArrowheadError:
        if served_operation(view, method) == PULL:
            return ExternalServerError(f"Authentication system is not available: {self.reason}")
        return AuthError(INVALID_HEADER)


def _outsourced(request: Request) -> Requester:
    """The Authentication system vouches for the identity token (reference-dynamic §13)."""
    try:
        verified = identity_token_verify_remote(_bearer_credentials(request, "IDENTITY-TOKEN"))
    except AuthenticationUnavailable as error:
        logger.warning("Authentication system is not available: %s", error)
        raise IdentityUnverifiable(error) from error
    if verified is None or not _valid_name(verified.name):
        raise AuthError(INVALID_HEADER)
    return Requester(name=verified.name, is_operator=verified.is_operator)


_POLICIES = {"declared": _declared, "token": _token, "certificate": _certificate,
             "outsourced": _outsourced}


class ArrowheadAuthentication(BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[Requester, None]:
        requester = _POLICIES[settings.AUTHENTICATION_POLICY](request)
        # For whoever runs the request through WSGI: the MQTT interface answers with it as
        # the response's `receiver` (mqtt_api/front_door.py).
        request.META[REQUESTER_ENVIRON_KEY] = requester.name
        return requester, None

    def authenticate_header(self, request: Request) -> str:
        return "Bearer"
