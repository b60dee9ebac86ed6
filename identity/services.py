import datetime as dt
import hashlib
import secrets

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from identity.models import IdentityToken, User


def hash_token(raw: str) -> str:
    # Tokens are 256-bit random values, so a plain digest is enough (no need to slow down
    # guessing); the digest is what a leaked database would show.
    return hashlib.sha256(raw.encode()).hexdigest()


@transaction.atomic
def identity_token_issue(
    *, system_name: str, operator: bool, ttl_seconds: int, description: str = ""
) -> tuple[str, IdentityToken]:
    """Create the system identity when new, mark it operator when asked, and issue a token.
    Returns (the raw token, its record); the raw token is not stored."""
    user, created = User.objects.get_or_create(username=system_name)
    if created:
        user.set_unusable_password()
    if operator:
        user.is_operator = True
    if created or operator:
        user.save()
    raw = secrets.token_urlsafe(32)
    token = IdentityToken.objects.create(
        user=user,
        token_hash=hash_token(raw),
        hint=raw[:8],
        description=description,
        expires_at=timezone.now() + dt.timedelta(seconds=ttl_seconds),
    )
    return raw, token


def identity_token_revoke_many(tokens: QuerySet[IdentityToken]) -> int:
    return tokens.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
