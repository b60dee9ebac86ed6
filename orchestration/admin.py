from django.contrib import admin
from django.http import HttpRequest

from api.admin_display import short_time, truncated
from api.admin_filters import name_filter
from conventions import names
from orchestration.models import AuthorizationToken, OrchestrationJob, OrchestrationLock


class ReadOnlyAdmin(admin.ModelAdmin):
    """Written by orchestration only; operators look (and may delete)."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(OrchestrationJob)
class OrchestrationJobAdmin(ReadOnlyAdmin):
    """The history, newest first (docs/history.md). The list fits 1400 px; the subscription
    id and the other times are on each job's page (and the subscription id is searchable)."""

    list_display = ("created", "type", "status", "systems", "service", "results",
                    "message_short")
    # `system`: jobs a system requested or was the target of.
    list_filter = ("status", "type",
                   name_filter("system", names.normalize_system_name, "requester", "target"),
                   name_filter("requester", names.normalize_system_name),
                   name_filter("target", names.normalize_system_name))
    search_fields = ("requester", "target", "service_definition", "subscription_id")
    ordering = ("-created_at", "-id")
    date_hierarchy = "created_at"
    show_full_result_count = False

    @admin.display(description="created", ordering="created_at")
    def created(self, job: OrchestrationJob) -> str:
        return short_time(job.created_at)

    @admin.display(description="requester → target", ordering="requester")
    def systems(self, job: OrchestrationJob) -> str:
        """One name when a system orchestrated for itself (every pull)."""
        if job.requester == job.target:
            return truncated(job.requester, 22)
        return truncated(f"{job.requester} → {job.target}", 22)

    @admin.display(description="service", ordering="service_definition")
    def service(self, job: OrchestrationJob) -> str:
        return truncated(job.service_definition or "*", 16)

    @admin.display(description="results", ordering="result_count")
    def results(self, job: OrchestrationJob) -> int:
        return job.result_count

    @admin.display(description="message")
    def message_short(self, job: OrchestrationJob) -> str:
        return truncated(job.message, 20)


@admin.register(OrchestrationLock)
class OrchestrationLockAdmin(ReadOnlyAdmin):
    """Deleting a lock ends the reservation at once (the feed's triggers record it)."""

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
