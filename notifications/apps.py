from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    name = "notifications"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Every process registers the send tasks, which the outbox hands deliveries to by
        # name (notifications/handover.py); a worker would find them anyway, a web process
        # only imports what it uses.
        from notifications import tasks  # noqa: F401
