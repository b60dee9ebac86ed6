from identity.models import IdentityToken, User
from identity.services import hash_token


def identity_token_owner(raw: str) -> User | None:
    """The active identity a usable (known, unexpired, unrevoked) token belongs to."""
    token = (
        IdentityToken.objects.usable()
        .select_related("user")
        .filter(token_hash=hash_token(raw))
        .first()
    )
    return token.user if token else None


def system_identity(name: str) -> User | None:
    """The Django user standing for a system. Staff users are people, never systems: a system
    named like an administrator does not get the administrator's permissions."""
    return User.objects.filter(username=name, is_active=True, is_staff=False).first()
