from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.cache import add_never_cache_headers

from conventions import names
from conventions.exceptions import InvalidParameter
from identity.models import IdentityToken, User
from identity.services import identity_token_issue, identity_token_revoke_many


@admin.register(User)
class SystemUserAdmin(UserAdmin):
    list_display = ("username", "is_operator", "is_staff", "is_active", "last_login")
    list_filter = ("is_operator", "is_staff", "is_superuser", "is_active", "groups")
    fieldsets = UserAdmin.fieldsets + (("Arrowhead", {"fields": ("is_operator",)}),)


class IdentityTokenIssueForm(forms.Form):
    """The options of `manage.py issue_identity_token`, with its checks."""

    system_name = forms.CharField(
        max_length=63, help_text="The system the token identifies, e.g. TemperatureConsumer; "
        "normalized as in the API. Its identity is created when new.")
    operator = forms.BooleanField(
        required=False, help_text="Mark the identity as an operator (sysop): it may use every "
        "management operation. Leaving it unticked does not take the mark away.")
    ttl_seconds = forms.IntegerField(
        label="Valid for (seconds)", min_value=1, max_value=100 * 365 * 24 * 3600,
        initial=lambda: settings.IDENTITY_TOKEN_TTL_SECONDS,
        error_messages={"min_value": "The validity must be a positive number of seconds",
                        "max_value": "The validity must be at most 100 years"},
        help_text="How long the token is accepted; default IDENTITY_TOKEN_TTL_SECONDS.")
    description = forms.CharField(
        max_length=200, required=False,
        help_text="What the token is for, e.g. the host it is installed on.")

    def clean_system_name(self) -> str:
        try:
            return names.system_name(self.cleaned_data["system_name"])
        except InvalidParameter as exc:
            raise forms.ValidationError(exc.message) from exc


@admin.register(IdentityToken)
class IdentityTokenAdmin(admin.ModelAdmin):
    """Tokens are issued here (the add page) or with `manage.py issue_identity_token`, through
    the same service; the raw token is shown once, on the answer to the issuing request, and
    never stored. Here they are also listed and revoked."""

    list_display = ("user", "hint", "description", "created_at", "expires_at", "revoked_at",
                    "usable")
    list_filter = ("revoked_at", "expires_at")
    search_fields = ("user__username", "hint", "description")
    readonly_fields = ("user", "hint", "created_at", "expires_at")
    fields = ("user", "hint", "description", "created_at", "expires_at", "revoked_at")
    actions = ["revoke"]

    def get_form(self, request: HttpRequest, obj=None, change=False, **kwargs):
        kwargs.setdefault("help_texts", {
            "description": "What the token is for, e.g. the host it is installed on.",
            "revoked_at": "Set to revoke the token (or use the Revoke action); empty: not "
                          "revoked.",
        })
        return super().get_form(request, obj, change, **kwargs)

    def add_view(self, request: HttpRequest, form_url: str = "",
                 extra_context: dict | None = None) -> HttpResponse:
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = IdentityTokenIssueForm(request.POST if request.method == "POST" else None)
        context = {**self.admin_site.each_context(request), "opts": self.opts,
                   "title": "Issue an identity token", "form": form,
                   **(extra_context or {})}
        if not form.is_valid():
            return TemplateResponse(request, "admin/identity/identitytoken/issue.html", context)
        raw, token = identity_token_issue(
            system_name=form.cleaned_data["system_name"],
            operator=form.cleaned_data["operator"],
            ttl_seconds=form.cleaned_data["ttl_seconds"],
            description=form.cleaned_data["description"])
        self.log_addition(request, token, [{"added": {}}])
        # The answer is the only place the token ever appears: not kept by the browser cache.
        response = TemplateResponse(request, "admin/identity/identitytoken/issued.html",
                                    {**context, "title": "Identity token issued",
                                     "token": token, "raw": raw})
        add_never_cache_headers(response)
        return response

    @admin.display(boolean=True)
    def usable(self, token: IdentityToken) -> bool:
        return token.is_usable

    @admin.action(description="Revoke selected tokens")
    def revoke(self, request: HttpRequest, queryset: QuerySet[IdentityToken]) -> None:
        count = identity_token_revoke_many(queryset)
        self.message_user(request, f"{count} token(s) revoked.", messages.SUCCESS)
