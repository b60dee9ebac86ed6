from django.apps import AppConfig


class OrchestrationConfig(AppConfig):
    name = "orchestration"
    default_auto_field = "django.db.models.BigAutoField"
