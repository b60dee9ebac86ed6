"""System identities and the identity tokens this service issues to them.

A system identity is a Django user whose username is the system's normalized name, so that
management permissions and groups are granted to systems in Django admin like to people.
"""
import uuid

from django.contrib.auth.models import AbstractUser
from django.db import models
from django.utils import timezone


class User(AbstractUser):
    is_operator = models.BooleanField(
        default=False,
        help_text="Operator (sysop) identity under the token policy: may use every management "
        "operation.",
    )


class IdentityTokenQuerySet(models.QuerySet):
    def usable(self) -> "IdentityTokenQuerySet":
        return self.filter(revoked_at__isnull=True, expires_at__gt=timezone.now(),
                           user__is_active=True)


class IdentityToken(models.Model):
    """An identity token; only its SHA-256 is stored, the token itself is shown once."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="identity_tokens")
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    hint = models.CharField(max_length=8, editable=False,
                            help_text="First characters of the token, to recognize it.")
    description = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = IdentityTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.user.username} {self.hint}…"

    @property
    def is_usable(self) -> bool:
        return self.revoked_at is None and self.expires_at > timezone.now()
