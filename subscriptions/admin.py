from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from subscriptions.models import Subscription
from subscriptions.services.evaluation import subscriptions_evaluate


@admin.register(Subscription)
class SubscriptionAdmin(admin.ModelAdmin):
    list_display = ("id", "owner", "target", "service_definition", "notify_protocol",
                    "expires_at", "last_pushed_at", "needs_evaluation")
    list_filter = ("notify_protocol", "needs_evaluation")
    search_fields = ("id", "owner", "target", "service_definition")
    readonly_fields = [f.name for f in Subscription._meta.fields]
    actions = ["push_now"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description="Push the current result now")
    def push_now(self, request: HttpRequest, queryset: QuerySet[Subscription]) -> None:
        """A subscription whose orchestration needs a system that fails (the ServiceRegistry,
        ConsumerAuthorization, the Blacklist) is not pushed and is reported; the others are."""
        evaluation = subscriptions_evaluate(list(queryset.values_list("pk", flat=True)),
                                            force=True)
        failures = [f"{pk}: {getattr(error, 'message', error)}"
                    for pk, error in evaluation.failed.items()]
        self.message_user(request, f"{evaluation.pushed} notification(s) queued.",
                          messages.SUCCESS)
        if failures:
            self.message_user(request, f"{len(failures)} subscription(s) not pushed: "
                              + "; ".join(failures), messages.ERROR)
