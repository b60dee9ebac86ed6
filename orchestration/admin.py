from django.contrib import admin
from django.http import HttpRequest

from orchestration.models import AuthorizationToken, OrchestrationJob, OrchestrationLock


class ReadOnlyAdmin(admin.ModelAdmin):
    """Written by orchestration only; operators look (and may delete)."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(OrchestrationJob)
class OrchestrationJobAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "type", "status", "requester", "service_definition",
                    "result_count", "message")
    list_filter = ("type", "status")
    search_fields = ("requester", "service_definition")
    date_hierarchy = "created_at"
    show_full_result_count = False


@admin.register(OrchestrationLock)
class OrchestrationLockAdmin(ReadOnlyAdmin):
    """Deleting a lock ends the reservation at once."""

    list_display = ("service_instance_id", "owner", "expires_at", "created_at")
    search_fields = ("service_instance_id", "owner")


@admin.register(AuthorizationToken)
class AuthorizationTokenAdmin(ReadOnlyAdmin):
    """Only hashes are stored; deleting a token revokes it."""

    list_display = ("token_type", "consumer", "provider", "target", "scope", "usage_left",
                    "expires_at")
    list_filter = ("token_type",)
    search_fields = ("consumer", "provider", "target")
    exclude = ("token_hash",)
