from django.contrib import admin
from django.http import HttpRequest

from general.models import LogEntry


@admin.register(LogEntry)
class LogEntryAdmin(admin.ModelAdmin):
    """Written by the log handler only; operators read (and may delete)."""

    list_display = ("entry_date", "severity", "logger", "message")
    list_filter = ("severity",)
    search_fields = ("logger", "message")
    ordering = ("-entry_date", "-id")
    date_hierarchy = "entry_date"
    show_full_result_count = False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False
