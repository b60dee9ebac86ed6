from django.apps import AppConfig


class GeneralConfig(AppConfig):
    name = "general"
    verbose_name = "General management"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from general import log_handler

        log_handler.keep_on_celery_root_logger()
