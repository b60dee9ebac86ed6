from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.text import Truncator

from api.admin_display import short_time, truncated
from notifications.handover import is_http
from notifications.models import NotificationDelivery, NotificationDestination
from notifications.outbox import deliveries_retry


@admin.register(NotificationDelivery)
class NotificationDeliveryAdmin(admin.ModelAdmin):
    """The outbox and its attempts. Written by the delivery machinery only; operators look,
    retry, and may delete old rows. The list shows who gets it where, within 1400 px (the
    protocol is a filter; the subscription id and the other times are on each row's page)."""

    list_display = ("created", "consumer", "sent_to", "status", "attempts", "last_error_short")
    list_filter = ("status", "protocol")
    search_fields = ("receiver", "subscription_id")
    date_hierarchy = "created_at"
    show_full_result_count = False
    actions = ("retry_now",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    @admin.display(description="created", ordering="created_at")
    def created(self, obj: NotificationDelivery) -> str:
        return short_time(obj.created_at, "%Y-%m-%d %H:%M")

    @admin.display(description="consumer", ordering="receiver")
    def consumer(self, obj: NotificationDelivery) -> str:
        return truncated(obj.receiver, 16)

    @admin.display(description="topic or destination")
    def sent_to(self, obj: NotificationDelivery) -> str:
        """MQTT: the topic; HTTP(S): host:port and path."""
        if not is_http(obj.protocol):
            return truncated(obj.properties.get("topic", ""), 22)
        return truncated(f"{obj.destination}{obj.properties.get('path', '')}", 22)

    @admin.display(description="last error")
    def last_error_short(self, obj: NotificationDelivery) -> str:
        # A long error (a peer's whole answer) is on the row's page; the hover shows its start.
        return truncated(Truncator(obj.last_error).chars(200), 16)

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
