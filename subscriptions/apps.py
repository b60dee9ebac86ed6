from django.apps import AppConfig


class SubscriptionsConfig(AppConfig):
    name = "subscriptions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Every process registers the tasks, which push management's trigger hands its jobs
        # to by name (subscriptions/push_jobs.py); a worker would find them anyway, a web
        # process only imports what it uses.
        from subscriptions import tasks  # noqa: F401

        # The metrics read the live subscriptions through this app's selector (observability
        # imports no app).
        from observability.metrics_state import SUBSCRIPTIONS
        from observability.registry import register_state
        from subscriptions.selectors import subscription_counts_by_protocol

        register_state(SUBSCRIPTIONS, subscription_counts_by_protocol)
