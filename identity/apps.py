from django.apps import AppConfig


class IdentityConfig(AppConfig):
    name = "identity"
    verbose_name = "Identities"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from clients.identity import identity_token_source
        from identity import schema  # noqa: F401  (registers the OpenAPI auth extension)
        from identity.outsourced import own_identity_token

        # Our identity token for every call to another system under `outsourced`.
        identity_token_source(own_identity_token)
