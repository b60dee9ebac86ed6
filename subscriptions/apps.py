from django.apps import AppConfig


class SubscriptionsConfig(AppConfig):
    name = "subscriptions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from store.changes import on_change
        from subscriptions.tasks import enqueue_change_processing

        on_change(enqueue_change_processing)
