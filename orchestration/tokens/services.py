"""Authorization tokens (SPEC §5 item 9): pull issues one per result interface whose policy ends
in `TOKEN_AUTH` and per requested operation; providers check them with the verify endpoint.

Only the SHA-256 of a token is stored, so a database dump cannot be replayed against a
provider; the raw value exists once, in the `IssuedToken` handed back to the caller.
"""
import base64
import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from conventions.timestamps import format_utc
from orchestration.models import AuthorizationToken

TokenType = AuthorizationToken.TokenType

# The variants this service issues, and the token type each one yields. The
# RSA_SHA256/512_JSON_WEB_TOKEN_AUTH variants are left out: they need signing keys, which this
# service does not have.
TOKEN_VARIANTS: dict[str, str] = {
    "TIME_LIMITED_TOKEN_AUTH": TokenType.TIME_LIMITED_TOKEN,
    "USAGE_LIMITED_TOKEN_AUTH": TokenType.USAGE_LIMITED_TOKEN,
    "BASE64_SELF_CONTAINED_TOKEN_AUTH": TokenType.SELF_CONTAINED_TOKEN,
}

# Fixed fields of a self-contained token: the cloud is always the local one (no intercloud,
# SPEC §5 item 10) and the target is always a service definition (`targetType: SERVICE_DEF`).
_LOCAL_CLOUD = "LOCAL"
_TARGET_TYPE = "SERVICE_DEF"


@dataclass(frozen=True)
class TokenGrant:
    """One token to issue: who may call whom, for which service definition and operation."""

    variant: str
    consumer: str
    provider: str
    target: str
    scope: str


@dataclass(frozen=True)
class IssuedToken:
    grant: TokenGrant
    token_type: str
    token: str
    expires_at: datetime
    usage_limit: int | None


@dataclass(frozen=True)
class TokenVerification:
    verified: bool
    token: AuthorizationToken | None


NOT_VERIFIED = TokenVerification(verified=False, token=None)


def is_issuable(variant: str) -> bool:
    """Whether pull can attach a token for this interface policy."""
    return variant in TOKEN_VARIANTS


def token_hash(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def _self_contained_token(grant: TokenGrant, expires_at: datetime) -> str:
    """`base64url(LOCAL|<consumer>|<provider>|<target>|<scope>|SERVICE_DEF|<expiresAt>|<nonce>)`
    without padding; `expiresAt` is ISO 8601 UTC with a `Z`, `nonce` a random base64url string.

    The provider can read who the token was issued for without asking, but it is not signed,
    so it still has to be verified here; the nonce makes every issue a different token, as
    two issues within the same microsecond would otherwise collide on the unique hash."""
    payload = "|".join([_LOCAL_CLOUD, grant.consumer, grant.provider, grant.target, grant.scope,
                        _TARGET_TYPE, format_utc(expires_at), secrets.token_urlsafe(16)])
    return base64.urlsafe_b64encode(payload.encode()).decode().rstrip("=")


def _issue_one(grant: TokenGrant, now: datetime) -> tuple[IssuedToken, AuthorizationToken]:
    if not is_issuable(grant.variant):
        raise ValueError(f"Tokens of variant {grant.variant} are not issued")
    token_type = TOKEN_VARIANTS[grant.variant]
    expires_at = now + timedelta(seconds=settings.TOKEN_TTL_SECONDS)
    limit = settings.TOKEN_USAGE_LIMIT if token_type == TokenType.USAGE_LIMITED_TOKEN else None
    raw = (_self_contained_token(grant, expires_at)
           if token_type == TokenType.SELF_CONTAINED_TOKEN else secrets.token_urlsafe(32))
    record = AuthorizationToken(
        token_hash=token_hash(raw), token_type=token_type, variant=grant.variant,
        consumer=grant.consumer, provider=grant.provider, target=grant.target,
        scope=grant.scope, usage_limit=limit, usage_left=limit, expires_at=expires_at,
        created_at=now)
    return IssuedToken(grant, token_type, raw, expires_at, limit), record


def tokens_issue(grants: Sequence[TokenGrant], *, now: datetime | None = None) -> list[IssuedToken]:
    """One token per grant, in the grants' order, in one statement whatever their number.

    Unlike Arrowhead, issuing a grant again does not revoke its previous token: a consumer
    pulling while one of its subscriptions is pushed must be able to use both answers. Every
    token expires after TOKEN_TTL_SECONDS anyway. A grant repeated within the same call gets
    the same token each time.
    Raises ValueError for a variant that `is_issuable` refuses: the caller should not ask."""
    now = now or timezone.now()
    issued: dict[TokenGrant, tuple[IssuedToken, AuthorizationToken]] = {}
    for grant in grants:
        if grant not in issued:
            issued[grant] = _issue_one(grant, now)
    if not issued:
        return []
    AuthorizationToken.objects.bulk_create([record for _, record in issued.values()])
    return [issued[grant][0] for grant in grants]


def token_verify(*, raw: str, provider: str, now: datetime | None = None) -> TokenVerification:
    """Whether `provider` may accept this token now (SPEC §5 item 9); a usage-limited token
    loses one use per successful verification.

    A token verifies only for the provider it was issued for, so a provider cannot spend (or
    probe) the tokens another provider will be shown."""
    record = AuthorizationToken.objects.filter(token_hash=token_hash(raw), provider=provider,
                                               expires_at__gt=now or timezone.now()).first()
    if record is None:
        return NOT_VERIFIED
    if record.token_type == TokenType.USAGE_LIMITED_TOKEN:
        # One use taken by one conditional UPDATE: concurrent verifications serialize on the
        # row and never use a token more than its limit.
        if not (AuthorizationToken.objects.filter(pk=record.pk, usage_left__gt=0)
                .update(usage_left=F("usage_left") - 1)):
            return NOT_VERIFIED
        record.refresh_from_db(fields=["usage_left"])
    return TokenVerification(verified=True, token=record)


def tokens_remove_expired(*, now: datetime | None = None) -> int:
    """Delete the tokens that can no longer verify; how many were deleted."""
    expired = AuthorizationToken.objects.filter(expires_at__lte=now or timezone.now())
    deleted, _ = expired.delete()
    return deleted
