from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.text import Truncator

from notifications.models import NotificationDelivery, NotificationDestination
from notifications.services import deliveries_retry, is_http


@admin.register(NotificationDelivery)
class NotificationDeliveryAdmin(admin.ModelAdmin):
    """The outbox and its attempts. Written by the delivery machinery only; operators look,
    retry, and may delete old rows."""

    list_display = ("created_at", "receiver", "protocol", "sent_to", "status", "attempts",
                    "last_error_short", "next_attempt_at", "delivered_at", "subscription_id")
    list_filter = ("status", "protocol")
    search_fields = ("receiver", "subscription_id")
    date_hierarchy = "created_at"
    show_full_result_count = False
    actions = ("retry_now",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    @admin.display(description="topic or destination")
    def sent_to(self, obj: NotificationDelivery) -> str:
        """MQTT: the topic; HTTP(S): host:port and path."""
        if not is_http(obj.protocol):
            return obj.properties.get("topic", "")
        return f"{obj.destination}{obj.properties.get('path', '')}"

    @admin.display(description="last error")
    def last_error_short(self, obj: NotificationDelivery) -> str:
        return Truncator(obj.last_error).chars(80)

    @admin.action(description="Retry now")
    def retry_now(self, request: HttpRequest, queryset: QuerySet[NotificationDelivery]) -> None:
        count = deliveries_retry(delivery_ids=queryset.values_list("id", flat=True))
        self.message_user(request, f"{count} notification deliveries queued for sending "
                          "(delivered and in-flight ones are left alone).")


@admin.register(NotificationDestination)
class NotificationDestinationAdmin(admin.ModelAdmin):
    """The circuit breaker of each HTTP(S) destination: read-only (the senders keep it); an
    operator may delete a row to close its circuit at once."""

    list_display = ("key", "consecutive_failures", "open_until", "updated_at")
    search_fields = ("key",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False
