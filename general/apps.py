from django.apps import AppConfig


class GeneralConfig(AppConfig):
    name = "general"
    verbose_name = "General management"
    default_auto_field = "django.db.models.BigAutoField"
