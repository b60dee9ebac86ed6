from django.apps import AppConfig


class ServiceRegistryConfig(AppConfig):
    name = "serviceregistry"
    verbose_name = "ServiceRegistry"
    default_auto_field = "django.db.models.BigAutoField"
