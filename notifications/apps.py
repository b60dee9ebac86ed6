from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    name = "notifications"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Every process registers the send tasks, which the outbox hands deliveries to by
        # name (notifications/handover.py); a worker would find them anyway, a web process
        # only imports what it uses.
        from notifications import tasks  # noqa: F401

        self._observed()

    def _observed(self) -> None:
        """What observability reads of this app (it imports no app): the outbox backlog for
        the metrics, the MQTT broker for readiness when one is configured."""
        from django.conf import settings

        from notifications.selectors import delivery_backlog
        from notifications.mqtt_broker import mqtt_broker_check
        from observability.metrics_state import NOTIFICATION_BACKLOG
        from observability.registry import register_health_check, register_state

        register_state(NOTIFICATION_BACKLOG, delivery_backlog)
        register_health_check("mqttBroker", mqtt_broker_check,
                              enabled=lambda: bool(settings.MQTT_BROKER_URL))
