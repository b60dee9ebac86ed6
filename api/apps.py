from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "api"
    verbose_name = "API plumbing"

    def ready(self) -> None:
        from api.requests_in_progress import requests_count

        requests_count()  # background work waits for the gaps between requests
