from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin
from django.db.models import QuerySet
from django.http import HttpRequest

from identity.models import IdentityToken, User
from identity.services import identity_token_revoke_many


@admin.register(User)
class SystemUserAdmin(UserAdmin):
    list_display = ("username", "is_operator", "is_staff", "is_active", "last_login")
    list_filter = ("is_operator", "is_staff", "is_superuser", "is_active", "groups")
    fieldsets = UserAdmin.fieldsets + (("Arrowhead", {"fields": ("is_operator",)}),)


@admin.register(IdentityToken)
class IdentityTokenAdmin(admin.ModelAdmin):
    """Tokens are issued with `manage.py issue_identity_token` (the raw token is shown only
    there); here they are listed and revoked."""

    list_display = ("user", "hint", "description", "created_at", "expires_at", "revoked_at",
                    "usable")
    list_filter = ("revoked_at", "expires_at")
    search_fields = ("user__username", "hint", "description")
    readonly_fields = ("user", "hint", "created_at", "expires_at")
    fields = ("user", "hint", "description", "created_at", "expires_at", "revoked_at")
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.display(boolean=True)
    def usable(self, token: IdentityToken) -> bool:
        return token.is_usable

    @admin.action(description="Revoke selected tokens")
    def revoke(self, request: HttpRequest, queryset: QuerySet[IdentityToken]) -> None:
        count = identity_token_revoke_many(queryset)
        self.message_user(request, f"{count} token(s) revoked.", messages.SUCCESS)
