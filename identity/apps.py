from django.apps import AppConfig


class IdentityConfig(AppConfig):
    name = "identity"
    verbose_name = "Identities"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from identity import schema  # noqa: F401  (registers the OpenAPI auth extension)
