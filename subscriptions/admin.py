from django.contrib import admin, messages
from django.db.models import Exists, OuterRef, QuerySet
from django.http import HttpRequest

from subscriptions.models import EvaluationFlag, Subscription
from subscriptions.services.evaluation import subscriptions_evaluate


class AwaitsEvaluationFilter(admin.SimpleListFilter):
    """Whether the subscription is flagged for evaluation (an `EvaluationFlag` row)."""
    title = "awaits evaluation"
    parameter_name = "awaits_evaluation"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin):
        return (("1", "Yes"), ("0", "No"))

    def queryset(self, request: HttpRequest, queryset: QuerySet[Subscription]):
        if self.value() in ("0", "1"):
            return queryset.filter(evaluation_flag__isnull=self.value() == "0")
        return queryset


@admin.register(Subscription)
class SubscriptionAdmin(admin.ModelAdmin):
    list_display = ("id", "owner", "target", "service_definition", "notify_protocol",
                    "expires_at", "last_pushed_at", "awaits_evaluation")
    list_filter = ("notify_protocol", AwaitsEvaluationFilter)
    search_fields = ("id", "owner", "target", "service_definition")
    readonly_fields = [f.name for f in Subscription._meta.fields]
    actions = ["push_now"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def get_queryset(self, request: HttpRequest) -> QuerySet[Subscription]:
        return super().get_queryset(request).annotate(flagged=Exists(
            EvaluationFlag.objects.filter(subscription=OuterRef("pk"))))

    @admin.display(boolean=True, ordering="flagged", description="Awaits evaluation")
    def awaits_evaluation(self, subscription: Subscription) -> bool:
        return subscription.flagged

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
